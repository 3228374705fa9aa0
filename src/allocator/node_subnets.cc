#include "allocator/node_subnets.h"

#include <algorithm>

#include "election/subnets_annotation.h"

namespace pylon::allocator {

bool NodeSubnets::Has(const net::Prefix& subnet) const {
  return std::find(live.begin(), live.end(), subnet.Masked()) != live.end();
}

NodeSubnets LiveNodeSubnets(const std::vector<NodeLease>& leases, WallTime now) {
  NodeSubnets out;
  for (const NodeLease& l : leases) {
    const std::string who = "lease of node " + l.node;
    if (l.holder_identity.empty()) continue;  // released: the agent shut down
    if (!l.renew_time || !l.lease_duration_seconds || *l.lease_duration_seconds <= 0) {
      out.issues.push_back(who + ": no renewTime or no positive leaseDurationSeconds; not live");
      continue;
    }
    if (now >= *l.renew_time + std::chrono::seconds(*l.lease_duration_seconds)) continue;
    out.live_nodes.push_back(l.node);
    election::SubnetsParse parsed = election::ParseSubnetsAnnotation(l.subnets_annotation);
    for (const std::string& issue : parsed.issues) {
      out.issues.push_back(who + ": purelb.io/subnets " + issue + " (skipped)");
    }
    out.live.insert(out.live.end(), parsed.subnets.begin(), parsed.subnets.end());
  }
  std::sort(out.live.begin(), out.live.end(), election::PrefixLess);
  out.live.erase(std::unique(out.live.begin(), out.live.end()), out.live.end());
  std::sort(out.live_nodes.begin(), out.live_nodes.end());
  return out;
}

}  // namespace pylon::allocator
