// The allocator's metric families before anything happened: every series known up front exists
// at 0, so a dashboard or an alert sees it from the start (docs/operate.md, Metrics).
#include "allocator/allocator_metrics.h"

#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace pylon::allocator {
namespace {

// The sample lines of an exposition, by family: name → {"{labels} value", ...}.
std::map<std::string, std::set<std::string>> Samples(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto end = line.find_first_of("{ ");
    out[line.substr(0, end)].insert(line.substr(end));
  }
  return out;
}

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

struct Family {
  const char* name;
  const char* type;                // as in "# TYPE"
  std::set<std::string> at_start;  // "{labels} 0" lines; empty: no series yet
};

TEST(AllocatorMetrics, EverySeriesKnownUpFrontStartsAtZero) {
  // Every family the allocator exports, and its series before anything happened.
  const Family families[] = {
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
  const auto samples = Samples(text);
  std::set<std::string> names;
  for (const Family& f : families) {
    SCOPED_TRACE(f.name);
    names.insert(f.name);
    EXPECT_NE(text.find(std::string("# TYPE ") + f.name + " " + f.type + "\n"), std::string::npos)
        << text;
    auto it = samples.find(f.name);
    EXPECT_EQ(it == samples.end() ? std::set<std::string>{} : it->second, f.at_start) << text;
  }
  for (const auto& [name, lines] : samples) EXPECT_TRUE(names.count(name)) << "unlisted " << name;
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
  EXPECT_EQ(Samples(registry.Render()).count(kMetricPoolSize), 0u);
}

}  // namespace
}  // namespace pylon::allocator
