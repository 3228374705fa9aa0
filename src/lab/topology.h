// The lab's network: a LAN in network namespaces on one machine, built with iproute2.
//
//   pylon-<lab>-lan      bridge br0 (the LAN switch) with the gateway's addresses
//   pylon-<lab>-n<i>     node i: eth0 on br0; default routes via the gateway
//   pylon-<lab>-client   a client host on br0
//   pylon-<lab>-wan      (BGP labs only, AddWan) a client behind the gateway, which then routes
//                        to the virtual addresses the nodes announce over BGP
//
// Addresses (documentation ranges only):
//   LAN A   192.0.2.0/24      gateway .1, client .2, node i .(10+i)
//   LAN B   198.51.100.0/24   gateway .1, client .2, node i .(10+i)   (a second subnet on eth0)
//   IPv6 A  2001:db8:1::/64   node i has 2001:db8:1::(10+i)/128 plus the on-link /64 learned as
//                             a `proto ra` route, the shape seed 000 describes (docs/seeds.md)
//   IPv6 B  2001:db8:f00d::/64  node i ::(10+i)/64
//   WAN     10.255.0.0/24 and 2001:db8:ffff::/64: gateway .1 / ::1, wan client .2 / ::2 (a
//           private range inside the lab's own namespaces: every documentation range of IPv4 is
//           taken by the LANs and the virtual pools)
// Nothing in the lab uses 203.0.113.0/24 or 2001:db8:beef::/64: they are free for virtual pools.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace pylon::lab {

struct LabNode {
  std::string name;   // node1, node2, ...
  std::string netns;  // pylon-<lab>-n1
  std::string ipv4;   // 192.0.2.11
  std::string ipv6;   // 2001:db8:1::11
  std::string ipv4_b;
  std::string ipv6_b;
};

class Topology {
 public:
  Topology(std::string lab_name, int nodes);

  const std::string& name() const { return name_; }
  std::string LanNetns() const { return prefix_ + "lan"; }
  std::string ClientNetns() const { return prefix_ + "client"; }
  std::string WanNetns() const { return prefix_ + "wan"; }
  const std::vector<LabNode>& nodes() const { return nodes_; }
  static constexpr const char* kClientIpv4 = "192.0.2.2";
  static constexpr const char* kClientIpv6 = "2001:db8:1::2";
  static constexpr const char* kWanClientIpv4 = "10.255.0.2";
  static constexpr const char* kWanClientIpv6 = "2001:db8:ffff::2";

  // Creates every namespace, link, address and route. Fails if the lab already exists.
  // On failure, removes whatever it created.
  Status Up();
  // The WAN client behind the gateway, and L4 hashing of multipath routes at the gateway (so
  // flows from different client ports spread over the next hops).
  Status AddWan() const;
  // Takes a node's port on the LAN bridge out of forwarding (or back in), with no carrier change
  // on either side: a crashed node as the switch sees it, which only BFD or a hold timer detects.
  Status SetNodePortForwarding(const LabNode& node, bool forwarding) const;
  // Removes the lab's namespaces (killing what runs inside them). Idempotent.
  Status Down();
  bool Exists() const;
  // Takes a node's eth0 down (a NIC or cable failure), or brings it back up and restores the
  // IPv6 addresses and routes the kernel removed with it (default routes, the `proto ra` /64).
  Status SetNodeLink(const LabNode& node, bool up) const;

  // Namespaces of any lab with this name that exist now (for `down` after a crash).
  static std::vector<std::string> ExistingNetns(const std::string& lab_name);
  // Names of every lab that has namespaces now.
  static std::vector<std::string> ExistingLabs();

 private:
  std::string name_;
  std::string prefix_;
  std::vector<LabNode> nodes_;
};

// Validates a lab name: [a-z0-9]{1,12}, so namespace and link names stay short.
Status ValidateLabName(const std::string& name);

}  // namespace pylon::lab
