// Group resolution: which ServiceGroup a Service of Owner::kServiceGroup allocates from (purelb.io
// v2 namespaces; PureLB 0.17's rules, docs/purelb-v2.md). Pure.
#pragma once

#include <optional>
#include <string>

#include "allocator/decision.h"
#include "config/validate.h"
#include "model/service.h"
#include "pool/allocator.h"

namespace pylon::allocator {

// The ServiceGroup of a Service of Owner::kServiceGroup:
//   1. the purelb.io/service-group annotation;
//   2. else the purelb.io/v2 group containing a requested address (purelb.io/addresses,
//      spec.loadBalancerIP), as PureLB v2 finds it;
//   3. else the group the Service holds addresses in now (`held`): never retroactive;
//   4. else the one in-force group listing the Service's namespace in spec.namespaces, or of
//      several the one with namespaceDefault; if zero or several are marked: refused
//      (kAmbiguousNamespaceDefault) when the namespace is enforced, else "default";
//   5. else "default".
// Boundary (skipped when the Service already holds addresses in that group): a namespace listed
// by a group with enforceNamespaces is enforced and may use only groups that list it; a group
// listing an enforced namespace is confined and serves only the namespaces it lists. A breach is
// refused (kNamespaceDenied). Groups without namespaces (all v1 groups) serve every namespace that
// is not enforced.
struct GroupResolution {
  std::string name;
  Reason reason = Reason::kNone;
  std::optional<std::string> denied;  // the refusal message, when refused
  // Allowed but worth a Warning event when addresses are assigned: several groups list the
  // namespace and not exactly one is its default, so "default" was used.
  std::optional<std::string> warning;
};
GroupResolution ResolveServiceGroup(const model::Service& svc, const config::InForceConfig& config,
                                    const std::string& install_namespace,
                                    const std::optional<std::string>& held);

// The in-force ServiceGroup (in the install namespace) whose pool holds the Service's addresses.
std::optional<std::string> HeldServiceGroup(const pool::ServiceKey& key,
                                            const pool::Allocator& pool,
                                            const config::InForceConfig& config,
                                            const std::string& install_namespace);

}  // namespace pylon::allocator
