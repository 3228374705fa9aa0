#include "packet/claims.h"

#include <algorithm>
#include <variant>

namespace pylon::packet {

namespace {

bool Ignored(const MacAddress& mac, std::span<const MacAddress> ignore) {
  return std::find(ignore.begin(), ignore.end(), mac) != ignore.end();
}

bool Unspecified(const net::IpAddress& a) { return a.value() == 0; }

}  // namespace

std::optional<MacAddress> ProbeAnswerArp(const ArpPacket& r, const net::IpAddress& address,
                                         std::span<const MacAddress> ignore) {
  if (Ignored(r.sender_mac, ignore)) return std::nullopt;
  if (r.sender_ip == address) return r.sender_mac;
  if (r.op == kArpRequest && Unspecified(r.sender_ip) && r.target_ip == address) {
    return r.sender_mac;
  }
  return std::nullopt;
}

std::optional<MacAddress> ProbeAnswerNdp(const NdpMessage& m, const MacAddress& frame_source,
                                         const net::IpAddress& address,
                                         std::span<const MacAddress> ignore) {
  if (!IsValidNdp(m)) return std::nullopt;
  std::optional<MacAddress> who;
  if (const auto* na = std::get_if<NeighborAdvertisement>(&m)) {
    if (na->target == address) who = na->target_lladdr.value_or(frame_source);
  } else {
    const auto& ns = std::get<NeighborSolicitation>(m);
    if (ns.target == address && Unspecified(ns.source)) who = frame_source;
  }
  if (!who || Ignored(*who, ignore) || Ignored(frame_source, ignore)) return std::nullopt;
  return who;
}

std::optional<Claim> ClaimInArp(const ArpPacket& r) {
  if (Unspecified(r.sender_ip) || r.sender_mac.is_zero() || r.sender_mac.is_multicast()) {
    return std::nullopt;
  }
  return Claim{r.sender_ip, r.sender_mac};
}

std::optional<Claim> ClaimInNdp(const NdpMessage& m, const MacAddress& frame_source) {
  if (!IsValidNdp(m)) return std::nullopt;
  if (const auto* na = std::get_if<NeighborAdvertisement>(&m)) {
    return Claim{na->target, na->target_lladdr.value_or(frame_source)};
  }
  const auto& ns = std::get<NeighborSolicitation>(m);
  if (Unspecified(ns.source)) return std::nullopt;
  return Claim{ns.source, ns.source_lladdr.value_or(frame_source)};
}

}  // namespace pylon::packet
