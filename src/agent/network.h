// Discovers this node's announcing interfaces and their subnets from the kernel:
//  - `localint` unset or "default": per family, every output interface of the lowest-metric
//    default route (ECMP next hops included), with that family's subnets;
//  - `localint` a pattern: every link whose name matches, with both families' subnets;
//  - LBNodeAgent `interfaces[]`: every matching link, both families, appended after the above.
// Subnets come from netlink::InterfaceSubnets (IPv6 /128 host address -> its on-link /64);
// addresses tagged as ours (IFA_PROTO) never count. The virtual interface is never included.
#pragma once

#include <optional>
#include <string>

#include "agent/types.h"
#include "common/result.h"
#include "config/parse.h"
#include "netlink/netlink.h"

namespace pylon::agent {

// `agent_config` null: defaults. Fails only when the kernel cannot be asked; a node without a
// default route of some family simply has no interface for it.
Result<NodeNetwork> DiscoverNetwork(netlink::Netlink& nl,
                                    const config::NodeAgentConfig* agent_config);

}  // namespace pylon::agent
