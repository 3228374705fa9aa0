// Scenario tables for the pure reconcile core (reconcile.h): one pool state walked through rows,
// MetalLB style.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/reconcile.h"
#include "reconcile_world.h"
#include "test_objects.h"

namespace pylon::allocator::testing {
namespace {

TEST(ReconcileTest, SeedExamples) {
  World w({testing::SeedLocalDual(), testing::SeedPublicClass()});
  Decision d = w.Run(Dual("kuard-svc-dual-remote"));
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.168.10.225", "fc00:270:154:0:8000::4"}));
  EXPECT_EQ(d.allocated_by, "Pylon");
  EXPECT_EQ(d.allocated_from, "localdual");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "AddressAssigned");
  EXPECT_EQ(d.events[0].message,
            "Assigned {Ingress:[{IP:192.168.10.225 Hostname: Ports:[]} "
            "{IP:fc00:270:154:0:8000::4 Hostname: Ports:[]}]} from pool localdual");

  d = w.Run(Lace("web", "198.51.100.7,2001:db8:f00d::7"));
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"198.51.100.7", "2001:db8:f00d::7"}));
  EXPECT_EQ(d.allocated_from, "public");
}

TEST(ReconcileTest, IpFamiliesOrderIsKept) {
  World w({testing::SeedLocalDual()});
  SvcSpec s = Dual("v6first");
  s.families = {"IPv6", "IPv4"};
  Decision d = w.Run(s);
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"fc00:270:154:0:8000::4", "192.168.10.225"}));
}

TEST(ReconcileTest, RefusalsAndRecoveries) {
  World w({testing::SeedLocalDual(), testing::SeedPublicClass(), testing::SmallDefaultGroup()});
  SvcSpec nosuch;
  nosuch.name = "nosuch";
  nosuch.cls = "lace-cni.io/nosuch";
  SvcSpec missing_group;
  missing_group.name = "nogroup";
  missing_group.annotations = {{"purelb.io/service-group", "absent"}};
  SvcSpec v6only;
  v6only.name = "v6only";
  v6only.families = {"IPv6"};
  SvcSpec bad_ann = Lace("badann", "198.51.100.7,not-an-ip");
  SvcSpec two_v4 = Lace("twov4", "198.51.100.7,198.51.100.8");
  SvcSpec outside = Lace("outside", "10.0.0.1");
  SvcSpec a, b, c, d;
  a.name = "a";
  b.name = "b";
  c.name = "c";
  d.name = "d";
  SvcSpec taken = Lace("taken", "198.51.100.7");
  SvcSpec foreign;
  foreign.name = "foreign";
  foreign.cls = "example.com/other";
  SvcSpec require_dual_v4only;
  require_dual_v4only.name = "req";
  require_dual_v4only.families = {"IPv4", "IPv6"};
  require_dual_v4only.policy = "RequireDualStack";
  SvcSpec prefer_dual_v4only = require_dual_v4only;
  prefer_dual_v4only.name = "pref";
  prefer_dual_v4only.policy = "PreferDualStack";
  SvcSpec lbip;
  lbip.name = "lbip";
  lbip.load_balancer_ip = "192.0.2.99";

  Walk(w, {
              R("prefixed class matching nothing", nosuch, Outcome::kRefused, Reason::kNoSuchClass),
              R("missing ServiceGroup", missing_group, Outcome::kRefused, Reason::kNoSuchGroup),
              R("single-stack IPv6 against a v4-only group", v6only, Outcome::kRefused,
                Reason::kFamilyUnavailable),
              R("RequireDualStack against a v4-only group", require_dual_v4only, Outcome::kRefused,
                Reason::kFamilyUnavailable),
              R("PreferDualStack falls back to IPv4", prefer_dual_v4only, Outcome::kAllocated,
                Reason::kNone, {"192.0.2.10"}),
              R("malformed annotation", bad_ann, Outcome::kRefused, Reason::kInvalidAnnotation),
              R("two IPv4 requested", two_v4, Outcome::kRefused, Reason::kInvalidAnnotation),
              R("requested outside the pools", outside, Outcome::kRefused, Reason::kOutsidePools),
              R("spec.loadBalancerIP outside", lbip, Outcome::kRefused, Reason::kOutsidePools),
              R("seed lace request", Lace("web", "198.51.100.7"), Outcome::kAllocated,
                Reason::kNone, {"198.51.100.7", "2001:db8:f00d::1"}),
              R("same address requested again", taken, Outcome::kRefused, Reason::kAddressInUse),
              R("a gets the next default address", a, Outcome::kAllocated, Reason::kNone,
                {"192.0.2.11"}),
              R("b gets the last one", b, Outcome::kAllocated, Reason::kNone, {"192.0.2.12"}),
              R("c finds the pool exhausted", c, Outcome::kRefused, Reason::kPoolExhausted),
              R("foreign class is never touched", foreign, Outcome::kIgnored, Reason::kNone),
              R("a is deleted", a, Outcome::kReleased, Reason::kNone, {}, true),
              R("now c gets a's address", c, Outcome::kAllocated, Reason::kNone, {"192.0.2.11"}),
              R("the web Service moves to 198.51.100.8", Lace("web", "198.51.100.8"),
                Outcome::kAllocated, Reason::kNone, {"198.51.100.8", "2001:db8:f00d::1"}),
              R("and the taken one can have it", taken, Outcome::kAllocated, Reason::kNone,
                {"198.51.100.7", "2001:db8:f00d::2"}),
          });
}

