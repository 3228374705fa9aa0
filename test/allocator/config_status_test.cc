// Config status: exact decimal figures, compare-before-write, a Warning only on a new rejection.
#include "allocator/config_status.h"

#include <gtest/gtest.h>

#include "test_objects.h"

namespace pylon::allocator {
namespace {

using json = nlohmann::json;

TEST(ConfigStatusTest, ValidGroupWithHugeIPv6Pool) {
  json obj = testing::ServiceGroupJson(
      "big", {{"v6pools", {{{"pool", "2001:db8:1::/48"}, {"subnet", "2001:db8:1::/48"}}}}});
  obj["metadata"]["generation"] = 3;
  auto vr = config::ValidateConfig(std::vector<json>{obj}, config::InForceConfig{});
  ASSERT_EQ(vr.statuses.size(), 1u);
  ASSERT_TRUE(vr.statuses[0].valid) << vr.statuses[0].message;
  PoolUsage usage;
  usage.in_use_v6 = 7;
  ConfigStatusWrite w = PlanConfigStatus(obj, vr.statuses[0], usage, "T1");
  ASSERT_TRUE(w.object.has_value());
  const json& st = (*w.object)["status"];
  EXPECT_EQ(st["valid"], true);
  EXPECT_EQ(st["observedGeneration"], 3);
  // 2^80 minus the subnet-router anycast address.
  EXPECT_EQ(st["ipv6"]["size"], "1208925819614629174706175");
  EXPECT_EQ(st["ipv6"]["inUse"], "7");
  EXPECT_EQ(st["ipv4"]["size"], "0");
  EXPECT_EQ(st["conditions"][0]["type"], "Valid");
  EXPECT_EQ(st["conditions"][0]["status"], "True");
  EXPECT_FALSE(w.event.has_value());
  // Written once, then unchanged: no second write.
  json written = *w.object;
  EXPECT_FALSE(PlanConfigStatus(written, vr.statuses[0], usage, "T2").object.has_value());
  usage.in_use_v6 = 8;
  auto changed = PlanConfigStatus(written, vr.statuses[0], usage, "T3");
  ASSERT_TRUE(changed.object.has_value());
  EXPECT_EQ((*changed.object)["status"]["conditions"][0]["lastTransitionTime"], "T1");
}

TEST(ConfigStatusTest, InvalidWarnsOnceAndLastValidStaysInForce) {
  json good = testing::ServiceGroupJson(
      "g", {{"v4pools", {{{"pool", "192.0.2.10-192.0.2.20"}, {"subnet", "192.0.2.0/24"}}}}});
  auto first = config::ValidateConfig(std::vector<json>{good}, config::InForceConfig{});
  ASSERT_TRUE(first.statuses[0].valid);
  json bad = testing::ServiceGroupJson(
      "g", {{"v4pools", {{{"pool", "10.0.0.1-10.0.0.5"}, {"subnet", "192.0.2.0/24"}}}}},
      "2024-01-01T00:00:00Z", 2);
  auto second = config::ValidateConfig(std::vector<json>{bad}, first.config);
  ASSERT_FALSE(second.statuses[0].valid);
  EXPECT_NE(second.config.FindServiceGroup("purelb-system", "g"), nullptr);
  ConfigStatusWrite w = PlanConfigStatus(bad, second.statuses[0], PoolUsage{}, "T");
  ASSERT_TRUE(w.object.has_value());
  EXPECT_EQ((*w.object)["status"]["valid"], false);
  EXPECT_EQ((*w.object)["status"]["ipv4"]["size"], "11");  // the version still in force
  EXPECT_EQ((*w.object)["status"]["conditions"][0]["status"], "False");
  ASSERT_TRUE(w.event.has_value());
  EXPECT_TRUE(w.event->warning);
  EXPECT_EQ(w.event->reason, "InvalidConfig");
  auto again = PlanConfigStatus(*w.object, second.statuses[0], PoolUsage{}, "T");
  EXPECT_FALSE(again.object.has_value());
  EXPECT_FALSE(again.event.has_value());
}

// A purelb.io/v2 group also gets PureLB 0.17's status names, as exact decimal strings; a v1
// group does not.
TEST(ConfigStatusTest, V2GroupGetsPurelbCountsAsDecimalStrings) {
  json v2 = testing::V2GroupJson("big", json::parse(R"({"remote":{
      "v4pools":[{"pool":"203.0.113.10-203.0.113.19","subnet":"203.0.113.0/24"}],
      "v6pools":[{"pool":"2001:db8:1::/48","subnet":"2001:db8:1::/48"}]},
      "namespaces":["b","a"]})"));
  json v1 = testing::ServiceGroupJson(
      "old", {{"v4pools", {{{"pool", "192.0.2.10-192.0.2.20"}, {"subnet", "192.0.2.0/24"}}}}});
  auto vr = config::ValidateConfig(std::vector<json>{v2, v1}, config::InForceConfig{});
  ASSERT_TRUE(vr.statuses[0].valid) << vr.statuses[0].message;
  PoolUsage usage;
  usage.in_use_v4 = 3;
  usage.in_use_v6 = 2;
  usage.in_force = *vr.config.FindServiceGroup("purelb-system", "big");
  ConfigStatusWrite w = PlanConfigStatus(v2, vr.statuses[0], usage, "T");
  ASSERT_TRUE(w.object.has_value());
  const json& st = (*w.object)["status"];
  EXPECT_EQ(st["announce"], "Remote");
  EXPECT_EQ(st["ipam"], "Cluster");
  EXPECT_EQ(st["addresses"], json::array({"203.0.113.10-203.0.113.19", "2001:db8:1::/48"}));
  EXPECT_EQ(st["allocatedIPv4"], "3");
  EXPECT_EQ(st["availableIPv4"], "7");
  EXPECT_EQ(st["allocatedIPv6"], "2");
  // 2^80 - 1 (subnet-router anycast) - 2 in use: beyond int64.
  EXPECT_EQ(st["availableIPv6"], "1208925819614629174706173");
  EXPECT_EQ(st["boundNamespaces"], json::array({"a", "b"}));
  EXPECT_EQ(st["ipv6"]["size"], "1208925819614629174706175");
  // Unchanged: no second write.
  EXPECT_FALSE(PlanConfigStatus(*w.object, vr.statuses[0], usage, "T2").object.has_value());

  PoolUsage old_usage;
  old_usage.in_force = *vr.config.FindServiceGroup("purelb-system", "old");
  ConfigStatusWrite w1 = PlanConfigStatus(v1, vr.statuses[1], old_usage, "T");
  ASSERT_TRUE(w1.object.has_value());
  EXPECT_FALSE((*w1.object)["status"].contains("allocatedIPv4"));
  EXPECT_FALSE((*w1.object)["status"].contains("announce"));
}

}  // namespace
}  // namespace pylon::allocator
