// The allocator's Prometheus families, registered on the component's own Registry. Thread-safe
// (the Registry is).
#pragma once

#include <string>
#include <string_view>

#include "metrics/registry.h"
#include "net/ip.h"

namespace pylon::allocator {

inline constexpr const char* kMetricPoolSize = "purelb_address_pool_size";
inline constexpr const char* kMetricPoolInUse = "purelb_address_pool_addresses_in_use";
inline constexpr const char* kMetricAllocations = "purelb_allocator_allocations_total";
inline constexpr const char* kMetricReleases = "purelb_allocator_releases_total";
inline constexpr const char* kMetricRejections = "purelb_allocator_rejections_total";
inline constexpr const char* kMetricApiErrors = "purelb_allocator_api_errors_total";
inline constexpr const char* kMetricConflicts = "purelb_allocator_conflicts_total";
inline constexpr const char* kMetricIsLeader = "purelb_allocator_is_leader";
inline constexpr const char* kMetricQueueDepth = "purelb_allocator_workqueue_depth";

// The `verb` values of kMetricApiErrors: the writes Controller::CountApiError counts.
inline constexpr const char* kApiVerbs[] = {"update_status", "patch", "update_config_status"};

// Every series known up front exists at 0 from construction (metrics/registry.h): the unlabelled
// families, rejections by every refusal reason, API errors by every verb and error code. The pool
// families are per pool, a name not known up front: none until the first pool is counted.

class AllocatorMetrics {
 public:
  explicit AllocatorMetrics(metrics::Registry& registry);

  // Pool figures per pool (group/class name as in allocated-from, with its kind) and family.
  // Sizes beyond 2^53 lose precision as doubles; the exact figure is in the config status.
  void SetPool(std::string_view kind, std::string_view name, net::Family family, net::Uint128 size,
               net::Uint128 in_use);
  void RemovePool(std::string_view kind, std::string_view name);
  void Allocation() { registry_.Add(kMetricAllocations, {}, 1); }
  void Release() { registry_.Add(kMetricReleases, {}, 1); }
  void Rejection(std::string_view reason);
  // `verb` e.g. "update_status", "patch", "update_config_status"; `code` the ErrorCode name.
  void ApiError(std::string_view verb, std::string_view code);
  void Conflict() { registry_.Add(kMetricConflicts, {}, 1); }
  void SetLeader(bool leader) { registry_.Set(kMetricIsLeader, {}, leader ? 1 : 0); }
  void SetQueueDepth(std::size_t n) {
    registry_.Set(kMetricQueueDepth, {}, static_cast<double>(n));
  }

  metrics::Registry& registry() { return registry_; }

 private:
  metrics::Registry& registry_;
};

}  // namespace pylon::allocator
