// The status the allocator writes on ServiceGroups and LoadBalancerClasses (`/status`), built from
// the validation result and the pool usage, compared with what the object shows so an unchanged
// status is never written. Pure.
//
// Format (integration notes):
//   status: {observedGeneration, valid, message, warnings: [..],
//            ipv4: {size: "<decimal>", inUse: "<decimal>"}, ipv6: {...},
//            conditions: [{type: "Valid", status: "True"|"False", reason, message,
//                          lastTransitionTime, observedGeneration}],
//            conflicts: [..], conflictCount: N   (only while addresses are in conflict, see
//            PoolUsage), probeAhead: {ipv4: [..], ipv6: [..]} (see PoolUsage),
//            and for a purelb.io/v2 group in force, PureLB 0.17's names (docs/purelb-v2.md):
//            announce: "Local"|"Remote", ipam: "Cluster", addresses: [ranges as written, IPv4
//            first], allocatedIPv4/allocatedIPv6/availableIPv4/availableIPv6: "<decimal>"
//            (strings, where PureLB has int64: a /64 does not fit), boundNamespaces: [..]}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

#include "allocator/conflict_book.h"
#include "allocator/decision.h"
#include "config/validate.h"
#include "net/ip.h"

namespace pylon::allocator {

inline constexpr const char* kConfigConditionValid = "Valid";
inline constexpr const char* kConfigReasonValid = "InForce";
inline constexpr const char* kConfigReasonInvalid = "Rejected";
inline constexpr const char* kEventInvalidConfig = "InvalidConfig";

struct PoolUsage {
  net::Uint128 in_use_v4 = 0;  // distinct addresses held, of the version in force
  net::Uint128 in_use_v6 = 0;
  // Address conflicts in force in this group/class (ConflictBook::ForPool). Shown as
  //   conflicts: [{address, mac, node, interface, service, since, until,
  //                action: "Reallocated"|"Refused"|"Skipped"}], conflictCount: <addresses>
  // only when there is at least one.
  std::vector<ConflictReport> conflicts;
  // Probe ahead (probe_ahead.h): the next addresses the pool hands out, per family, shown as
  //   probeAhead: {ipv4: [..], ipv6: [..]}
  // when `probe_ahead` is set (a ServiceGroup with local addresses, probe ahead on).
  bool probe_ahead = false;
  std::vector<net::IpAddress> next_v4;
  std::vector<net::IpAddress> next_v6;
  // The version in force, when there is one (its mode, ranges and namespaces for the v2 fields).
  std::optional<config::Group> in_force;
};

struct ConfigStatusWrite {
  // The whole object with its new status for PUT /status; nullopt when unchanged.
  std::optional<Json> object;
  // A Warning event to record on the object when it has just become (or stays, with a new
  // message) invalid; nullopt otherwise.
  std::optional<EventSpec> event;
};

// `current` is the object as last read; `now` an RFC 3339 Time for lastTransitionTime.
ConfigStatusWrite PlanConfigStatus(const Json& current, const config::ObjectStatus& status,
                                   const PoolUsage& usage, const std::string& now);

}  // namespace pylon::allocator
