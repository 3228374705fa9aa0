// What a received ARP or Neighbor Discovery packet says about who uses an address: the pure rules
// of duplicate-address probing (RFC 5227 §2.1.1, RFC 4862 §5.4.3/§5.4.4) and of watching an
// address this node already announces (RFC 5227 §2.4, "ongoing address conflict detection").
// Pure.
#pragma once

#include <optional>
#include <span>

#include "net/ip.h"
#include "packet/arp.h"
#include "packet/mac.h"
#include "packet/ndp.h"

namespace pylon::packet {

// A host (by MAC) showing that it uses an address.
struct Claim {
  net::IpAddress address;
  MacAddress mac;
  friend bool operator==(const Claim&, const Claim&) = default;
};

// While PROBING `address` (before taking it): the MAC of the host that already uses it, or that
// probes for it at the same time; nullopt when the packet says nothing about `address`.
//   ARP: sender IP = address (a reply to our probe, a GARP, any request from the owner), or a
//        request with sender IP 0.0.0.0 and target IP = address (another prober; RFC 5227).
//   NDP: an NA whose target is `address` (the owner answers a DAD NS with an NA to ff02::1), or
//        a DAD NS (source ::) for `address` from another host (RFC 4862 §5.4.3). The MAC is the
//        NA's target link-layer option, else the frame's Ethernet source.
// Answers from `ignore` (our own interface, the cluster's member nodes) are not claims.
std::optional<MacAddress> ProbeAnswerArp(const ArpPacket& received, const net::IpAddress& address,
                                         std::span<const MacAddress> ignore);
std::optional<MacAddress> ProbeAnswerNdp(const NdpMessage& received, const MacAddress& frame_source,
                                         const net::IpAddress& address,
                                         std::span<const MacAddress> ignore);

// While HOLDING addresses: the address a packet shows its sender using, whoever it is (the caller
// compares the address with what it holds and the MAC with the known ones).
//   ARP: any packet with a non-zero sender IP (request, reply, gratuitous). Probes (sender IP 0)
//        claim nothing: our own kernel answers them, and a prober that hears the answer backs off.
//   NDP: an NA (its target, MAC as above); an NS whose source is not :: (the sender uses that
//        source address; MAC = its source link-layer option, else the frame source). A DAD NS
//        claims nothing yet (our kernel answers it and the prober backs off).
std::optional<Claim> ClaimInArp(const ArpPacket& received);
std::optional<Claim> ClaimInNdp(const NdpMessage& received, const MacAddress& frame_source);

}  // namespace pylon::packet