TEST(ReconcileTest, RefusalWarnsOnceAndReleasesEverything) {
  World w({testing::SeedPublicClass()});
  Decision d = w.Run(Lace("web", "198.51.100.7"));
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  // An edit to an address outside the pools: refused, the old addresses are released.
  d = w.Run(Lace("web", "10.1.1.1"));
  ASSERT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_EQ(EventReasons(d), (std::vector<std::string>{"AllocationFailed", "AddressReleased"}));
  EXPECT_TRUE(d.events[0].warning);
  EXPECT_EQ(d.released.size(), 2u);
  // The same refusal again: the Service already shows the condition, so no new event.
  d = w.Run(Lace("web", "10.1.1.1"));
  ASSERT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_TRUE(d.events.empty());
  // The request fixed: allocated again.
  d = w.Run(Lace("web", "198.51.100.9"));
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_EQ(EventReasons(d), (std::vector<std::string>{"AddressAssigned"}));
}

// Configuration Pylon cannot read never takes an address away: a group or class deleted, or
// invalid across a restart (the last valid version lived only in memory), keeps every address its
// Services show; only a Service that asks (other group, deleted) loses them.
TEST(ReconcileTest, UnreadableConfigKeepsEveryAddress) {
  World w({testing::SmallDefaultGroup(), testing::SeedPublicClass()});
  SvcSpec a;
  a.name = "a";
  SvcSpec b;
  b.name = "b";
  SvcSpec fresh;
  fresh.name = "fresh";
  ASSERT_EQ(Ips(w.Run(a)), std::vector<std::string>{"192.0.2.10"});
  ASSERT_EQ(Ips(w.Run(b)), std::vector<std::string>{"192.0.2.11"});
  ASSERT_EQ(w.Run(Lace("web", "198.51.100.7")).outcome, Outcome::kAllocated);
  // What the allocator wrote on them (the World keeps only the status).
  a.annotations = b.annotations = {{"purelb.io/allocated-from", "default"}};
  SvcSpec web = Lace("web", "198.51.100.7");
  web.annotations["purelb.io/allocated-from"] = "public";
  SvcSpec b_moves = b;
  b_moves.annotations["purelb.io/service-group"] = "elsewhere";

  auto kept = [&](const SvcSpec& s, Reason reason, std::vector<std::string> ips) {
    Decision d = w.Run(s);
    EXPECT_EQ(OutcomeName(d.outcome), OutcomeName(Outcome::kKept)) << d.message;
    EXPECT_EQ(ReasonName(d.reason), ReasonName(reason));
    EXPECT_EQ(Ips(d), ips);
    EXPECT_TRUE(d.released.empty());
    EXPECT_FALSE(w.last_writes().annotations.has_value());  // allocated-by/-from stay
    return d;
  };

  // 1. Both deleted (SetPools evicts their pool state, as the controller's does).
  w.SetConfig({});
  Decision d = kept(a, Reason::kNoSuchGroup, {"192.0.2.10"});
  ASSERT_TRUE(d.condition.has_value());
  EXPECT_FALSE(d.condition->status);
  EXPECT_NE(d.condition->message.find("keeping 192.0.2.10"), std::string::npos)
      << d.condition->message;
  EXPECT_EQ(EventReasons(d), std::vector<std::string>{"AllocationFailed"});
  // The condition is written, the address is left as it is.
  ASSERT_TRUE(w.last_writes().status.has_value());
  EXPECT_EQ((*w.last_writes().status)["status"]["loadBalancer"]["ingress"][0]["ip"], "192.0.2.10");
  d = kept(a, Reason::kNoSuchGroup, {"192.0.2.10"});
  EXPECT_TRUE(d.events.empty()) << "the condition already says it";
  kept(web, Reason::kNoSuchClass, {"198.51.100.7", "2001:db8:f00d::1"});
  Walk(w, {R("a new Service gets nothing from a group not in force", fresh, Outcome::kRefused,
             Reason::kNoSuchGroup)});

  // 2. A restart while the group is invalid: the rebuild has no pool for it, nothing moves.
  json invalid = testing::SmallDefaultGroup();
  invalid["spec"]["local"]["v4pools"][0]["pool"] = "198.18.0.1-198.18.0.2";  // outside its subnet
  w.SetConfig({invalid, testing::SeedPublicClass()});
  EXPECT_FALSE(w.statuses()[0].valid);
  w.Restart({a, b, web});
  kept(a, Reason::kNoSuchGroup, {"192.0.2.10"});
  kept(b, Reason::kNoSuchGroup, {"192.0.2.11"});
  // The class is back (valid): web is allocated again with what it shows.
  d = w.Run(web);
  EXPECT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"198.51.100.7", "2001:db8:f00d::1"}));

  // 3. Only the Service asks for a release: b now names another group.
  Walk(w, {R("b names another (missing) group: released", b_moves, Outcome::kRefused,
             Reason::kNoSuchGroup)});

  // 4. The group is fixed: a keeps its address, the new Service gets the next one.
  w.SetConfig({testing::SmallDefaultGroup(), testing::SeedPublicClass()});
  d = w.Run(a);
  EXPECT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  Walk(w, {R("fresh", fresh, Outcome::kAllocated, Reason::kNone, {"192.0.2.11"})});
}

