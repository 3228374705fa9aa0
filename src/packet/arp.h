// ARP for IPv4 over Ethernet (RFC 826) as used for announcing and duplicate detection
// (RFC 5227). Encoders produce the 28-byte ARP payload that follows the Ethernet header: the
// sender uses SOCK_DGRAM packet sockets, so the kernel writes the Ethernet header from the
// destination given to sendto (broadcast for all of these). Pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "common/result.h"
#include "net/ip.h"
#include "packet/mac.h"

namespace pylon::packet {

inline constexpr std::uint16_t kEtherTypeArp = 0x0806;
inline constexpr std::uint16_t kArpRequest = 1;
inline constexpr std::uint16_t kArpReply = 2;
inline constexpr std::size_t kArpSize = 28;

struct ArpPacket {
  std::uint16_t op = kArpRequest;
  MacAddress sender_mac;
  net::IpAddress sender_ip;
  MacAddress target_mac;
  net::IpAddress target_ip;
  friend bool operator==(const ArpPacket&, const ArpPacket&) = default;
};

// htype 1 (Ethernet), ptype 0x0800, hlen 6, plen 4, then op and the four addresses. Both IPs
// must be IPv4 (checked by the factories below).
std::array<std::uint8_t, kArpSize> EncodeArp(const ArpPacket& p);
// Fails on anything but Ethernet/IPv4 ARP; trailing bytes (Ethernet padding) are ignored.
Result<ArpPacket> DecodeArp(std::span<const std::uint8_t> bytes);

// RFC 5227 §3 ARP Announcement: a request with sender IP = target IP = `address`, target MAC
// zero, sent to broadcast.
Result<ArpPacket> GratuitousArpRequest(const MacAddress& mac, const net::IpAddress& address);
// The reply form some stacks also send (MetalLB): op reply, target MAC = sender MAC, both IPs =
// `address`. Some routers (Junos) ignore it; send it in addition to, never instead of, the request.
Result<ArpPacket> GratuitousArpReply(const MacAddress& mac, const net::IpAddress& address);
// RFC 5227 §2.1.1 ARP Probe: sender IP 0.0.0.0, target MAC zero, target IP = `address`.
Result<ArpPacket> ArpProbe(const MacAddress& mac, const net::IpAddress& address);

// RFC 5227 §2.1.1 conflict test for a received packet while probing `address`: another host uses
// it if the sender IP is `address`, or another host probes for it too (sender IP 0, target IP
// `address`). Returns that host's MAC; nullopt when the packet says nothing about `address` or
// comes from `own_mac`.
std::optional<MacAddress> ArpConflict(const ArpPacket& received, const net::IpAddress& address,
                                      const MacAddress& own_mac);

}  // namespace pylon::packet
