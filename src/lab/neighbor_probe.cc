#include "lab/neighbor_probe.h"

#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <variant>

#include "lab/netns.h"
#include "packet/arp.h"
#include "packet/ndp.h"

namespace pylon::lab {
namespace {

void SortUnique(std::vector<packet::MacAddress>* macs) {
  std::sort(macs->begin(), macs->end());
  macs->erase(std::unique(macs->begin(), macs->end()), macs->end());
}

}  // namespace

Result<NeighborProber> NeighborProber::Open(const std::string& ifname, const net::IpAddress& source,
                                            std::optional<packet::MacAddress> as_mac) {
  const unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) return FailErrno(errno, "if_nametoindex " + ifname);
  auto mac = as_mac ? Result<packet::MacAddress>(*as_mac) : packet::InterfaceMac(ifname);
  if (!mac) return Fail(mac.error());
  const bool v4 = source.is_v4();
  auto sock = packet::PacketSocket::Open(static_cast<int>(ifindex),
                                         v4 ? packet::kEtherTypeArp : packet::kEtherTypeIpv6);
  if (!sock) return Fail(sock.error());
  if (!v4) {
    if (auto s = sock->AttachNeighborDiscoveryFilter(); !s) return Fail(s.error());
  }
  return NeighborProber(std::move(*sock), *mac, source);
}

Result<std::vector<packet::MacAddress>> NeighborProber::Ask(const net::IpAddress& target,
                                                            std::chrono::milliseconds listen) {
  if (target.family() != source_.family()) {
    return Fail(ErrorCode::kInvalidArgument,
                "neighbor probe: " + target.ToString() + " is not of the family of the socket");
  }
  const Clock& clock = SystemClock::Instance();
  // Late answers to an earlier request would be taken for answers to this one.
  while (true) {
    auto stale = socket_.Receive(clock, clock.Now());
    if (!stale) return Fail(stale.error());
    if (!*stale) break;
  }
  if (target.is_v4()) {
    packet::ArpPacket req;
    req.op = packet::kArpRequest;
    req.sender_mac = mac_;
    req.sender_ip = source_;
    req.target_ip = target;
    auto bytes = packet::EncodeArp(req);
    if (auto s = socket_.Send(bytes, packet::MacAddress::Broadcast()); !s) return Fail(s.error());
  } else {
    packet::NeighborSolicitation ns;
    ns.source = source_;
    ns.destination = packet::SolicitedNodeAddress(target);
    ns.target = target;
    ns.source_lladdr = mac_;
    const packet::NdpMessage msg = ns;
    auto bytes = packet::EncodeNdp(msg);
    if (auto s = socket_.Send(bytes, packet::DestinationMac(msg)); !s) return Fail(s.error());
  }
  std::vector<packet::MacAddress> out;
  const SteadyTime deadline = clock.Now() + listen;
  while (true) {
    auto frame = socket_.Receive(clock, deadline);
    if (!frame) return Fail(frame.error());
    if (!*frame) break;
    const auto& payload = (*frame)->payload;
    if (target.is_v4()) {
      auto arp = packet::DecodeArp(payload);
      if (arp && arp->op == packet::kArpReply && arp->sender_ip == target &&
          arp->target_ip == source_) {
        out.push_back((*frame)->source);
      }
    } else {
      auto nd = packet::DecodeNdp(payload);
      if (!nd) continue;
      const auto* na = std::get_if<packet::NeighborAdvertisement>(&*nd);
      if (na != nullptr && na->solicited && na->target == target && packet::IsValidNdp(*nd)) {
        out.push_back((*frame)->source);
      }
    }
  }
  SortUnique(&out);
  return out;
}

Result<packet::MacAddress> InterfaceMacIn(const std::string& netns, const std::string& ifname) {
  auto r = InNetns(netns, [&] { return packet::InterfaceMac(ifname); });
  if (!r) return Fail(r.error());
  return *r;
}

ExpiryVerdict AnalyzeExpiry(const std::vector<AnswerSample>& samples,
                            const packet::MacAddress& dead, double confirm_ms) {
  ExpiryVerdict v;
  if (samples.empty()) return v;
  // The last request `dead` answered; the final stretch starts after it.
  std::size_t first_silent = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& m = samples[i].macs;
    const bool by_dead = std::find(m.begin(), m.end(), dead) != m.end();
    if (by_dead) {
      v.dead_answered = true;
      first_silent = i + 1;
    }
    if (v.other_ms < 0 &&
        std::any_of(m.begin(), m.end(), [&](const auto& x) { return x != dead; })) {
      v.other_ms = samples[i].t_ms;
    }
  }
  if (first_silent == samples.size()) return v;
  v.silent_ms = samples[first_silent].t_ms;
  v.confirmed = samples.back().t_ms - v.silent_ms >= confirm_ms;
  for (std::size_t i = first_silent; i < samples.size(); ++i) {
    v.after.insert(v.after.end(), samples[i].macs.begin(), samples[i].macs.end());
  }
  SortUnique(&v.after);
  return v;
}

Result<std::vector<AnswerSample>> WatchAnswers(const WatchOptions& o, SteadyTime t0,
                                               const std::atomic<bool>* stop) {
  auto prober = NeighborProber::Open(o.ifname, o.source, o.mac);
  if (!prober) return Fail(prober.error());
  std::vector<AnswerSample> samples;
  auto since = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  auto next = std::chrono::steady_clock::now();
  while (stop == nullptr || !stop->load()) {
    AnswerSample s;
    s.t_ms = since();
    auto macs = prober->Ask(o.target, o.listen);
    if (!macs) return Fail(macs.error());
    s.macs = std::move(*macs);
    samples.push_back(std::move(s));
    auto v = AnalyzeExpiry(samples, o.dead, static_cast<double>(o.confirm.count()));
    if (v.confirmed && !v.after.empty()) break;
    if (since() >= static_cast<double>(o.window.count())) break;
    next += o.interval;
    std::this_thread::sleep_until(next);
    if (std::chrono::steady_clock::now() > next) next = std::chrono::steady_clock::now();
  }
  return samples;
}

}  // namespace pylon::lab
