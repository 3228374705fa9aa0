// Listens on one interface for packets that show some host using an IPv4 or IPv6 address: every
// ARP packet, and ICMPv6 NS/NA only (a BPF filter keeps the rest of the IPv6 traffic in the
// kernel). Used to notice a foreign host claiming an address this node announces (RFC 5227 §2.4).
// Needs CAP_NET_RAW. Threading: one thread at a time.
#pragma once

#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "packet/claims.h"
#include "packet/packet_socket.h"

namespace pylon::packet {

class ClaimListener {
 public:
  static Result<ClaimListener> Open(int ifindex);

  // Waits until `deadline` (on `clock`) for traffic, then returns the claims of every ARP/ND
  // packet received so far (ClaimInArp / ClaimInNdp; our own transmissions are never seen).
  // Returns early, with what it has, as soon as something arrived.
  Result<std::vector<Claim>> Poll(const Clock& clock, SteadyTime deadline);

  int ifindex() const { return ifindex_; }

 private:
  ClaimListener(int ifindex, PacketSocket arp, PacketSocket ipv6)
      : ifindex_(ifindex), arp_(std::move(arp)), ipv6_(std::move(ipv6)) {}
  int ifindex_;
  PacketSocket arp_;
  PacketSocket ipv6_;
};

}  // namespace pylon::packet
