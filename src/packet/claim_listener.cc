#include "packet/claim_listener.h"

#include <poll.h>

#include <cerrno>

#include "packet/arp.h"
#include "packet/ndp.h"

namespace pylon::packet {

Result<ClaimListener> ClaimListener::Open(int ifindex) {
  auto arp = PacketSocket::Open(ifindex, kEtherTypeArp);
  if (!arp) return Fail(arp.error().Wrap("claim listener (ARP)"));
  auto v6 = PacketSocket::Open(ifindex, kEtherTypeIpv6);
  if (!v6) return Fail(v6.error().Wrap("claim listener (IPv6)"));
  if (auto st = v6->AttachNeighborDiscoveryFilter(); !st) {
    return Fail(st.error().Wrap("claim listener"));
  }
  return ClaimListener(ifindex, std::move(*arp), std::move(*v6));
}

Result<std::vector<Claim>> ClaimListener::Poll(const Clock& clock, SteadyTime deadline) {
  std::vector<Claim> out;
  const SteadyTime now = clock.Now();
  if (deadline > now) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    pollfd fds[2] = {{arp_.fd(), POLLIN, 0}, {ipv6_.fd(), POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      return FailErrno(errno, "claim listener poll");
    }
  }
  // Drain both sockets without waiting (a deadline in the past).
  const SteadyTime past = clock.Now() - std::chrono::seconds(1);
  for (int i = 0; i < 1024; ++i) {
    auto frame = arp_.Receive(clock, past);
    if (!frame) return Fail(frame.error());
    if (!*frame) break;
    if (auto arp = DecodeArp((*frame)->payload)) {
      if (auto c = ClaimInArp(*arp)) out.push_back(*c);
    }
  }
  for (int i = 0; i < 1024; ++i) {
    auto frame = ipv6_.Receive(clock, past);
    if (!frame) return Fail(frame.error());
    if (!*frame) break;
    if (auto ndp = DecodeNdp((*frame)->payload)) {
      if (auto c = ClaimInNdp(*ndp, (*frame)->source)) out.push_back(*c);
    }
  }
  return out;
}

}  // namespace pylon::packet
