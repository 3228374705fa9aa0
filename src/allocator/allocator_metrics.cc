#include "allocator/allocator_metrics.h"

namespace pylon::allocator {

AllocatorMetrics::AllocatorMetrics(metrics::Registry& registry) : registry_(registry) {
  using metrics::Type;
  registry_.Describe(kMetricPoolSize, "Addresses in the pools of a ServiceGroup or class",
                     Type::kGauge);
  registry_.Describe(kMetricPoolInUse, "Addresses of a ServiceGroup or class held by Services",
                     Type::kGauge);
  registry_.Describe(kMetricAllocations, "Services given new addresses", Type::kCounter);
  registry_.Describe(kMetricReleases, "Services whose addresses were released", Type::kCounter);
  registry_.Describe(kMetricRejections, "Allocations refused, by reason", Type::kCounter);
  registry_.Describe(kMetricApiErrors, "Failed API requests, by verb and error code",
                     Type::kCounter);
  registry_.Describe(kMetricConflicts, "Writes answered 409 Conflict (requeued)", Type::kCounter);
  registry_.Describe(kMetricIsLeader, "1 while this replica holds the leader lease", Type::kGauge);
  registry_.Describe(kMetricQueueDepth, "Keys waiting in the work queue", Type::kGauge);
  registry_.Set(kMetricIsLeader, {}, 0);
  registry_.Set(kMetricAllocations, {}, 0);
  registry_.Set(kMetricReleases, {}, 0);
  registry_.Set(kMetricConflicts, {}, 0);
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
