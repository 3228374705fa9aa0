// A RAII AF_PACKET SOCK_DGRAM socket bound to one interface and one EtherType. The kernel adds and
// strips the Ethernet header: payloads are ARP packets or IPv6 packets. Needs CAP_NET_RAW.
// Threading: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "packet/mac.h"

namespace pylon::packet {

struct ReceivedFrame {
  std::vector<std::uint8_t> payload;
  MacAddress source;     // Ethernet source (sll_addr)
  std::uint8_t pkttype;  // PACKET_HOST, PACKET_BROADCAST, PACKET_MULTICAST, PACKET_OTHERHOST
};

class PacketSocket {
 public:
  // Opens, enables PACKET_IGNORE_OUTGOING (our own transmissions are never received) and binds
  // to `ifindex` for `ethertype` (host order, e.g. 0x0806).
  static Result<PacketSocket> Open(int ifindex, std::uint16_t ethertype);

  // Attaches a classic BPF filter that passes only ICMPv6 Neighbor Solicitations and
  // Advertisements (IPv6 next header 58, no extension headers, type 135/136), so a socket bound
  // to EtherType 0x86dd does not copy the node's whole IPv6 traffic to user space.
  Status AttachNeighborDiscoveryFilter();

  Status Send(std::span<const std::uint8_t> payload, const MacAddress& destination);
  // Returns the next frame received before `deadline` on `clock`, or nullopt at the deadline.
  Result<std::optional<ReceivedFrame>> Receive(const Clock& clock, SteadyTime deadline);

  int fd() const { return fd_.get(); }

 private:
  PacketSocket(UniqueFd fd, int ifindex, std::uint16_t ethertype)
      : fd_(std::move(fd)), ifindex_(ifindex), ethertype_(ethertype) {}
  UniqueFd fd_;
  int ifindex_;
  std::uint16_t ethertype_;
};

// The MAC address of an interface by name (SIOCGIFHWADDR); kNotFound if there is no such
// interface, kInvalidArgument if it is not Ethernet-like.
Result<MacAddress> InterfaceMac(const std::string& ifname);

}  // namespace pylon::packet