TEST(ReconcileTest, EditsReallocate) {
  World w({testing::SeedLocalDual(), testing::SeedPublicClass(), testing::SmallDefaultGroup()});
  SvcSpec s;
  s.name = "edit";
  std::vector<Row> rows;
  rows.push_back(R("default group", s, Outcome::kAllocated, Reason::kNone, {"192.0.2.10"}));
  s.annotations["purelb.io/addresses"] = "192.0.2.12";
  rows.push_back(
      R("requested address edit", s, Outcome::kAllocated, Reason::kNone, {"192.0.2.12"}));
  s.annotations.erase("purelb.io/addresses");
  rows.push_back(R("request removed keeps the address", s, Outcome::kAllocated, Reason::kNone,
                   {"192.0.2.12"}));
  s.annotations["purelb.io/service-group"] = "localdual";
  rows.push_back(R("group edit", s, Outcome::kAllocated, Reason::kNone, {"192.168.10.225"}));
  s.families = {"IPv4", "IPv6"};
  s.policy = "RequireDualStack";
  rows.push_back(R("families edit", s, Outcome::kAllocated, Reason::kNone,
                   {"192.168.10.225", "fc00:270:154:0:8000::4"}));
  s.families = {"IPv6"};
  s.policy = "SingleStack";
  rows.push_back(
      R("back to one family", s, Outcome::kAllocated, Reason::kNone, {"fc00:270:154:0:8000::4"}));
  s.type = "ClusterIP";
  rows.push_back(R("type ClusterIP releases", s, Outcome::kReleased, Reason::kNone));
  Walk(w, rows);
  EXPECT_EQ(w.pool().address_count(), 0u);
}

