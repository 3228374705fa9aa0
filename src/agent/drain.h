// The drain of a planned move: established TCP flows through an address survive its move away
// from a node that leaves load balancing in good order (docs/failover.md "Lifecycle").
//
// When this node takes over a local address from a holder that is excluded (LeavingLoadBalancing
// in lifecycle.h: the exclude label, the out-of-service or autoscaler taint, shutdown, deletion)
// and still alive, it forwards, for `timeout`, every TCP packet to the address that is not a SYN
// and belongs to no flow this node knows (conntrack state new or invalid) unchanged to the
// previous holder's address on the segment: nftables `dup to <holder> device <interface>` and
// `drop`, in a table of its own hooked before kube-proxy's DNAT (prerouting, priority -150). The
// previous holder's kube-proxy still has the flow's conntrack entry and handles it as before;
// replies go from there to the client. New connections (a SYN) are served here from the first
// packet. The previous holder does nothing special: it withdraws as before, and its kube-proxy
// (iptables, nftables or IPVS mode) handles traffic to the address whether or not the address
// is on its NIC. TCP only; a flow that outlives the timeout is cut (reset by the pod it reaches
// here). The holder's address comes from its heartbeat endpoints (purelb.io/heartbeat): without
// heartbeats there is no drain, the move is as before.
//
// Pure (no clock, no I/O): DrainBook keeps the forwards, RenderDrainRuleset writes what the
// kernel must hold (the Reconciler applies it through nftables::Nftables).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/types.h"
#include "common/clock.h"
#include "net/ip.h"

namespace pylon::agent {

inline constexpr const char* kDrainTable = "pylon-drain";

struct DrainForward {
  net::IpAddress address;  // the moved address
  net::IpAddress via;      // the previous holder's address on the segment (same family)
  std::string interface;   // where this node holds the address and reaches `via`
  NodeName from;           // the previous holder
  SteadyTime until{};      // the forward ends then
  friend bool operator==(const DrainForward&, const DrainForward&) = default;
};

// The holder's address to forward `address` to: the first of `holder_addresses` of its family
// inside `subnet` (the subnet this node holds the address on). nullopt: none.
std::optional<net::IpAddress> DrainVia(const net::Prefix& subnet,
                                       const std::vector<net::IpAddress>& holder_addresses);

class DrainBook {
 public:
  explicit DrainBook(Duration timeout) : timeout_(timeout) {}

  // A planned move taken now: forward `f.address` until now + timeout. A forward of the same
  // address already running keeps its end unless the holder or the path changed.
  void Start(DrainForward f, SteadyTime now);
  // Ends the forwards that are due and those of addresses this node no longer holds or takes
  // (`held`: the local addresses of this pass's plan).
  void Retain(const std::set<net::IpAddress>& held, SteadyTime now);
  // Whether the forwards changed since the last call (the ruleset must be applied again).
  bool TakeChanged();
  std::vector<DrainForward> Forwards() const;
  std::optional<SteadyTime> NextExpiry() const;
  Duration timeout() const { return timeout_; }

 private:
  Duration timeout_;
  std::map<net::IpAddress, DrainForward> forwards_;
  bool changed_ = false;
};

// The nft(8) commands that make the kernel hold exactly `forwards`: the tables `ip pylon-drain`
// and `ip6 pylon-drain` replaced whole in one transaction (deleted when there is nothing to
// forward). A forward whose interface name nft could misread is left out.
std::string RenderDrainRuleset(const std::vector<DrainForward>& forwards);

}  // namespace pylon::agent
