#include "lab/address_watch.h"

#include <algorithm>
#include <optional>

#include "lab/neighbor_probe.h"
#include "lab/netns.h"

namespace pylon::lab {

Result<std::unique_ptr<AddressWatch>> AddressWatch::Start(const Lab& lab, const std::string& ip,
                                                          int http_port, int echo_port,
                                                          int streams) {
  const auto target = net::IpAddress::Parse(ip);
  if (!target) return Fail(target.error());
  std::unique_ptr<AddressWatch> w(new AddressWatch());
  const std::string netns = lab.topology().ClientNetns();
  if (streams > 0) {
    auto flows = InNetns(netns, [&] {
      return StreamSet::Open(ip, echo_port, streams, std::chrono::milliseconds(100));
    });
    if (!flows) return Fail(flows.error());
    if (!*flows) return Fail(flows->error());
    w->flows_ = std::move(**flows);
  }
  AddressWatch* self = w.get();
  w->prober_ = std::thread([self, netns, ip, http_port] {
    (void)InNetns(netns, [&] {
      auto samples =
          ProbeLoop(ip, http_port, std::chrono::milliseconds(10), std::chrono::milliseconds(1000),
                    std::chrono::hours(24), &self->stop_);
      self->counts_.requests = static_cast<int>(samples.size());
      for (const auto& s : samples) self->counts_.failed += s.ok ? 0 : 1;
      return 0;
    });
  });
  w->neighbours_ = std::thread([self, netns, target = *target] {
    auto run = InNetns(netns, [&]() -> Status {
      const auto source = net::IpAddress::Parse(target.is_v4() ? kObserverIpv4 : kObserverIpv6);
      if (!source) return Fail(source.error());
      auto prober = NeighborProber::Open("eth0", *source, kObserverMac);
      if (!prober) return Fail(prober.error());
      std::optional<packet::MacAddress> last;
      AddressCounts& c = self->counts_;
      while (!self->stop_.load()) {
        auto macs = prober->Ask(target, std::chrono::milliseconds(20));
        if (!macs) continue;
        ++c.rounds;
        if (macs->empty()) ++c.silent_rounds;
        if (macs->size() > 1) ++c.double_answers;
        for (const auto& m : *macs) {
          if (std::find(c.macs.begin(), c.macs.end(), m.ToString()) == c.macs.end()) {
            c.macs.push_back(m.ToString());
          }
        }
        if (macs->size() == 1) {
          if (last && *last != macs->front()) ++c.moves;
          last = macs->front();
        }
      }
      return Ok();
    });
    if (!run || !*run) self->counts_.rounds = -1;  // the watcher could not run
  });
  return w;
}

AddressCounts AddressWatch::Stop() {
  stop_ = true;
  if (prober_.joinable()) prober_.join();
  if (neighbours_.joinable()) neighbours_.join();
  if (flows_) {
    counts_.streams = flows_->Stop();
    flows_.reset();
  }
  return counts_;
}

AddressWatch::~AddressWatch() { (void)Stop(); }

}  // namespace pylon::lab