TEST(ReconcileTest, ClassChangeReleasesAndReallocates) {
  World w({testing::SeedPublicClass(), testing::SmallDefaultGroup()});
  SvcSpec s;
  s.name = "cc";
  Decision d = w.Run(s);
  ASSERT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10"}));
  s.cls = "lace-cni.io/public";
  d = w.Run(s);
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"198.51.100.1"}));
  EXPECT_EQ(d.released.size(), 1u);
  EXPECT_EQ(EventReasons(d), (std::vector<std::string>{"AddressReleased", "AddressAssigned"}));
  s.cls = "example.com/other";
  d = w.Run(s);
  EXPECT_EQ(d.outcome, Outcome::kReleased);
  EXPECT_FALSE(d.cleanup);  // a foreign class is never written to
  EXPECT_EQ(w.pool().address_count(), 0u);
}

TEST(ReconcileTest, Sharing) {
  World w({testing::SmallDefaultGroup()});
  SvcSpec a, b, c, d;
  a.name = "a";
  b.name = "b";
  c.name = "c";
  d.name = "d";
  for (SvcSpec* s : {&a, &b, &c, &d}) s->annotations["purelb.io/allow-shared-ip"] = "k";
  a.ports = {{"TCP", 80}};
  b.ports = {{"TCP", 443}, {"UDP", 80}};
  c.ports = {{"TCP", 443}};
  c.annotations["purelb.io/addresses"] = "192.0.2.10";
  d.ports = {{"TCP", 8080}};
  d.annotations["purelb.io/addresses"] = "192.0.2.10";
  SvcSpec e = d;
  e.name = "e";
  e.annotations["purelb.io/allow-shared-ip"] = "other";
  e.ports = {{"TCP", 9090}};
  Walk(w,
       {
           R("a", a, Outcome::kAllocated, Reason::kNone, {"192.0.2.10"}),
           R("b shares with distinct ports", b, Outcome::kAllocated, Reason::kNone, {"192.0.2.10"}),
           R("c requests the shared address with an overlapping port", c, Outcome::kRefused,
             Reason::kSharingConflict),
           R("d requests it with a free port", d, Outcome::kAllocated, Reason::kNone,
             {"192.0.2.10"}),
           R("e requests it under another key", e, Outcome::kRefused, Reason::kAddressInUse),
       });
  EXPECT_EQ(w.pool().address_count(), 1u);
}

TEST(ReconcileTest, KeepsStatusAddressesAndAdoptsPureLB) {
  World w({testing::SeedLocalDual()});
  // PureLB gave a PreferDualStack Service IPv4 only; Pylon adopts it unchanged.
  SvcSpec p = Dual("purelb", "PreferDualStack");
  p.annotations["purelb.io/allocated-by"] = "PureLB";
  p.annotations["purelb.io/allocated-from"] = "localdual";
  p.ingress = {"192.168.10.228"};
  SvcSpec q = Dual("kept", "RequireDualStack");
  q.ingress = {"192.168.10.227", "fc00:270:154:0:8000::6"};
  auto records = RebuildRecords({}, w.config());
  EXPECT_TRUE(records.empty());
  Decision d = w.Run(p);
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.168.10.228"}));
  EXPECT_EQ(d.allocated_by, "PureLB");
  EXPECT_TRUE(d.events.empty());
  d = w.Run(q);
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.168.10.227", "fc00:270:154:0:8000::6"}));
  EXPECT_TRUE(d.events.empty());
}

