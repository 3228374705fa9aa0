// Multi-pool (PureLB v2, docs/purelb-v2.md "Multi-pool"): a Service gets one address per active
// range of each family. When it is in effect and which ranges are active; the allocation itself
// is AllocateMultiPool (reconcile_phases.h). Pure.
#pragma once

#include "allocator/node_subnets.h"
#include "config/validate.h"
#include "model/service.h"

namespace pylon::allocator {

// Whether multi-pool is in effect for the Service in `group`: purelb.io/v2 ServiceGroups only;
// the purelb.io/multi-pool annotation ("true" on, any other value off), absent the group's
// multiPool. Requested addresses (purelb.io/addresses, spec.loadBalancerIP) are then still
// claimed the ordinary way.
bool MultiPoolInEffect(const model::Service& svc, const config::Group& group);

// Whether multi-pool allocates from the pool entry (a `v4pools[i]` / `v6pool` item): every entry
// of a remote group; for a local group one whose subnet a live node advertises (masked
// prefixes compared, so a subnet written with host bits matches too).
bool ActiveEntry(const config::Group& group, const config::PoolEntry& entry,
                 const NodeSubnets* node_subnets);

}  // namespace pylon::allocator
