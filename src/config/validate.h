// Cross-object validation: turns every candidate ServiceGroup and LoadBalancerClass (as listed
// from the API) plus the previously in-force config into the new in-force config and one status
// per candidate. Pure: no I/O, deterministic.
//
// Rules, applied in this order:
// 1. Each candidate is parsed on its own (parse.h); an invalid one is rejected. A second
//    candidate with the same kind/namespace/name is rejected as a duplicate.
// 2. A candidate whose content equals its in-force version stays in force (metadata refreshed).
//    An invalid candidate whose previous version is in force leaves that previous version in force
//    ("the last valid config stays in force").
// 3. Edits of in-force objects are checked, oldest object first (creationTimestamp, then kind
//    name, namespace, name; objects without a timestamp sort last), against every address held in
//    force by any other object. An edit that overlaps is rejected and the previous version stays.
//    Edits are retried until none more can be accepted, so an object may take up addresses another
//    edit releases in the same round.
// 4. New objects (no version in force) are checked the same way, oldest first: when two overlap,
//    the later-created one is rejected and the earlier stays; one that overlaps an object in
//    force is rejected.
// Overlap is checked on allocatable ranges (after the network/broadcast exclusions), in both
// directions of containment. The result never contains two objects with overlapping ranges.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"

#include "config/group.h"
#include "config/object_meta.h"
#include "net/ip.h"

namespace pylon::config {

// Where an address lives in the in-force config. The pointers stay valid as long as the
// InForceConfig that returned them (it is immutable).
struct AddressMatch {
  const Group* group = nullptr;
  const PoolEntry* entry = nullptr;
  std::optional<net::Prefix> subnet;  // the entry's subnet (none for a class start/end entry)
  int aggregation_length = 0;         // PoolEntry::AggregationLength()
};

struct ValidationResult;

// The groups in force, keyed by (kind, namespace, name): ServiceGroups are namespaced, classes
// have an empty namespace, so the two never collide. Invariant: no two allocatable ranges of
// different groups overlap (a group's own ranges never overlap either). Only ValidateConfig
// builds a non-empty one. Immutable value; safe to share read-only across threads.
class InForceConfig {
 public:
  InForceConfig() = default;

  const std::map<ConfigKey, Group>& groups() const { return groups_; }
  bool empty() const { return groups_.empty(); }
  const Group* Find(const ConfigKey& key) const;
  const Group* FindServiceGroup(std::string_view ns, std::string_view name) const;
  const Group* FindClass(std::string_view name) const;
  // The group and entry whose allocatable ranges contain `address`; O(log n).
  std::optional<AddressMatch> FindAddress(const net::IpAddress& address) const;

 private:
  friend ValidationResult ValidateConfig(std::span<const Json> candidates,
                                         const InForceConfig& previous);
  void Put(Group g);
  void BuildIndex();

  struct IndexEntry {
    net::AddressRange range;
    ConfigKey key;
    std::size_t entry = 0;
  };
  std::map<ConfigKey, Group> groups_;
  std::vector<IndexEntry> index_v4_, index_v6_;  // sorted by range start, disjoint
};

// The status of one candidate object, for its status subresource, conditions and events.
struct ObjectStatus {
  ConfigKey key;
  std::int64_t observed_generation = 0;
  // True when the observed version is the one in force.
  bool valid = false;
  // "in force", or why the observed version was rejected and which version (if any) is used:
  // "generation 3 rejected: <reason>; generation 2 stays in force".
  std::string message;
  // Warnings of the observed version (e.g. host bits set), even when it was rejected.
  std::vector<std::string> warnings;
  // Generation of the version in force, if any (== observed_generation when valid).
  std::optional<std::int64_t> in_force_generation;
  // Allocatable addresses of the version in force (0 when none is).
  net::Uint128 size_v4 = 0;
  net::Uint128 size_v6 = 0;

  net::Uint128 size(net::Family f) const { return f == net::Family::kV4 ? size_v4 : size_v6; }
  // Decimal text of size(f): exact, and beyond int64 for big IPv6 pools.
  std::string SizeString(net::Family f) const { return net::ToDecimal(size(f)); }
  // The status fields as JSON, for the object's status subresource:
  // {"valid", "message", "warnings": [...], "observedGeneration", "inForceGeneration" (when some
  //  version is in force), "poolSize": {"IPv4": "<decimal>", "IPv6": "<decimal>"}}.
  // Sizes are strings because a /64 or wider does not fit an int64.
  Json ToJson() const;
};

struct ValidationResult {
  InForceConfig config;
  std::vector<ObjectStatus> statuses;  // one per candidate, in candidate order
};

ValidationResult ValidateConfig(std::span<const Json> candidates, const InForceConfig& previous);

}  // namespace pylon::config