// purelb.io/v2 groups beside a v1 group, and the class purelb.io/purelbv2.
TEST(ReconcileTest, V1AndV2GroupsSideBySide) {
  World w({testing::SmallDefaultGroup(),
           testing::V2GroupJson("remote2", json::parse(R"({"remote":{"v4pools":[
               {"pool":"203.0.113.8/30","subnet":"203.0.113.0/24","aggregation":"/32"}]}})"))});
  SvcSpec a;
  a.name = "a";
  SvcSpec b;
  b.name = "b";
  b.cls = "purelb.io/purelbv2";
  b.annotations = {{"purelb.io/service-group", "remote2"}};
  SvcSpec c;
  c.name = "c";
  c.cls = "purelb.io/purelb";
  SvcSpec other;
  other.name = "other";
  other.cls = "purelb.io/purelb-v2";  // PureLB's docs spelling; not the class the code uses
  Walk(w, {
              R("no class: v1 default", a, Outcome::kAllocated, Reason::kNone, {"192.0.2.10"}),
              R("purelbv2 class, v2 remote group", b, Outcome::kAllocated, Reason::kNone,
                {"203.0.113.8"}),
              R("purelb class: v1 default", c, Outcome::kAllocated, Reason::kNone, {"192.0.2.11"}),
              R("another class is not Pylon's", other, Outcome::kIgnored),
          });
  Decision d = w.Run(b);
  EXPECT_EQ(d.allocated_from, "remote2");
  EXPECT_EQ(d.pool_type, std::optional<std::string>("remote"));
  EXPECT_FALSE(d.skip_ipv6_dad);
  d = w.Run(a);  // v1 group: no v2 annotations
  EXPECT_EQ(d.pool_type, std::nullopt);
}

// The external group is refused in the config status; a Service naming it is refused too.
TEST(ReconcileTest, V2ExternalGroupIsRefusedWithACondition) {
  World w({testing::V2GroupJson(
      "ipam", json::parse(R"({"external":{"provider":"netbox","announce":"local"}})"))});
  ASSERT_EQ(w.statuses().size(), 1u);
  EXPECT_FALSE(w.statuses()[0].valid);
  EXPECT_NE(w.statuses()[0].message.find("external IPAM (provider netbox) is not supported"),
            std::string::npos)
      << w.statuses()[0].message;
  SvcSpec s;
  s.annotations = {{"purelb.io/service-group", "ipam"}};
  Decision d = w.Run(s);
  EXPECT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_EQ(d.reason, Reason::kNoSuchGroup);
}

// balancePools: Services spread over the group's ranges, fewest in use first.
TEST(ReconcileTest, V2BalancePoolsSpreadsOverTheRanges) {
  World w({testing::V2GroupJson("bal", json::parse(R"({"local":{"balancePools":true,"v4pools":[
      {"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"},
      {"pool":"192.0.2.30-192.0.2.39","subnet":"192.0.2.0/24"}]}})"))});
  auto svc = [](std::string name) {
    SvcSpec s;
    s.name = std::move(name);
    s.annotations = {{"purelb.io/service-group", "bal"}};
    return s;
  };
  Walk(w, {
              R("first: the first range", svc("a"), Outcome::kAllocated, Reason::kNone,
                {"192.0.2.10"}),
              R("second: the other range", svc("b"), Outcome::kAllocated, Reason::kNone,
                {"192.0.2.30"}),
              R("third: back to the first", svc("c"), Outcome::kAllocated, Reason::kNone,
                {"192.0.2.11"}),
              R("a leaves", svc("a"), Outcome::kReleased, Reason::kNone, {}, /*gone=*/true),
              R("a tie (1 and 1): the earlier range", svc("d"), Outcome::kAllocated, Reason::kNone,
                {"192.0.2.12"}),
          });
}

// purelb.io/re-evaluate: "true" is removed by the reconcile it triggered; other values stay.
TEST(ReconcileTest, ReEvaluateIsOneShot) {
  World w({testing::V2LocalGroup("default", "192.0.2.20-192.0.2.29")});
  SvcSpec s;
  s.name = "a";
  s.annotations = {{"purelb.io/re-evaluate", "true"}};
  Decision d = w.Run(s);
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_TRUE(d.clear_re_evaluate);
  ASSERT_TRUE(w.last_writes().annotations.has_value());
  EXPECT_TRUE(
      (*w.last_writes().annotations)["metadata"]["annotations"]["purelb.io/re-evaluate"].is_null());
  s.annotations = {{"purelb.io/re-evaluate", "later"}};
  EXPECT_FALSE(w.Run(s).clear_re_evaluate);
  s.annotations = {};
  EXPECT_FALSE(w.Run(s).clear_re_evaluate);
}

}  // namespace
}  // namespace pylon::allocator::testing
