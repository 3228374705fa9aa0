// Which of this node's own addresses to publish in its purelb.io/heartbeat annotation: the
// node's addresses on the heartbeat interface, never the load-balancer addresses the agent adds
// there (they move between nodes). Pure over netlink's value types.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "net/ip.h"
#include "netlink/types.h"

namespace pylon::heartbeat {

// Per family, the lowest address of `ifindex` in `addresses` (so the choice does not depend on
// the kernel's listing order) that is of global scope, not secondary (IPv4 VIPs inside the node
// subnet are secondaries), not deprecated (IPv6 VIPs are added with preferred_lft 0), not tentative
// or dadfailed, not IPv4 link-local, not tagged with `exclude_proto` (the agent's IFA_PROTO,
// Linux 6.1+) and not in `exclude` (the addresses the agent added, for kernels without IFA_PROTO).
// IPv4 first. Empty if none. Addresses change (DAD still running after a link comes up,
// renumbering): recompute on every network rediscovery and update the annotation when the result
// changes.
std::vector<net::IpAddress> EndpointAddresses(std::span<const netlink::AddressInfo> addresses,
                                              int ifindex,
                                              std::optional<std::uint8_t> exclude_proto,
                                              std::span<const net::IpAddress> exclude);

}  // namespace pylon::heartbeat
