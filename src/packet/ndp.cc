#include "packet/ndp.h"

namespace pylon::packet {
namespace {

constexpr std::size_t kIpv6Header = 40;
constexpr std::uint8_t kOptSourceLl = 1;
constexpr std::uint8_t kOptTargetLl = 2;

void Put16(std::vector<std::uint8_t>& b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<std::uint8_t>(v >> 8);
  b[at + 1] = static_cast<std::uint8_t>(v & 0xff);
}
std::uint16_t Get16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>((b[at] << 8) | b[at + 1]);
}
void PutIp(std::vector<std::uint8_t>& b, std::size_t at, const net::IpAddress& a) {
  auto bytes = a.bytes();
  for (int i = 0; i < 16; ++i)
    b[at + static_cast<std::size_t>(i)] = bytes[static_cast<std::size_t>(i)];
}

void SumBytes(std::uint32_t& sum, std::span<const std::uint8_t> b) {
  for (std::size_t i = 0; i + 1 < b.size(); i += 2)
    sum += static_cast<std::uint32_t>((b[i] << 8) | b[i + 1]);
  if (b.size() % 2) sum += static_cast<std::uint32_t>(b.back() << 8);
}

// Builds IPv6 header + ICMPv6 body (checksum filled in).
std::vector<std::uint8_t> Packet(const net::IpAddress& src, const net::IpAddress& dst,
                                 std::uint8_t hop_limit, std::vector<std::uint8_t> icmp) {
  std::vector<std::uint8_t> b(kIpv6Header + icmp.size(), 0);
  b[0] = 0x60;  // version 6, traffic class 0, flow label 0
  Put16(b, 4, static_cast<std::uint16_t>(icmp.size()));
  b[6] = kIcmpv6NextHeader;
  b[7] = hop_limit;
  PutIp(b, 8, src);
  PutIp(b, 24, dst);
  icmp[2] = icmp[3] = 0;
  std::uint16_t sum = Icmpv6Checksum(src, dst, icmp);
  icmp[2] = static_cast<std::uint8_t>(sum >> 8);
  icmp[3] = static_cast<std::uint8_t>(sum & 0xff);
  std::copy(icmp.begin(), icmp.end(), b.begin() + kIpv6Header);
  return b;
}

void PutLlOption(std::vector<std::uint8_t>& icmp, std::uint8_t type, const MacAddress& mac) {
  icmp.push_back(type);
  icmp.push_back(1);  // length in units of 8 octets
  for (auto v : mac.bytes()) icmp.push_back(v);
}

Status RequireV6(const net::IpAddress& a, const char* what) {
  if (!a.is_v6()) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string(what) + ": " + a.ToString() + " is not IPv6");
  }
  return Ok();
}

bool IsMulticast(const net::IpAddress& a) { return (a.value() >> 120) == 0xff; }

}  // namespace

std::uint16_t Icmpv6Checksum(const net::IpAddress& src, const net::IpAddress& dst,
                             std::span<const std::uint8_t> icmp) {
  std::uint32_t sum = 0;
  auto s = src.bytes();
  auto d = dst.bytes();
  SumBytes(sum, s);
  SumBytes(sum, d);
  const auto len = static_cast<std::uint32_t>(icmp.size());
  sum += len >> 16;
  sum += len & 0xffff;
  sum += kIcmpv6NextHeader;
  for (std::size_t i = 0; i + 1 < icmp.size(); i += 2) {
    if (i == 2) continue;  // the checksum field itself counts as zero
    sum += static_cast<std::uint32_t>((icmp[i] << 8) | icmp[i + 1]);
  }
  if (icmp.size() % 2) sum += static_cast<std::uint32_t>(icmp.back() << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xffff);
}

std::vector<std::uint8_t> EncodeNdp(const NdpMessage& m) {
  if (const auto* na = std::get_if<NeighborAdvertisement>(&m)) {
    std::vector<std::uint8_t> icmp(24, 0);
    icmp[0] = kNeighborAdvertisement;
    icmp[4] = static_cast<std::uint8_t>((na->router ? 0x80 : 0) | (na->solicited ? 0x40 : 0) |
                                        (na->override_flag ? 0x20 : 0));
    PutIp(icmp, 8, na->target);
    if (na->target_lladdr) PutLlOption(icmp, kOptTargetLl, *na->target_lladdr);
    return Packet(na->source, na->destination, na->hop_limit, std::move(icmp));
  }
  const auto& ns = std::get<NeighborSolicitation>(m);
  std::vector<std::uint8_t> icmp(24, 0);
  icmp[0] = kNeighborSolicitation;
  PutIp(icmp, 8, ns.target);
  if (ns.source_lladdr) PutLlOption(icmp, kOptSourceLl, *ns.source_lladdr);
  return Packet(ns.source, ns.destination, ns.hop_limit, std::move(icmp));
}

