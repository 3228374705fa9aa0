#include "allocator/node_subnets.h"

#include <algorithm>

#include "election/subnets_annotation.h"

namespace pylon::allocator {

bool NodeSubnets::Has(const net::Prefix& subnet) const {
  return std::find(live.begin(), live.end(), subnet.Masked()) != live.end();
}

NodeLease ReadNodeLease(std::string node, std::string holder_identity,
                        std::optional<std::int64_t> lease_duration_seconds,
                        std::optional<WallTime> renew_time, std::string subnets_annotation) {
  NodeLease l{std::move(node),
              std::move(holder_identity),
              lease_duration_seconds,
              renew_time,
              std::move(subnets_annotation),
              {},
              {},
              {}};
  election::SubnetsParse parsed = election::ParseSubnetsAnnotation(l.subnets_annotation);
  l.subnets = std::move(parsed.subnets);
  for (const std::string& issue : parsed.issues) {
    l.issues.push_back("lease of node " + l.node + ": purelb.io/subnets " + issue + " (skipped)");
  }
  if (!l.holder_identity.empty() &&
      (!l.renew_time || !l.lease_duration_seconds || *l.lease_duration_seconds <= 0)) {
    l.issues.push_back("lease of node " + l.node +
                       ": no renewTime or no positive leaseDurationSeconds; not live");
  }
  return l;
}

NodeSubnets LiveNodeSubnets(const std::vector<NodeLease>& leases, WallTime now) {
  NodeSubnets out;
  for (const NodeLease& l : leases) {
    if (l.holder_identity.empty()) continue;  // released: the agent shut down
    if (!l.renew_time || !l.lease_duration_seconds || *l.lease_duration_seconds <= 0) continue;
    const WallTime expiry = *l.renew_time + std::chrono::seconds(*l.lease_duration_seconds);
    if (now >= expiry) continue;
    if (!out.next_expiry || expiry < *out.next_expiry) out.next_expiry = expiry;
    out.live_nodes.push_back(l.node);
    out.live.insert(out.live.end(), l.subnets.begin(), l.subnets.end());
  }
  std::sort(out.live.begin(), out.live.end(), election::PrefixLess);
  out.live.erase(std::unique(out.live.begin(), out.live.end()), out.live.end());
  std::sort(out.live_nodes.begin(), out.live_nodes.end());
  return out;
}

}  // namespace pylon::allocator
