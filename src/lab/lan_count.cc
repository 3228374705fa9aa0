#include "lab/lan_count.h"

#include <net/if.h>

#include <variant>

#include "common/clock.h"
#include "lab/netns.h"
#include "packet/arp.h"
#include "packet/ndp.h"
#include "packet/packet_socket.h"

namespace pylon::lab {

LanCounter::LanCounter(std::string netns) {
  thread_ = std::thread([this, netns] { Run(netns); });
}

LanCounter::~LanCounter() {
  stop_ = true;
  thread_.join();
}

LanCounts LanCounter::counts() const {
  MutexLock lock(mu_);
  return counts_;
}

std::string LanCounter::error() const {
  MutexLock lock(mu_);
  return error_;
}

void LanCounter::Run(const std::string& netns) {
  auto r = InNetns(netns, [this]() -> Status {
    const unsigned ifindex = if_nametoindex("eth0");
    if (ifindex == 0) return FailErrno(errno, "if_nametoindex eth0");
    auto arp = packet::PacketSocket::Open(static_cast<int>(ifindex), packet::kEtherTypeArp);
    if (!arp) return Fail(arp.error());
    auto v6 = packet::PacketSocket::Open(static_cast<int>(ifindex), packet::kEtherTypeIpv6);
    if (!v6) return Fail(v6.error());
    if (auto s = v6->AttachNeighborDiscoveryFilter(); !s) return s;
    const Clock& clock = SystemClock::Instance();
    while (!stop_) {
      for (auto* sock : {&*arp, &*v6}) {
        auto frame = sock->Receive(clock, clock.Now() + std::chrono::milliseconds(10));
        if (!frame) return Fail(frame.error());
        if (!*frame) continue;
        MutexLock lock(mu_);
        if (sock == &*arp) {
          auto p = packet::DecodeArp((*frame)->payload);
          if (!p) continue;
          ++counts_.arp;
          if (p->sender_ip.is_v4() && p->sender_ip.value() == 0) ++counts_.arp_probes;
        } else {
          auto m = packet::DecodeNdp((*frame)->payload);
          if (!m) continue;
          ++counts_.nd;
          if (const auto* ns = std::get_if<packet::NeighborSolicitation>(&*m)) {
            if (ns->source.value() == 0) ++counts_.dad_ns;
          }
        }
      }
    }
    return Ok();
  });
  MutexLock lock(mu_);
  if (!r) {
    error_ = r.error().message();
  } else if (!*r) {
    error_ = r->error().message();
  }
}

}  // namespace pylon::lab
