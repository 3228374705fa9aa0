// Multi-pool: when it is in effect, which ranges are active, and AllocateMultiPool
// (reconcile_phases.h, phase 4 of a multi-pool Service).
#include "allocator/multi_pool.h"

#include <algorithm>
#include <set>
#include <utility>

#include "allocator/reconcile_phases.h"

namespace pylon::allocator {

using net::Family;
using net::IpAddress;

bool MultiPoolInEffect(const model::Service& svc, const config::Group& group) {
  if (group.key().kind != config::ObjectKind::kServiceGroup ||
      group.version != config::PurelbVersion::kV2) {
    return false;
  }
  if (const std::string* ann = svc.Annotation(model::kAnnMultiPool)) return *ann == "true";
  return group.multi_pool;
}

bool ActiveEntry(const config::Group& group, const config::PoolEntry& entry,
                 const NodeSubnets* node_subnets) {
  if (group.mode == config::AnnounceMode::kRemote) return true;
  return entry.subnet && node_subnets != nullptr && node_subnets->Has(*entry.subnet);
}

namespace {

// The group's entry holding `ip`: (family position in `fams`, entry index), or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> EntryOf(const config::Group& group,
                                                           const std::vector<Family>& fams,
                                                           const IpAddress& ip) {
  auto f = std::find(fams.begin(), fams.end(), ip.family());
  if (f == fams.end()) return std::nullopt;
  const auto& entries = group.entries(ip.family());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (const auto& r : entries[i].ranges) {
      if (r.Contains(ip)) return std::make_pair(static_cast<std::size_t>(f - fams.begin()), i);
    }
  }
  return std::nullopt;
}

std::string DescribeLive(const NodeSubnets* node_subnets) {
  if (node_subnets == nullptr || node_subnets->live.empty()) {
    return "no live node advertises a subnet";
  }
  std::string out = "live node subnets: ";
  for (std::size_t i = 0; i < node_subnets->live.size(); ++i) {
    out += (i ? ", " : "") + node_subnets->live[i].ToString();
  }
  return out;
}

}  // namespace

Allocation AllocateMultiPool(const model::Service& svc, const pool::ServiceKey& key,
                             const Owner& owner, const ServiceRequest& sr,
                             const std::vector<IpAddress>& held, const NodeSubnets* node_subnets,
                             const ConflictState& conflicts, pool::Allocator& pool) {
  const config::Group& group = *owner.group;
  const std::vector<Family>& fams = sr.families;
  Allocation a;
  pool::MultiAssignRequest req{key, owner.pool_key, {}, {}, sr.ports};
  std::set<std::pair<std::size_t, std::size_t>> represented;
  std::vector<IpAddress> candidates = held;
  candidates.insert(candidates.end(), svc.ingress.begin(), svc.ingress.end());
  for (const IpAddress& ip : candidates) {
    if (conflicts.avoid.count(ip)) continue;
    auto e = EntryOf(group, fams, ip);
    if (!e || !represented.insert(*e).second) continue;  // another family, or range has one
    req.keep.push_back(ip);
  }
  std::vector<const config::PoolEntry*> slot_entries;
  std::size_t active = 0;
  for (std::size_t fi = 0; fi < fams.size(); ++fi) {
    const auto& entries = group.entries(fams[fi]);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (!ActiveEntry(group, entries[i], node_subnets)) continue;
      ++active;
      if (represented.count({fi, i})) continue;
      req.slots.push_back(entries[i].ranges);
      slot_entries.push_back(&entries[i]);
    }
  }
  if (req.keep.empty() && active == 0) {
    a.refusal = Refusal{Reason::kPoolExhausted,
                        "multi-pool: no range of " + owner.group_word +
                            " is active (its subnet is advertised by no live node; " +
                            DescribeLive(node_subnets) + ")"};
    return a;
  }
  auto r = pool.AssignMulti(req);
  if (!r) {
    a.refusal = Refusal{r.error().code() == ErrorCode::kExhausted ? Reason::kPoolExhausted
                                                                  : Reason::kInvalidService,
                        "multi-pool: " + r.error().message()};
    return a;
  }
  a.ingress = r->assigned.addresses;
  std::stable_sort(a.ingress.begin(), a.ingress.end(), [&](const IpAddress& x, const IpAddress& y) {
    return EntryOf(group, fams, x) < EntryOf(group, fams, y);
  });
  a.acquired = r->assigned.acquired;
  a.released = r->assigned.released;
  a.message = "Assigned " + JoinIps(a.ingress) + " from " + owner.group_word + " (multi-pool)";
  const std::size_t added = Minus(a.ingress, svc.ingress).size();
  a.assigned_event =
      svc.ingress.empty()
          ? "Multi-pool: assigned " + std::to_string(added) + " IPs from pool " + owner.name
          : "Incremental multi-pool: added " + std::to_string(added) + " IPs (total " +
                std::to_string(a.ingress.size()) + ") from pool " + owner.name;
  for (std::size_t i : r->exhausted) {
    a.assigned_event +=
        (i == r->exhausted.front() ? "; no free address in " : ", ") + slot_entries[i]->written;
  }
  return a;
}

}  // namespace pylon::allocator
