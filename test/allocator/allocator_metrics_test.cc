// The allocator's metric families before anything happened: every series known up front exists
// at 0, so a dashboard or an alert sees it from the start (docs/operate.md, Metrics).
#include "allocator/allocator_metrics.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/metrics.h"

namespace pylon::allocator {
namespace {

// Every refusal reason of a Service condition (docs/operate.md, troubleshooting).
const char* const kReasons[] = {
    "AddressInUse",      "OutsidePools",    "NoSuchClass",     "NoSuchServiceGroup",
    "FamilyUnavailable", "PoolExhausted",   "SharingConflict", "InvalidAnnotation",
    "InvalidService",    "AddressConflict", "NamespaceDenied", "AmbiguousNamespaceDefault",
    "MultiPoolRefused"};
// Every ErrorCode but Conflict (purelb_allocator_conflicts_total counts those).
const char* const kCodes[] = {"InvalidArgument", "NotFound",    "AlreadyExists", "OutOfRange",
                              "Exhausted",       "Unavailable", "Gone",          "Permission",
                              "Unsupported",     "Internal",    "System"};
const char* const kVerbs[] = {"update_status", "patch", "update_config_status"};

std::set<std::string> ByReason() {
  std::set<std::string> out;
  for (const char* r : kReasons) out.insert(std::string("{reason=\"") + r + "\"} 0");
  return out;
}

std::set<std::string> ByVerbAndCode() {
  std::set<std::string> out;
  for (const char* v : kVerbs) {
    for (const char* c : kCodes) {
      out.insert(std::string("{code=\"") + c + "\",verb=\"" + v + "\"} 0");
    }
  }
  return out;
}

using test_support::MetricFamily;

TEST(AllocatorMetrics, EverySeriesKnownUpFrontStartsAtZero) {
  // Every family the allocator exports, and its series before anything happened.
  const std::vector<MetricFamily> families = {
      // Per pool: its name is not known up front.
      {kMetricPoolSize, "gauge", {}},
      {kMetricPoolInUse, "gauge", {}},
      {kMetricAllocations, "counter", {" 0"}},
      {kMetricReleases, "counter", {" 0"}},
      {kMetricRejections, "counter", ByReason()},
      {kMetricApiErrors, "counter", ByVerbAndCode()},
      {kMetricConflicts, "counter", {" 0"}},
      {kMetricIsLeader, "gauge", {" 0"}},
      {kMetricQueueDepth, "gauge", {" 0"}},
  };
  metrics::Registry registry;
  AllocatorMetrics m(registry);
  const std::string text = registry.Render();
  test_support::ExpectFamiliesAtStart(text, families);
}

// Counting adds to the series that were there; a pool's series come and go with the pool.
TEST(AllocatorMetrics, CountsLandOnTheSeriesFromTheStart) {
  metrics::Registry registry;
  AllocatorMetrics m(registry);
  m.Rejection("PoolExhausted");
  m.ApiError("patch", "Unavailable");
  m.Allocation();
  m.SetPool("ServiceGroup", "localdual", net::Family::kV4, 16, 3);
  EXPECT_EQ(registry.Get(kMetricRejections, {{"reason", "PoolExhausted"}}), 1);
  EXPECT_EQ(registry.Get(kMetricApiErrors, {{"verb", "patch"}, {"code", "Unavailable"}}), 1);
  EXPECT_EQ(registry.Get(kMetricAllocations, {}), 1);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("purelb_allocator_rejections_total{reason=\"NoSuchClass\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("purelb_address_pool_size{family=\"IPv4\",kind=\"ServiceGroup\","
                      "pool=\"localdual\"} 16\n"),
            std::string::npos)
      << text;
  m.RemovePool("ServiceGroup", "localdual");
  EXPECT_EQ(test_support::Samples(registry.Render()).count(kMetricPoolSize), 0u);
}

}  // namespace
}  // namespace pylon::allocator
