// Which address families a Service gets (docs/design.md "Allocation"): the Service's ipFamilies in
// order, limited to the families its ServiceGroup / LoadBalancerClass has pools for, under its
// ipFamilyPolicy. Pure.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/ip.h"

namespace pylon::pool {

enum class IpFamilyPolicy { kSingleStack, kPreferDualStack, kRequireDualStack };

// Kubernetes spelling; "" means SingleStack (the API default when the field is unset).
Result<IpFamilyPolicy> ParseIpFamilyPolicy(std::string_view text);
std::string_view IpFamilyPolicyName(IpFamilyPolicy policy);

struct FamilySelection {
  // The Service's spec.ipFamilies, in order; may be empty (then the cluster's primary family is
  // first). At most two, distinct.
  std::vector<net::Family> service_families;
  IpFamilyPolicy policy = IpFamilyPolicy::kSingleStack;
  // Families the group/class has at least one pool range for, any order.
  std::vector<net::Family> offered;
  // For error messages only, e.g. "ServiceGroup localv4" or "LoadBalancerClass public".
  std::string_view pool_name;
  net::Family primary = net::Family::kV4;
};

// Returns the families to allocate, in order, one address each:
//   SingleStack      -> the first of the Service's families that is offered; error if none.
//   PreferDualStack  -> every Service family that is offered, in order; error if none.
//   RequireDualStack -> both families (the Service's order, then the other); error unless both
//                       are offered.
// Empty service_families means [primary] under SingleStack and [primary, other] otherwise.
// Errors: kInvalidArgument (malformed ipFamilies), kUnsupported (pool lacks the family), each
// with a message naming the policy and the pool.
Result<std::vector<net::Family>> SelectFamilies(const FamilySelection& in);

}  // namespace pylon::pool
