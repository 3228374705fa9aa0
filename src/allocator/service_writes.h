// Turns a Decision into the writes it needs on one Service, comparing with what the Service shows
// so that an unchanged value is never written. Pure: JSON in, JSON out.
//
// Write order (restart safety): the status write (PUT .../status, conditional on the Service's
// resourceVersion) comes first, the annotation patch second. The status is the source of truth on
// restart (reconcile.h RebuildRecords), so a crash between the two writes leaves an address that
// the status shows and the rebuild claims again; the next reconcile then adds the missing
// annotations. The reverse order could leave annotations naming a pool with no address, which is
// harmless too, but the address would be invisible until the status write: status first keeps
// the window in which an address is held in memory only as short as one request.
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

#include "allocator/decision.h"
#include "model/service.h"

namespace pylon::allocator {

struct ServiceWrites {
  // The whole Service with its new status, for PUT /status (carries the resourceVersion read,
  // so a concurrent change gives 409). nullopt: the status is already as desired.
  std::optional<Json> status;
  // A JSON merge patch of metadata.annotations (null removes). nullopt: nothing to change.
  std::optional<Json> annotations;
  bool empty() const { return !status && !annotations; }
};

// `current` is the Service as last read; `now` is an RFC 3339 Time used as lastTransitionTime when
// the condition's status changes.
ServiceWrites PlanServiceWrites(const Json& current, const Decision& decision,
                                const std::string& now);

// Pylon's condition (type purelb.io/AddressAllocated) as the Service shows it, if present and
// well-formed.
std::optional<Condition> CurrentCondition(const Json& service);

}  // namespace pylon::allocator
