// The write planner: what changes is written, what does not change is never written.
#include "allocator/service_writes.h"

#include <gtest/gtest.h>

#include "test_objects.h"

namespace pylon::allocator {
namespace {

using json = nlohmann::json;
using testing::SvcSpec;

Decision Allocated(std::vector<std::string> ips, std::string from = "localdual") {
  Decision d;
  d.outcome = Outcome::kAllocated;
  for (const auto& ip : ips) d.ingress.push_back(*net::IpAddress::Parse(ip));
  d.allocated_by = "Pylon";
  d.allocated_from = std::move(from);
  d.condition = Condition{true, "Allocated", "Assigned"};
  return d;
}

TEST(ServiceWritesTest, FirstAllocationWritesStatusThenAnnotations) {
  json svc = testing::ServiceJson(SvcSpec{});
  ServiceWrites w = PlanServiceWrites(svc, Allocated({"192.0.2.10", "2001:db8::1"}), "T1");
  ASSERT_TRUE(w.status.has_value());
  const json& st = (*w.status)["status"];
  EXPECT_EQ(
      st["loadBalancer"]["ingress"],
      json::parse(R"([{"ip":"192.0.2.10","ipMode":"VIP"},{"ip":"2001:db8::1","ipMode":"VIP"}])"));
  ASSERT_EQ(st["conditions"].size(), 1u);
  EXPECT_EQ(st["conditions"][0]["type"], "purelb.io/AddressAllocated");
  EXPECT_EQ(st["conditions"][0]["status"], "True");
  EXPECT_EQ(st["conditions"][0]["lastTransitionTime"], "T1");
  EXPECT_EQ((*w.status)["metadata"]["resourceVersion"], "10");  // conditional PUT
  ASSERT_TRUE(w.annotations.has_value());
  EXPECT_EQ(*w.annotations, json::parse(R"({"metadata":{"annotations":{
      "purelb.io/allocated-by":"Pylon","purelb.io/allocated-from":"localdual"}}})"));
}

TEST(ServiceWritesTest, UnchangedValuesAreNeverWritten) {
  json svc = testing::ServiceJson(SvcSpec{});
  Decision d = Allocated({"192.0.2.10"});
  ServiceWrites w = PlanServiceWrites(svc, d, "T1");
  svc["status"] = (*w.status)["status"];
  svc["metadata"]["annotations"] = (*w.annotations)["metadata"]["annotations"];
  ServiceWrites again = PlanServiceWrites(svc, d, "T2");
  EXPECT_TRUE(again.empty());
}

TEST(ServiceWritesTest, OtherConditionsKeptAndTransitionTimeOnlyOnChange) {
  json svc = testing::ServiceJson(SvcSpec{});
  svc["status"]["conditions"] = json::parse(R"([
      {"type":"other.io/X","status":"True","reason":"R","message":"m","lastTransitionTime":"T0"},
      {"type":"purelb.io/AddressAllocated","status":"True","reason":"Allocated","message":"old",
       "lastTransitionTime":"T0"}])");
  Decision d = Allocated({"192.0.2.10"});
  ServiceWrites w = PlanServiceWrites(svc, d, "T1");
  ASSERT_TRUE(w.status.has_value());
  const json& conds = (*w.status)["status"]["conditions"];
  ASSERT_EQ(conds.size(), 2u);
  EXPECT_EQ(conds[0]["type"], "other.io/X");
  EXPECT_EQ(conds[1]["message"], "Assigned");
  EXPECT_EQ(conds[1]["lastTransitionTime"], "T0");  // status stayed True
  Decision refused;
  refused.outcome = Outcome::kRefused;
  refused.condition = Condition{false, "PoolExhausted", "full"};
  w = PlanServiceWrites(svc, refused, "T2");
  ASSERT_TRUE(w.status.has_value());
  EXPECT_EQ((*w.status)["status"]["conditions"][1]["lastTransitionTime"], "T2");
}

TEST(ServiceWritesTest, RefusalClearsIngressAndAnnotations) {
  SvcSpec s;
  s.ingress = {"192.0.2.10"};
  s.annotations = {
      {"purelb.io/allocated-by", "Pylon"}, {"purelb.io/allocated-from", "default"}, {"keep", "me"}};
  json svc = testing::ServiceJson(s);
  Decision refused;
  refused.outcome = Outcome::kRefused;
  refused.condition = Condition{false, "AddressInUse", "taken"};
  ServiceWrites w = PlanServiceWrites(svc, refused, "T");
  ASSERT_TRUE(w.status.has_value());
  EXPECT_FALSE((*w.status)["status"]["loadBalancer"].contains("ingress"));
  ASSERT_TRUE(w.annotations.has_value());
  EXPECT_EQ(*w.annotations, json::parse(R"({"metadata":{"annotations":{
      "purelb.io/allocated-by":null,"purelb.io/allocated-from":null}}})"));
}

