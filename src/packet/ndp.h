// IPv6 Neighbor Discovery messages (RFC 4861) for announcing and duplicate detection. Encoders
// produce the whole IPv6 packet (40-byte header + ICMPv6) that follows the Ethernet header: the
// sender uses SOCK_DGRAM packet sockets with EtherType 0x86dd, and the kernel writes the Ethernet
// header from the destination MAC given to sendto (Ipv6MulticastMac of the IPv6 destination).
// The ICMPv6 checksum covers the RFC 8200 §8.1 pseudo-header. Pure.
//
// Source address of an unsolicited NA (RFC 4861 §7.2.6 points to §4.4 / §7.2.4: "an address
// assigned to the interface"): Pylon uses the announced address itself by default. It is on the
// interface before the announcement is sent (added with NODAD, so never tentative), it does not
// depend on a usable link-local address (MetalLB broke on dadfailed link-locals, #1680), and it is
// what the Linux kernel's own unsolicited NA (ndisc_send_unsol_na) uses. A link-local source can
// be given instead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "common/result.h"
#include "net/ip.h"
#include "packet/mac.h"

namespace pylon::packet {

inline constexpr std::uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr std::uint8_t kIcmpv6NextHeader = 58;
inline constexpr std::uint8_t kNeighborSolicitation = 135;
inline constexpr std::uint8_t kNeighborAdvertisement = 136;
inline constexpr std::uint8_t kNdpHopLimit = 255;  // receivers drop anything else (§7.1)

struct NeighborAdvertisement {
  net::IpAddress source;
  net::IpAddress destination;
  std::uint8_t hop_limit = kNdpHopLimit;
  bool router = false;
  bool solicited = false;
  bool override_flag = false;
  net::IpAddress target;
  std::optional<MacAddress> target_lladdr;  // option type 2
  friend bool operator==(const NeighborAdvertisement&, const NeighborAdvertisement&) = default;
};

struct NeighborSolicitation {
  net::IpAddress source;  // :: for DAD
  net::IpAddress destination;
  std::uint8_t hop_limit = kNdpHopLimit;
  net::IpAddress target;
  std::optional<MacAddress> source_lladdr;  // option type 1; must be absent when source is ::
  friend bool operator==(const NeighborSolicitation&, const NeighborSolicitation&) = default;
};

using NdpMessage = std::variant<NeighborAdvertisement, NeighborSolicitation>;

// The ICMPv6 checksum of `icmp` (its checksum field taken as zero) with the pseudo-header
// {src, dst, upper-layer length, next header 58}.
std::uint16_t Icmpv6Checksum(const net::IpAddress& src, const net::IpAddress& dst,
                             std::span<const std::uint8_t> icmp);

std::vector<std::uint8_t> EncodeNdp(const NdpMessage& m);
// Parses an IPv6 packet carrying an NA or NS. Fails on: not IPv6, next header not ICMPv6 (no
// extension headers are accepted, as RFC 4861 ND never uses them on the wire we care about),
// truncated payload, wrong checksum, other ICMPv6 types, code != 0, malformed options.
// The hop limit is reported, not enforced (see IsValidNdp).
Result<NdpMessage> DecodeNdp(std::span<const std::uint8_t> packet);
// RFC 4861 §7.1 receive checks: hop limit 255; for NA, a multicast destination needs S=0.
bool IsValidNdp(const NdpMessage& m);

// RFC 4861 §7.2.6 unsolicited NA for `address`: S=0, O=1, R=0, target = `address`, Target
// Link-Layer Address = `mac`, to ff02::1, hop limit 255, source = `source` or `address`.
Result<NeighborAdvertisement> UnsolicitedNa(const MacAddress& mac, const net::IpAddress& address,
                                            std::optional<net::IpAddress> source = std::nullopt);
// RFC 4862 §5.4.2 DAD probe: source ::, destination the solicited-node group of `address`, no
// source link-layer option.
Result<NeighborSolicitation> DadSolicitation(const net::IpAddress& address);

// The destination MAC for a multicast IPv6 destination (33:33:...).
MacAddress DestinationMac(const NdpMessage& m);

}  // namespace pylon::packet
