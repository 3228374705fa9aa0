// Leases as election::Membership observes them, for tests that build a membership by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "election/membership.h"

namespace pylon::test_support {

// `node`'s Lease held by the node itself (holderIdentity = its name), renewed at `renew_time`
// (opaque: a change is a renewal), with `subnets` as its purelb.io/subnets annotation.
inline election::LeaseObservation HeldLease(const std::string& node, const std::string& renew_time,
                                            const std::string& subnets = "",
                                            std::optional<std::int64_t> duration_seconds = 10) {
  election::LeaseObservation o;
  o.node = election::NodeName(node);
  o.holder_identity = node;
  o.lease_duration_seconds = duration_seconds;
  o.renew_time = renew_time;
  o.subnets_annotation = subnets;
  return o;
}

// `node`'s Lease deleted.
inline election::LeaseObservation DeletedLease(const std::string& node) {
  election::LeaseObservation o;
  o.node = election::NodeName(node);
  o.deleted = true;
  return o;
}

}  // namespace pylon::test_support
