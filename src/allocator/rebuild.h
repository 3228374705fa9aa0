// The pool state from the configuration and the Services: the pool definitions of the groups and
// classes in force, and the records a (re)start rebuilds the holdings from. Pure.
#pragma once

#include <string>
#include <vector>

#include "config/validate.h"
#include "model/service.h"
#include "pool/allocator.h"

namespace pylon::allocator {

// The pool key of a group or class in pool::Allocator: its ConfigKey text, e.g.
// "ServiceGroup purelb-system/localdual", "LoadBalancerClass public".
std::string PoolKey(const config::ConfigKey& key);

// The pool definitions of every group and class in force.
std::vector<pool::PoolDefinition> PoolDefinitions(const config::InForceConfig& config);

// Startup order: Services that show addresses first, then the others; each part oldest first
// (creationTimestamp, then namespace/name).
std::vector<const model::Service*> StartupOrder(std::vector<const model::Service*> services);

// The records to rebuild the pool state from, in `ordered` order: for every Pylon Service, the
// first status ingress IP of each family (a multi-pool Service: every one in the group of its
// first) that lies in a group or class in force (under that group's pool, whichever the Service
// now selects, so that the address stays held until the Service's own reconcile moves it). The
// status is the source of truth; annotations are not read.
std::vector<pool::ExistingRecord> RebuildRecords(const std::vector<const model::Service*>& ordered,
                                                 const config::InForceConfig& config);

}  // namespace pylon::allocator
