#include "packet/announcer.h"

#include <algorithm>

#include "packet/arp.h"
#include "packet/claims.h"
#include "packet/ndp.h"
#include "packet/packet_socket.h"

namespace pylon::packet {

Status AnnouncerImpl::Announce(const Interface& iface, const net::IpAddress& address) {
  if (address.is_v4()) {
    auto garp = GratuitousArpRequest(iface.mac, address);
    if (!garp) return tl::unexpected(garp.error());
    auto sock = PacketSocket::Open(iface.ifindex, kEtherTypeArp);
    if (!sock) return tl::unexpected(sock.error());
    auto bytes = EncodeArp(*garp);
    if (auto st = sock->Send(bytes, MacAddress::Broadcast()); !st) return st;
    if (arp_form_ == ArpForm::kRequestAndReply) {
      auto reply = EncodeArp(*GratuitousArpReply(iface.mac, address));
      return sock->Send(reply, MacAddress::Broadcast());
    }
    return Ok();
  }
  auto na = UnsolicitedNa(iface.mac, address);
  if (!na) return tl::unexpected(na.error());
  auto sock = PacketSocket::Open(iface.ifindex, kEtherTypeIpv6);
  if (!sock) return tl::unexpected(sock.error());
  NdpMessage m = *na;
  return sock->Send(EncodeNdp(m), DestinationMac(m));
}

Result<std::optional<MacAddress>> AnnouncerImpl::Probe(const Interface& iface,
                                                       const net::IpAddress& address,
                                                       const ProbeOptions& options) {
  const bool v4 = address.is_v4();
  std::vector<MacAddress> ignore = options.ignore;
  ignore.push_back(iface.mac);
  // Open (and bind) before sending so that an immediate answer is not missed.
  auto sock = PacketSocket::Open(iface.ifindex, v4 ? kEtherTypeArp : kEtherTypeIpv6);
  if (!sock) return tl::unexpected(sock.error());
  std::vector<std::uint8_t> bytes;
  MacAddress destination = MacAddress::Broadcast();
  if (v4) {
    auto probe = ArpProbe(iface.mac, address);
    if (!probe) return tl::unexpected(probe.error());
    auto a = EncodeArp(*probe);
    bytes.assign(a.begin(), a.end());
  } else {
    if (auto st = sock->AttachNeighborDiscoveryFilter(); !st) return tl::unexpected(st.error());
    auto ns = DadSolicitation(address);
    if (!ns) return tl::unexpected(ns.error());
    NdpMessage m = *ns;
    bytes = EncodeNdp(m);
    destination = DestinationMac(m);
  }
  const int count = std::max(1, options.count);
  const SteadyTime start = clock_.Now();
  for (int i = 0; i < count; ++i) {
    if (auto st = sock->Send(bytes, destination); !st) return tl::unexpected(st.error());
    const SteadyTime until = start + options.interval * (i + 1);
    while (true) {
      auto frame = sock->Receive(clock_, until);
      if (!frame) return tl::unexpected(frame.error());
      if (!*frame) break;  // this probe's wait is over
      const ReceivedFrame& f = **frame;
      std::optional<MacAddress> who;
      if (v4) {
        if (auto arp = DecodeArp(f.payload)) who = ProbeAnswerArp(*arp, address, ignore);
      } else if (auto ndp = DecodeNdp(f.payload)) {
        who = ProbeAnswerNdp(*ndp, f.source, address, ignore);
      }
      if (who) return who;
    }
  }
  return std::optional<MacAddress>();
}

}  // namespace pylon::packet
