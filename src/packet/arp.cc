#include "packet/arp.h"

namespace pylon::packet {
namespace {

void Put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v & 0xff);
}
std::uint16_t Get16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

Status RequireV4(const net::IpAddress& a, const char* what) {
  if (!a.is_v4()) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string(what) + ": " + a.ToString() + " is not IPv4");
  }
  return Ok();
}

}  // namespace

std::array<std::uint8_t, kArpSize> EncodeArp(const ArpPacket& p) {
  std::array<std::uint8_t, kArpSize> b{};
  Put16(&b[0], 1);       // htype: Ethernet
  Put16(&b[2], 0x0800);  // ptype: IPv4
  b[4] = 6;              // hlen
  b[5] = 4;              // plen
  Put16(&b[6], p.op);
  auto sip = p.sender_ip.bytes();
  auto tip = p.target_ip.bytes();
  for (int i = 0; i < 6; ++i) {
    b[8 + i] = p.sender_mac.bytes()[i];
    b[18 + i] = p.target_mac.bytes()[i];
  }
  for (int i = 0; i < 4; ++i) {
    b[14 + i] = sip[i];
    b[24 + i] = tip[i];
  }
  return b;
}

Result<ArpPacket> DecodeArp(std::span<const std::uint8_t> b) {
  if (b.size() < kArpSize) {
    return Fail(ErrorCode::kInvalidArgument, "ARP: " + std::to_string(b.size()) + " bytes");
  }
  if (Get16(&b[0]) != 1 || Get16(&b[2]) != 0x0800 || b[4] != 6 || b[5] != 4) {
    return Fail(ErrorCode::kInvalidArgument, "ARP: not Ethernet/IPv4");
  }
  ArpPacket p;
  p.op = Get16(&b[6]);
  p.sender_mac = *MacAddress::FromBytes(b.subspan(8, 6));
  p.sender_ip = net::IpAddress::FromBytes(net::Family::kV4, &b[14]);
  p.target_mac = *MacAddress::FromBytes(b.subspan(18, 6));
  p.target_ip = net::IpAddress::FromBytes(net::Family::kV4, &b[24]);
  return p;
}

Result<ArpPacket> GratuitousArpRequest(const MacAddress& mac, const net::IpAddress& address) {
  if (auto st = RequireV4(address, "gratuitous ARP"); !st) return tl::unexpected(st.error());
  return ArpPacket{kArpRequest, mac, address, MacAddress(), address};
}

Result<ArpPacket> GratuitousArpReply(const MacAddress& mac, const net::IpAddress& address) {
  if (auto st = RequireV4(address, "gratuitous ARP"); !st) return tl::unexpected(st.error());
  return ArpPacket{kArpReply, mac, address, mac, address};
}

Result<ArpPacket> ArpProbe(const MacAddress& mac, const net::IpAddress& address) {
  if (auto st = RequireV4(address, "ARP probe"); !st) return tl::unexpected(st.error());
  return ArpPacket{kArpRequest, mac, net::IpAddress::V4(0), MacAddress(), address};
}

std::optional<MacAddress> ArpConflict(const ArpPacket& r, const net::IpAddress& address,
                                      const MacAddress& own_mac) {
  if (r.sender_mac == own_mac) return std::nullopt;
  if (r.sender_ip == address) return r.sender_mac;
  if (r.op == kArpRequest && r.sender_ip == net::IpAddress::V4(0) && r.target_ip == address) {
    return r.sender_mac;
  }
  return std::nullopt;
}

}  // namespace pylon::packet