Result<NdpMessage> DecodeNdp(std::span<const std::uint8_t> p) {
  if (p.size() < kIpv6Header || (p[0] >> 4) != 6) {
    return Fail(ErrorCode::kInvalidArgument, "NDP: not an IPv6 packet");
  }
  const std::size_t payload = Get16(p, 4);
  if (p[6] != kIcmpv6NextHeader) return Fail(ErrorCode::kInvalidArgument, "NDP: not ICMPv6");
  if (kIpv6Header + payload > p.size()) return Fail(ErrorCode::kInvalidArgument, "NDP: truncated");
  auto icmp = p.subspan(kIpv6Header, payload);
  if (icmp.size() < 24) return Fail(ErrorCode::kInvalidArgument, "NDP: ICMPv6 body too short");
  auto src = net::IpAddress::FromBytes(net::Family::kV6, &p[8]);
  auto dst = net::IpAddress::FromBytes(net::Family::kV6, &p[24]);
  if (Icmpv6Checksum(src, dst, icmp) != Get16(icmp, 2)) {
    return Fail(ErrorCode::kInvalidArgument, "NDP: bad ICMPv6 checksum");
  }
  const std::uint8_t type = icmp[0];
  if (type != kNeighborAdvertisement && type != kNeighborSolicitation) {
    return Fail(ErrorCode::kInvalidArgument, "NDP: ICMPv6 type " + std::to_string(type));
  }
  if (icmp[1] != 0) return Fail(ErrorCode::kInvalidArgument, "NDP: code != 0");
  auto target = net::IpAddress::FromBytes(net::Family::kV6, &icmp[8]);
  std::optional<MacAddress> sll, tll;
  for (std::size_t off = 24; off < icmp.size();) {
    if (off + 2 > icmp.size() || icmp[off + 1] == 0 || off + icmp[off + 1] * 8u > icmp.size()) {
      return Fail(ErrorCode::kInvalidArgument, "NDP: malformed option");
    }
    const std::size_t len = icmp[off + 1] * 8u;
    if (icmp[off] == kOptSourceLl || icmp[off] == kOptTargetLl) {
      auto mac = *MacAddress::FromBytes(icmp.subspan(off + 2, 6));
      (icmp[off] == kOptSourceLl ? sll : tll) = mac;
    }
    off += len;
  }
  if (type == kNeighborAdvertisement) {
    NeighborAdvertisement na;
    na.source = src;
    na.destination = dst;
    na.hop_limit = p[7];
    na.router = icmp[4] & 0x80;
    na.solicited = icmp[4] & 0x40;
    na.override_flag = icmp[4] & 0x20;
    na.target = target;
    na.target_lladdr = tll;
    return NdpMessage{na};
  }
  NeighborSolicitation ns;
  ns.source = src;
  ns.destination = dst;
  ns.hop_limit = p[7];
  ns.target = target;
  ns.source_lladdr = sll;
  return NdpMessage{ns};
}

bool IsValidNdp(const NdpMessage& m) {
  if (const auto* na = std::get_if<NeighborAdvertisement>(&m)) {
    return na->hop_limit == kNdpHopLimit && !IsMulticast(na->target) &&
           !(IsMulticast(na->destination) && na->solicited);
  }
  const auto& ns = std::get<NeighborSolicitation>(m);
  const bool unspecified = ns.source.value() == 0;
  return ns.hop_limit == kNdpHopLimit && !IsMulticast(ns.target) &&
         !(unspecified && ns.source_lladdr);
}

Result<NeighborAdvertisement> UnsolicitedNa(const MacAddress& mac, const net::IpAddress& address,
                                            std::optional<net::IpAddress> source) {
  if (auto st = RequireV6(address, "unsolicited NA"); !st) return tl::unexpected(st.error());
  NeighborAdvertisement na;
  na.source = source.value_or(address);
  if (auto st = RequireV6(na.source, "unsolicited NA source"); !st)
    return tl::unexpected(st.error());
  na.destination = AllNodesAddress();
  na.override_flag = true;
  na.target = address;
  na.target_lladdr = mac;
  return na;
}

Result<NeighborSolicitation> DadSolicitation(const net::IpAddress& address) {
  if (auto st = RequireV6(address, "DAD solicitation"); !st) return tl::unexpected(st.error());
  NeighborSolicitation ns;
  ns.source = net::IpAddress::FromValue(net::Family::kV6, 0);
  ns.destination = SolicitedNodeAddress(address);
  ns.target = address;
  return ns;
}

MacAddress DestinationMac(const NdpMessage& m) {
  const net::IpAddress& dst =
      std::visit([](const auto& x) -> const net::IpAddress& { return x.destination; }, m);
  return Ipv6MulticastMac(dst);
}

}  // namespace pylon::packet