TEST(ServiceWritesTest, ReleaseWritesOnlyWithCleanup) {
  SvcSpec s;
  s.type = "ClusterIP";
  s.annotations = {{"purelb.io/allocated-by", "Pylon"}};
  json svc = testing::ServiceJson(s);
  svc["status"]["conditions"] = json::parse(
      R"([{"type":"purelb.io/AddressAllocated","status":"True","reason":"Allocated",
           "message":"m","lastTransitionTime":"T0"}])");
  Decision d;
  d.outcome = Outcome::kReleased;
  d.cleanup = false;
  EXPECT_TRUE(PlanServiceWrites(svc, d, "T").empty());
  d.cleanup = true;
  ServiceWrites w = PlanServiceWrites(svc, d, "T");
  ASSERT_TRUE(w.status.has_value());
  EXPECT_FALSE((*w.status)["status"].contains("conditions"));
  ASSERT_TRUE(w.annotations.has_value());
  Decision ignored;
  EXPECT_TRUE(PlanServiceWrites(svc, ignored, "T").empty());
}

TEST(ServiceWritesTest, CurrentConditionParses) {
  json svc = testing::ServiceJson(SvcSpec{});
  EXPECT_FALSE(CurrentCondition(svc).has_value());
  svc["status"]["conditions"] = json::parse(
      R"([{"type":"purelb.io/AddressAllocated","status":"False","reason":"NoSuchClass",
           "message":"m"}])");
  auto c = CurrentCondition(svc);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, (Condition{false, "NoSuchClass", "m"}));
  svc["status"]["conditions"] = 5;  // malformed: no condition, no crash
  EXPECT_FALSE(CurrentCondition(svc).has_value());
}

// purelb.io/v2 groups: pool-type and skip-ipv6-dad written with the allocation, removed when
// they no longer apply or the Service is refused; v1 groups never get them.
TEST(ServiceWritesTest, V2PoolTypeAndSkipDadAnnotations) {
  struct Row {
    const char* what;
    std::map<std::string, std::string> before;
    std::optional<std::string> pool_type;
    bool skip_dad;
    bool refused;
    const char* patch;  // nullptr: no annotation write
  };
  const std::map<std::string, std::string> ours = {{"purelb.io/allocated-by", "Pylon"},
                                                   {"purelb.io/allocated-from", "localdual"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    auto m = ours;
    m.insert(extra.begin(), extra.end());
    return m;
  };
  const Row rows[] = {
      {"v2 local, skipIPv6DAD", ours, "local", true, false,
       R"({"purelb.io/pool-type":"local","purelb.io/skip-ipv6-dad":"true"})"},
      {"v2 remote", ours, "remote", false, false, R"({"purelb.io/pool-type":"remote"})"},
      {"unchanged: nothing written", with({{"purelb.io/pool-type", "remote"}}), "remote", false,
       false, nullptr},
      {"skipIPv6DAD turned off: removed",
       with({{"purelb.io/pool-type", "local"}, {"purelb.io/skip-ipv6-dad", "true"}}), "local",
       false, false, R"({"purelb.io/skip-ipv6-dad":null})"},
      {"v1 group: a stale pool-type removed", with({{"purelb.io/pool-type", "local"}}),
       std::nullopt, false, false, R"({"purelb.io/pool-type":null})"},
      {"refused: every trace removed",
       with({{"purelb.io/pool-type", "local"}, {"purelb.io/skip-ipv6-dad", "true"}}), std::nullopt,
       false, true,
       R"({"purelb.io/allocated-by":null,"purelb.io/allocated-from":null,
           "purelb.io/pool-type":null,"purelb.io/skip-ipv6-dad":null})"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    SvcSpec spec;
    spec.annotations = row.before;
    spec.ingress = {"192.0.2.10"};
    json svc = testing::ServiceJson(spec);
    Decision d = Allocated({"192.0.2.10"});
    d.pool_type = row.pool_type;
    d.skip_ipv6_dad = row.skip_dad;
    if (row.refused) {
      d = Decision{};
      d.outcome = Outcome::kRefused;
      d.reason = Reason::kPoolExhausted;
      d.condition = Condition{false, "PoolExhausted", "full"};
    }
    ServiceWrites w = PlanServiceWrites(svc, d, "T");
    if (row.patch == nullptr) {
      EXPECT_FALSE(w.annotations.has_value()) << w.annotations->dump();
    } else {
      ASSERT_TRUE(w.annotations.has_value());
      EXPECT_EQ((*w.annotations)["metadata"]["annotations"], json::parse(row.patch));
    }
  }
}

}  // namespace
}  // namespace pylon::allocator
