// coordination.k8s.io/v1 Lease helpers shared by the leader elector and the node agent's lease
// keeper. Times are MicroTime (exactly six fractional digits). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"
#include "k8s/object.h"

namespace pylon::k8s {

struct LeaseSpec {
  std::string holder_identity;  // "" = nobody holds it
  std::optional<int64_t> lease_duration_seconds;
  std::optional<WallTime> acquire_time;
  std::optional<WallTime> renew_time;
  int64_t lease_transitions = 0;

  friend bool operator==(const LeaseSpec&, const LeaseSpec&) = default;
};

// Reads `spec` of a Lease object; an absent spec or absent fields give defaults. Wrongly typed
// fields or unparsable times are errors.
Result<LeaseSpec> ParseLeaseSpec(const Json& lease);
// The `spec` object; optional fields are omitted when unset.
Json LeaseSpecToJson(const LeaseSpec& spec);
// A new Lease object to create.
Json MakeLease(std::string_view ns, std::string_view name, const LeaseSpec& spec);
// `lease` with its spec replaced; metadata (including resourceVersion, labels, annotations) kept,
// so a PUT of the result is conditional on the version read.
Json WithLeaseSpec(const Json& lease, const LeaseSpec& spec);

}  // namespace pylon::k8s
