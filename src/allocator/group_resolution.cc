#include "allocator/group_resolution.h"

#include <vector>

#include "allocator/rebuild.h"
#include "allocator/reconcile_phases.h"

namespace pylon::allocator {

namespace {

std::string JoinNames(const std::vector<const config::Group*>& groups) {
  std::string out;
  for (const config::Group* g : groups) out += (out.empty() ? "" : ", ") + g->key().name;
  return out;
}

std::string JoinStrings(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::optional<std::string> HeldServiceGroup(const pool::ServiceKey& key,
                                            const pool::Allocator& pool,
                                            const config::InForceConfig& config,
                                            const std::string& install_namespace) {
  auto held = pool.PoolOf(key);
  if (!held) return std::nullopt;
  for (const auto& [k, g] : config.groups()) {
    if (k.kind == config::ObjectKind::kServiceGroup && k.namespace_ == install_namespace &&
        PoolKey(k) == *held) {
      return k.name;
    }
  }
  return std::nullopt;
}

GroupResolution ResolveServiceGroup(const model::Service& svc, const config::InForceConfig& config,
                                    const std::string& install_namespace,
                                    const std::optional<std::string>& held) {
  std::vector<const config::Group*> listing;  // in-force groups listing the namespace
  bool enforcing = false;                     // the namespace is enforced by some group
  for (const auto& [k, g] : config.groups()) {
    if (k.kind != config::ObjectKind::kServiceGroup || k.namespace_ != install_namespace) continue;
    if (!g.ListsNamespace(svc.ns)) continue;
    listing.push_back(&g);
    enforcing = enforcing || g.enforce_namespaces;
  }
  GroupResolution r;
  const std::string* ann = svc.Annotation(model::kAnnServiceGroup);
  // PureLB v2: a requested address (purelb.io/addresses, spec.loadBalancerIP) picks the v2
  // group that contains it.
  std::optional<std::string> by_address;
  if (auto req = RequestedOf(svc); req) {
    for (const auto& ip : {req->v4, req->v6}) {
      if (!ip || by_address) continue;
      auto m = config.FindAddress(*ip);
      if (m && m->group != nullptr && m->group->key().kind == config::ObjectKind::kServiceGroup &&
          m->group->key().namespace_ == install_namespace &&
          m->group->version == config::PurelbVersion::kV2) {
        by_address = m->group->key().name;
      }
    }
  }
  if (ann != nullptr && !ann->empty()) {
    r.name = *ann;
  } else if (by_address) {
    r.name = *by_address;
  } else if (held) {
    r.name = *held;  // never retroactive: an unannotated Service keeps its group
  } else if (listing.size() == 1) {
    r.name = listing[0]->key().name;
  } else if (listing.size() > 1) {
    std::vector<const config::Group*> marked;
    for (const config::Group* g : listing) {
      if (g->namespace_default) marked.push_back(g);
    }
    if (marked.size() == 1) {
      r.name = marked[0]->key().name;
    } else if (enforcing) {
      r.reason = Reason::kAmbiguousNamespaceDefault;
      r.denied = "ambiguous namespace default: ServiceGroups " + JoinNames(listing) +
                 " list namespace " + svc.ns + " and " +
                 (marked.empty() ? "none" : "more than one") +
                 " of them sets namespaceDefault; set it on one, or annotate the Service with " +
                 model::kAnnServiceGroup;
      r.name = model::kDefaultServiceGroup;
      return r;
    } else {
      r.name = model::kDefaultServiceGroup;
      r.warning = "ServiceGroups " + JoinNames(listing) + " list namespace " + svc.ns + " and " +
                  (marked.empty() ? "none" : "more than one") +
                  " of them sets namespaceDefault; used ServiceGroup default";
    }
  } else {
    r.name = model::kDefaultServiceGroup;
  }
  // The boundary, checked when the Service takes addresses from the group, never on what it
  // already holds there.
  if (held && *held == r.name) return r;
  const config::Group* g = config.FindServiceGroup(install_namespace, r.name);
  if (g == nullptr || g->ListsNamespace(svc.ns)) return r;
  if (enforcing) {
    r.reason = Reason::kNamespaceDenied;
    r.denied = "namespace " + svc.ns + " is enforced (enforceNamespaces) by ServiceGroups " +
               JoinNames(listing) + " and may use only ServiceGroups that list it; ServiceGroup " +
               r.name + " does not";
    return r;
  }
  for (const std::string& ns : g->namespaces) {
    for (const auto& [k, other] : config.groups()) {
      if (k.kind != config::ObjectKind::kServiceGroup || k.namespace_ != install_namespace) {
        continue;
      }
      if (other.enforce_namespaces && other.ListsNamespace(ns)) {
        r.reason = Reason::kNamespaceDenied;
        r.denied = "ServiceGroup " + r.name + " serves only namespaces " +
                   JoinStrings(g->namespaces) + " (namespace " + ns +
                   " is enforced by ServiceGroup " + k.name + "), not " + svc.ns;
        return r;
      }
    }
  }
  return r;
}

}  // namespace pylon::allocator
