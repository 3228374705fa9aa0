// Pure readers of the API objects the agent's informers cache (agent_inputs.cc; no I/O).
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "net/ip.h"

namespace pylon::agent {

// The node's status.addresses of type InternalIP, in their order; unparsable ones are skipped.
std::vector<net::IpAddress> NodeInternalIps(const Json& node);

// The URL of `node`'s kube-proxy health check: the scheme, port and path of this node's
// `own_url` (--kube-proxy-healthz, e.g. http://127.0.0.1:10256/healthz) at the node's first
// IPv4 InternalIP, else its first IPv6 one in brackets. "" when the node has neither, or
// `own_url` has no scheme or no port.
std::string KubeProxyUrlAt(const std::string& own_url, const Json& node);

// The next addresses the allocator publishes in the status.probeAhead.ipv4 and .ipv6 of each
// config object (ServiceGroups and LoadBalancerClasses), in order; entries that are not address
// strings are skipped.
std::vector<net::IpAddress> ProbeAheadCandidates(const std::vector<Json>& configs);

}  // namespace pylon::agent
