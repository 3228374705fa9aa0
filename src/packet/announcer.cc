#include "packet/announcer.h"

#include <algorithm>

#include "packet/arp.h"
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

Result<std::optional<MacAddress>> AnnouncerImpl::ProbeOwner(const Interface& iface,
                                                            const net::IpAddress& address,
                                                            std::chrono::milliseconds timeout) {
  const bool v4 = address.is_v4();
  // Open (and bind) before sending so that an immediate answer is not missed.
  auto sock = PacketSocket::Open(iface.ifindex, v4 ? kEtherTypeArp : kEtherTypeIpv6);
  if (!sock) return tl::unexpected(sock.error());
  if (v4) {
    auto probe = ArpProbe(iface.mac, address);
    if (!probe) return tl::unexpected(probe.error());
    auto bytes = EncodeArp(*probe);
    if (auto st = sock->Send(bytes, MacAddress::Broadcast()); !st)
      return tl::unexpected(st.error());
  } else {
    auto ns = DadSolicitation(address);
    if (!ns) return tl::unexpected(ns.error());
    NdpMessage m = *ns;
    if (auto st = sock->Send(EncodeNdp(m), DestinationMac(m)); !st)
      return tl::unexpected(st.error());
  }
  const SteadyTime deadline = clock_.Now() + timeout;
  while (true) {
    auto frame = sock->Receive(clock_, deadline);
    if (!frame) return tl::unexpected(frame.error());
    if (!*frame) return std::optional<MacAddress>();
    const ReceivedFrame& f = **frame;
    if (v4) {
      auto arp = DecodeArp(f.payload);
      if (!arp) continue;
      if (auto owner = ArpConflict(*arp, address, iface.mac)) return owner;
      continue;
    }
    auto ndp = DecodeNdp(f.payload);
    if (!ndp || !IsValidNdp(*ndp)) continue;
    if (const auto* na = std::get_if<NeighborAdvertisement>(&*ndp)) {
      if (na->target == address && f.source != iface.mac) {
        return std::optional<MacAddress>(na->target_lladdr.value_or(f.source));
      }
    }
  }
}

Status FakeAnnouncer::Announce(const Interface& iface, const net::IpAddress& address) {
  if (fail_next_) {
    Error e = *fail_next_;
    fail_next_.reset();
    return tl::unexpected(std::move(e));
  }
  sent_.push_back({iface, address});
  return Ok();
}

Result<std::optional<MacAddress>> FakeAnnouncer::ProbeOwner(const Interface& iface,
                                                            const net::IpAddress& address,
                                                            std::chrono::milliseconds) {
  if (fail_next_) {
    Error e = *fail_next_;
    fail_next_.reset();
    return tl::unexpected(std::move(e));
  }
  probes_.push_back({iface, address});
  for (const auto& [a, mac] : owners_) {
    if (a == address) return std::optional<MacAddress>(mac);
  }
  return std::optional<MacAddress>();
}

void FakeAnnouncer::SetOwner(const net::IpAddress& address, std::optional<MacAddress> owner) {
  std::erase_if(owners_, [&](const auto& p) { return p.first == address; });
  if (owner) owners_.emplace_back(address, *owner);
}

}  // namespace pylon::packet
