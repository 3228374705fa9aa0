#include "allocator/allocator_metrics.h"

#include <iterator>
#include <vector>

#include "allocator/decision.h"
#include "common/result.h"

namespace pylon::allocator {
namespace {

// The names of every Reason a refusal can carry (all but kNone). Reason is a plain enumeration
// whose ReasonName answers "?" past its last enumerator.
std::vector<std::string> RejectionReasons() {
  std::vector<std::string> out;
  for (int i = static_cast<int>(Reason::kNone) + 1;; ++i) {
    std::string_view name = ReasonName(static_cast<Reason>(i));
    if (name == "?") break;
    out.emplace_back(name);
  }
  return out;
}

// The codes an API error is counted under: every ErrorCode but kConflict (counted in
// purelb_allocator_conflicts_total). ErrorCodeName answers "Unknown" past the last enumerator.
std::vector<std::string> ApiErrorCodes() {
  std::vector<std::string> out;
  for (int i = 0;; ++i) {
    std::string_view name = ErrorCodeName(static_cast<ErrorCode>(i));
    if (name == "Unknown") break;
    if (static_cast<ErrorCode>(i) != ErrorCode::kConflict) out.emplace_back(name);
  }
  return out;
}

}  // namespace

AllocatorMetrics::AllocatorMetrics(metrics::Registry& registry) : registry_(registry) {
  using metrics::Type;
  const std::vector<metrics::LabelValues> pool = {{"kind", {}}, {"pool", {}}, {"family", {}}};
  registry_.Describe(kMetricPoolSize, "Addresses in the pools of a ServiceGroup or class",
                     Type::kGauge, pool);
  registry_.Describe(kMetricPoolInUse, "Addresses of a ServiceGroup or class held by Services",
                     Type::kGauge, pool);
  registry_.Describe(kMetricAllocations, "Services given new addresses", Type::kCounter);
  registry_.Describe(kMetricReleases, "Services whose addresses were released", Type::kCounter);
  registry_.Describe(kMetricRejections, "Allocations refused, by reason", Type::kCounter,
                     {{"reason", RejectionReasons()}});
  registry_.Describe(
      kMetricApiErrors, "Failed API requests, by verb and error code", Type::kCounter,
      {{"verb", {std::begin(kApiVerbs), std::end(kApiVerbs)}}, {"code", ApiErrorCodes()}});
  registry_.Describe(kMetricConflicts, "Writes answered 409 Conflict (requeued)", Type::kCounter);
  registry_.Describe(kMetricIsLeader, "1 while this replica holds the leader lease", Type::kGauge);
  registry_.Describe(kMetricQueueDepth, "Keys waiting in the work queue", Type::kGauge);
}

void AllocatorMetrics::SetPool(std::string_view kind, std::string_view name, net::Family family,
                               net::Uint128 size, net::Uint128 in_use) {
  metrics::Labels labels = {{"kind", std::string(kind)},
                            {"pool", std::string(name)},
                            {"family", std::string(net::FamilyName(family))}};
  registry_.Set(kMetricPoolSize, labels, static_cast<double>(size));
  registry_.Set(kMetricPoolInUse, labels, static_cast<double>(in_use));
}

void AllocatorMetrics::RemovePool(std::string_view kind, std::string_view name) {
  for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
    metrics::Labels labels = {{"kind", std::string(kind)},
                              {"pool", std::string(name)},
                              {"family", std::string(net::FamilyName(f))}};
    registry_.Remove(kMetricPoolSize, labels);
    registry_.Remove(kMetricPoolInUse, labels);
  }
}

void AllocatorMetrics::Rejection(std::string_view reason) {
  registry_.Add(kMetricRejections, {{"reason", std::string(reason)}}, 1);
}

void AllocatorMetrics::ApiError(std::string_view verb, std::string_view code) {
  registry_.Add(kMetricApiErrors, {{"verb", std::string(verb)}, {"code", std::string(code)}}, 1);
}

}  // namespace pylon::allocator
