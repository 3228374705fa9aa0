// Scenario tables for the pure reconcile core: one pool state walked through rows, MetalLB style.
#include "allocator/reconcile.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "allocator/service_writes.h"
#include "config/validate.h"
#include "test_objects.h"

namespace pylon::allocator {
namespace {

using testing::SvcSpec;
using json = nlohmann::json;

class World {
 public:
  explicit World(std::initializer_list<json> config_objects) {
    SetConfig(std::vector<json>(config_objects));
  }

  void SetConfig(std::vector<json> objects) {
    auto result = config::ValidateConfig(objects, config_);
    config_ = std::move(result.config);
    statuses_ = std::move(result.statuses);
    auto ev = pool_.SetPools(PoolDefinitions(config_));
    ASSERT_TRUE(ev.has_value()) << ev.error().message();
  }

  // Reconciles the Service as the API would show it after the previous reconciles' writes: the
  // spec from `s`, the status as last written (unless `s.ingress` overrides it).
  Decision Run(SvcSpec s) {
    const std::string key = s.ns + "/" + s.name;
    json obj = testing::ServiceJson(s);
    if (s.ingress.empty() && shown_.count(key)) obj["status"] = shown_[key];
    auto view = model::ParseService(obj);
    EXPECT_TRUE(view.has_value());
    ServiceInput in{&*view, CurrentCondition(obj)};
    in.node_subnets = &subnets_;
    Decision d = Reconcile(in, config_, pool_, ctx_);
    ServiceWrites w = PlanServiceWrites(obj, d, "2024-06-01T00:00:00Z");
    if (w.status) shown_[key] = (*w.status)["status"];
    last_writes_ = std::move(w);
    return d;
  }
  Decision Delete(const std::string& ns, const std::string& name) {
    shown_.erase(ns + "/" + name);
    return ReconcileGone(*pool::ServiceKey::Make(ns, name), pool_);
  }

  // The live node subnets multi-pool sees, e.g. {"192.0.2.0/24"}.
  void SetLiveSubnets(const std::vector<std::string>& prefixes) {
    subnets_ = {};
    for (const auto& p : prefixes) subnets_.live.push_back(*net::Prefix::Parse(p));
  }
  // Forgets the pool state and rebuilds it from what the Services show, as a restart does.
  std::size_t Restart(const std::vector<SvcSpec>& services) {
    std::vector<model::Service> views;
    for (const SvcSpec& s : services) {
      json obj = testing::ServiceJson(s);
      if (shown_.count(s.ns + "/" + s.name)) obj["status"] = shown_[s.ns + "/" + s.name];
      views.push_back(*model::ParseService(obj));
    }
    std::vector<const model::Service*> ptrs;
    for (const auto& v : views) ptrs.push_back(&v);
    auto records = RebuildRecords(StartupOrder(ptrs), config_);
    EXPECT_TRUE(pool_.Rebuild(records).empty());
    return records.size();
  }
  const ServiceWrites& last_writes() const { return last_writes_; }

  pool::Allocator& pool() { return pool_; }
  const config::InForceConfig& config() const { return config_; }
  const std::vector<config::ObjectStatus>& statuses() const { return statuses_; }

 private:
  config::InForceConfig config_;
  std::vector<config::ObjectStatus> statuses_;
  pool::Allocator pool_;
  ReconcileContext ctx_;
  std::map<std::string, json> shown_;
  NodeSubnets subnets_;
  ServiceWrites last_writes_;
};

std::vector<std::string> Ips(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& ip : d.ingress) out.push_back(ip.ToString());
  return out;
}

std::vector<std::string> EventReasons(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& e : d.events) out.push_back(e.reason);
  return out;
}

struct Row {
  std::string what;
  SvcSpec svc;
  Outcome outcome;
  Reason reason;
  std::vector<std::string> ingress;  // for kAllocated
  bool gone = false;                 // the Service is deleted instead of reconciled
};

Row R(std::string what, SvcSpec svc, Outcome outcome, Reason reason = Reason::kNone,
      std::vector<std::string> ingress = {}, bool gone = false) {
  return Row{std::move(what), std::move(svc), outcome, reason, std::move(ingress), gone};
}

void Walk(World& w, const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Decision d = r.gone ? w.Delete(r.svc.ns, r.svc.name) : w.Run(r.svc);
    EXPECT_EQ(OutcomeName(d.outcome), OutcomeName(r.outcome)) << d.message;
    EXPECT_EQ(ReasonName(d.reason), ReasonName(r.reason)) << d.message;
    if (r.outcome == Outcome::kAllocated) {
      EXPECT_EQ(Ips(d), r.ingress);
    }
    if (r.outcome == Outcome::kRefused) {
      EXPECT_TRUE(d.ingress.empty());
      ASSERT_TRUE(d.condition.has_value());
      EXPECT_FALSE(d.condition->status);
      EXPECT_EQ(d.condition->reason, ReasonName(r.reason));
      // No half-allocation: nothing is held after a refusal.
      EXPECT_TRUE(w.pool().AddressesOf(*pool::ServiceKey::Make(r.svc.ns, r.svc.name)).empty());
    }
  }
}

SvcSpec Dual(std::string name, std::string policy = "RequireDualStack") {
  SvcSpec s;
  s.name = std::move(name);
  s.families = {"IPv4", "IPv6"};
  s.policy = std::move(policy);
  s.annotations = {{"purelb.io/service-group", "localdual"}};
  return s;
}

SvcSpec Lace(std::string name, std::string ips = "") {
  SvcSpec s;
  s.name = std::move(name);
  s.cls = "lace-cni.io/public";
  s.families = {"IPv4", "IPv6"};
  s.policy = "PreferDualStack";
  if (!ips.empty()) s.annotations["loadbalancer.lace-cni.io/loadBalancerIPs"] = ips;
  return s;
}

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

TEST(ReconcileTest, RebuildOrderAndRecords) {
  World w({testing::SeedLocalDual(), testing::SeedPublicClass()});
  std::vector<model::Service> views;
  auto add = [&](SvcSpec s) { views.push_back(*model::ParseService(testing::ServiceJson(s))); };
  SvcSpec young = Dual("young");
  young.created = "2024-02-01T00:00:00Z";
  young.ingress = {"192.168.10.226", "fc00:270:154:0:8000::4"};
  SvcSpec old = Dual("old");
  old.created = "2023-01-01T00:00:00Z";
  old.ingress = {"192.168.10.226"};  // the same IPv4 as young: the older one wins
  SvcSpec fresh = Dual("fresh");
  fresh.created = "2020-01-01T00:00:00Z";
  SvcSpec foreign;
  foreign.name = "foreign";
  foreign.cls = "example.com/x";
  foreign.ingress = {"198.51.100.50"};
  SvcSpec moved = Lace("moved");  // now selects the class, status still in localdual
  moved.ingress = {"192.168.10.229"};
  add(young);
  add(old);
  add(fresh);
  add(foreign);
  add(moved);
  std::vector<const model::Service*> ptrs;
  for (const auto& v : views) ptrs.push_back(&v);
  auto ordered = StartupOrder(ptrs);
  std::vector<std::string> names;
  for (const auto* s : ordered) names.push_back(s->name);
  EXPECT_EQ(names, (std::vector<std::string>{"old", "foreign", "moved", "young", "fresh"}));
  auto records = RebuildRecords(ordered, w.config());
  ASSERT_EQ(records.size(), 4u);  // foreign not ours; fresh has no status
  auto conflicts = w.pool().Rebuild(records);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].record.service.name(), "young");
  // moved's old address stays held under localdual until its reconcile moves it.
  EXPECT_TRUE(w.pool().Lookup(*net::IpAddress::Parse("192.168.10.229")).has_value());
  Decision d = w.Run(Lace("moved"));
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_FALSE(w.pool().Lookup(*net::IpAddress::Parse("192.168.10.229")).has_value());
  // young lost its IPv4 to old: it gets a fresh pair, never old's address.
  SvcSpec young_again = young;
  d = w.Run(young_again);
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_NE(Ips(d)[0], "192.168.10.226");
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

// PureLB 0.17's namespace rules (docs/purelb-v2.md), walked through one pool state.
TEST(ReconcileTest, V2NamespacesScenario) {
  World w({
      testing::SmallDefaultGroup(),                                           // .10-.12
      testing::V2LocalGroup("team-a", "192.0.2.20-192.0.2.22", {"team-a"}),   // only team-a
      testing::V2LocalGroup("shared1", "192.0.2.30-192.0.2.32", {"shared"}),  // two groups
      testing::V2LocalGroup("shared2", "192.0.2.40-192.0.2.42", {"shared"}, false, true),
      testing::V2LocalGroup("locked", "192.0.2.50-192.0.2.52", {"locked"}, true),  // enforced
      testing::V2LocalGroup("amb1", "192.0.2.60-192.0.2.62", {"amb"}, true),
      testing::V2LocalGroup("amb2", "192.0.2.70-192.0.2.72", {"amb"}),
      testing::V2LocalGroup("nd1", "192.0.2.80-192.0.2.81", {"shared-nodefault"}),
      testing::V2LocalGroup("nd2", "192.0.2.90-192.0.2.91", {"shared-nodefault"}),
  });
  auto svc = [](std::string name, std::string ns, std::string group = "") {
    SvcSpec s;
    s.name = std::move(name);
    s.ns = std::move(ns);
    if (!group.empty()) s.annotations = {{"purelb.io/service-group", group}};
    return s;
  };
  Walk(w, {
              R("namespace listed by no group: default", svc("s1", "other"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.10"}),
              R("namespace listed by one group: that group", svc("s2", "team-a"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.20"}),
              R("listed by two: the namespaceDefault one", svc("s3", "shared"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.40"}),
              R("annotation wins over the namespace default", svc("s4", "shared", "shared1"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.30"}),
              R("not enforced: an annotation may pick any group", svc("s5", "team-a", "default"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.11"}),
              R("not enforced: another namespace may use team-a's group",
                svc("s6", "other", "team-a"), Outcome::kAllocated, Reason::kNone, {"192.0.2.21"}),
              R("enforced namespace: its own group", svc("s7", "locked"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.50"}),
              R("enforced namespace may not use a group that does not list it",
                svc("s8", "locked", "default"), Outcome::kRefused, Reason::kNamespaceDenied),
              R("a confined group refuses other namespaces", svc("s9", "other", "locked"),
                Outcome::kRefused, Reason::kNamespaceDenied),
              R("enforced, two groups, no default: ambiguous", svc("s10", "amb"), Outcome::kRefused,
                Reason::kAmbiguousNamespaceDefault),
              R("ambiguous is settled by an annotation", svc("s11", "amb", "amb2"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.70"}),
          });
  Decision d = w.Run(svc("s8", "locked", "default"));
  EXPECT_EQ(d.message,
            "namespace locked is enforced (enforceNamespaces) by ServiceGroups locked and may use "
            "only ServiceGroups that list it; ServiceGroup default does not");
  d = w.Run(svc("s9", "other", "locked"));
  EXPECT_EQ(d.message,
            "ServiceGroup locked serves only namespaces locked (namespace locked is enforced by "
            "ServiceGroup locked), not other");
  // Not enforced, two groups, no default: "default", with a Warning when assigned.
  d = w.Run(svc("s12", "shared-nodefault"));
  EXPECT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_EQ(d.allocated_from, "default");
  EXPECT_EQ(EventReasons(d), (std::vector<std::string>{"ConfigurationWarning", "AddressAssigned"}));
  ASSERT_FALSE(d.events.empty());
  EXPECT_EQ(d.events[0].message,
            "ServiceGroups nd1, nd2 list namespace shared-nodefault and none of them sets "
            "namespaceDefault; used ServiceGroup default");
  EXPECT_TRUE(d.events[0].warning);
  d = w.Run(svc("s12", "shared-nodefault"));  // unchanged: no event again
  EXPECT_TRUE(d.events.empty());
  d = w.Run(svc("s10", "amb"));
  EXPECT_EQ(d.message,
            "ambiguous namespace default: ServiceGroups amb1, amb2 list namespace amb and none of "
            "them sets namespaceDefault; set it on one, or annotate the Service with "
            "purelb.io/service-group");
}

// Never retroactive: a new group listing a namespace does not move the addresses its unannotated
// Services already hold, and a boundary added later does not revoke them.
TEST(ReconcileTest, V2NamespacesAreNeverRetroactive) {
  World w({testing::SmallDefaultGroup()});
  SvcSpec s;
  s.name = "held";
  s.ns = "team-a";
  Decision d = w.Run(s);
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  w.SetConfig({testing::SmallDefaultGroup(),
               testing::V2LocalGroup("team-a", "192.0.2.20-192.0.2.22", {"team-a"}, true)});
  d = w.Run(s);
  EXPECT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  EXPECT_EQ(d.allocated_from, "default");
  // A new Service of the namespace gets the namespace's group.
  SvcSpec fresh = s;
  fresh.name = "fresh";
  d = w.Run(fresh);
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.20"});
  EXPECT_EQ(d.pool_type, std::optional<std::string>("local"));
  // Once released, the held one re-resolves to the namespace's group too.
  w.Delete("team-a", "held");
  d = w.Run(s);
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.21"});
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

// A requested address picks the purelb.io/v2 group containing it (PureLB v2); an address of a v1
// group does not (v1 behaviour: the group is the annotation's, else "default"); the namespace
// boundary still applies.
TEST(ReconcileTest, V2RequestedAddressPicksItsGroup) {
  World w(
      {testing::SmallDefaultGroup(),  // v1, .10-.12
       testing::ServiceGroupJson(
           "old", {{"v4pools", {{{"pool", "192.0.2.80-192.0.2.89"}, {"subnet", "192.0.2.0/24"}}}}}),
       testing::V2LocalGroup("v2", "192.0.2.20-192.0.2.29"),
       testing::V2LocalGroup("locked", "192.0.2.50-192.0.2.52", {"locked"}, true)});
  auto svc = [](std::string name, std::string addr, std::string ns = "default") {
    SvcSpec s;
    s.name = std::move(name);
    s.ns = std::move(ns);
    s.annotations = {{"purelb.io/addresses", addr}};
    return s;
  };
  Walk(w, {
              R("an address of a v2 group: that group", svc("a", "192.0.2.25"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.25"}),
              R("an address of a v1 group: still default's pools", svc("b", "192.0.2.85"),
                Outcome::kRefused, Reason::kOutsidePools),
              R("spec.loadBalancerIP too",
                [] {
                  SvcSpec s;
                  s.name = "c";
                  s.load_balancer_ip = "192.0.2.26";
                  return s;
                }(),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.26"}),
              R("a confined group's address from another namespace: denied", svc("d", "192.0.2.51"),
                Outcome::kRefused, Reason::kNamespaceDenied),
              R("from its own namespace: allowed", svc("e", "192.0.2.51", "locked"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.51"}),
          });
  EXPECT_EQ(w.Run(svc("a", "192.0.2.25")).allocated_from, "v2");
}

// Multi-pool (PureLB v2): one address from every range whose subnet a live node advertises;
// exhausted ranges skipped; newly live ranges add an address on a later reconcile and none is
// ever taken away; the annotation overrides the group; refused with balancePools or a sharing
// key; a restart keeps every address.
TEST(ReconcileTest, V2MultiPool) {
  World w({testing::V2GroupJson("mp", json::parse(R"({"local":{"multiPool":true,
      "v4pools":[{"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"},
                 {"pool":"198.51.100.10-198.51.100.11","subnet":"198.51.100.0/24"},
                 {"pool":"203.0.113.10-203.0.113.19","subnet":"203.0.113.0/24"}],
      "v6pools":[{"pool":"fd00::10-fd00::19","subnet":"fd00::/64"}]}})")),
           testing::V2GroupJson("bal", json::parse(R"({"local":{"balancePools":true,
      "v4pools":[{"pool":"192.0.3.10-192.0.3.19","subnet":"192.0.3.0/24"}]}})")),
           testing::V2GroupJson("far", json::parse(R"({"remote":{"multiPool":true,
      "v4pools":[{"pool":"10.1.0.1-10.1.0.2","subnet":"10.1.0.0/24"},
                 {"pool":"10.2.0.1-10.2.0.2","subnet":"10.2.0.0/24"}]}})"))});
  auto svc = [](std::string name, std::string group = "mp",
                std::map<std::string, std::string> more = {}) {
    SvcSpec s;
    s.name = std::move(name);
    s.annotations = {{"purelb.io/service-group", group}};
    for (auto& [k, v] : more) s.annotations[k] = v;
    return s;
  };
  auto in_use = [&](const char* group) {
    return w.pool()
        .Stats(std::string("ServiceGroup purelb-system/") + group, net::Family::kV4)
        ->in_use;
  };
  Walk(w, {R("no live node subnet: refused", svc("early"), Outcome::kRefused,
             Reason::kPoolExhausted)});
  w.SetLiveSubnets({"192.0.2.0/24", "198.51.100.0/24"});
  Decision d = w.Run(svc("a"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10", "198.51.100.10"}));
  ASSERT_EQ(EventReasons(d), (std::vector<std::string>{"AddressAssigned"}));
  EXPECT_EQ(d.events[0].message, "Multi-pool: assigned 2 IPs from pool mp");
  EXPECT_EQ(d.pool_type, "local");
  Walk(w, {R("b: one from each live range", svc("b"), Outcome::kAllocated, Reason::kNone,
             {"192.0.2.11", "198.51.100.11"})});
  d = w.Run(svc("c"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.12"}));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].message,
            "Multi-pool: assigned 1 IPs from pool mp; no free address in "
            "198.51.100.10-198.51.100.11");
  EXPECT_EQ(in_use("mp"), 5u);
  // A third subnet goes live: a re-run adds its address and keeps the others.
  w.SetLiveSubnets({"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"});
  d = w.Run(svc("a"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10", "198.51.100.10", "203.0.113.10"}));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].message, "Incremental multi-pool: added 1 IPs (total 3) from pool mp");
  // The 198.51.100.0/24 node dies: nothing is taken away, nothing is written.
  w.SetLiveSubnets({"192.0.2.0/24", "203.0.113.0/24"});
  d = w.Run(svc("a"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10", "198.51.100.10", "203.0.113.10"}));
  EXPECT_TRUE(d.events.empty());
  EXPECT_FALSE(w.last_writes().status.has_value());
  EXPECT_EQ(in_use("mp"), 6u);
  Walk(w,
       {R("annotation false: one address", svc("d", "mp", {{"purelb.io/multi-pool", "no"}}),
          Outcome::kAllocated, Reason::kNone, {"192.0.2.13"}),
        R("annotation true on a balancePools group: refused",
          svc("e", "bal", {{"purelb.io/multi-pool", "true"}}), Outcome::kRefused,
          Reason::kMultiPoolRefused),
        R("with a sharing key: refused", svc("f", "mp", {{"purelb.io/allow-shared-ip", "k"}}),
          Outcome::kRefused, Reason::kMultiPoolRefused),
        R("annotation false on a balancePools group: fine",
          svc("e", "bal", {{"purelb.io/multi-pool", "false"}}), Outcome::kAllocated, Reason::kNone,
          {"192.0.3.10"}),
        R("remote: every range, whatever the leases", svc("g", "far"), Outcome::kAllocated,
          Reason::kNone, {"10.1.0.1", "10.2.0.1"}),
        R("turning it off keeps the first address", svc("a", "mp", {{"purelb.io/multi-pool", "x"}}),
          Outcome::kAllocated, Reason::kNone, {"192.0.2.10"})});
  d = w.Run(svc("e", "bal", {{"purelb.io/multi-pool", "true"}}));
  EXPECT_EQ(d.condition->message,
            "multi-pool and balancePools allocation are mutually exclusive for pool bal");
  EXPECT_EQ(in_use("mp"), 5u);  // a: 2 freed; b 2, c 1, d 1
  // Dual stack once fd00::/64 is live: the IPv6 range joins.
  w.SetLiveSubnets({"192.0.2.0/24", "fd00::/64"});
  SvcSpec dual = svc("h");
  dual.families = {"IPv4", "IPv6"};
  dual.policy = "RequireDualStack";
  Walk(w, {R("dual", dual, Outcome::kAllocated, Reason::kNone, {"192.0.2.14", "fd00::10"})});
  // A restart rebuilds every address of the multi-pool Services from their status.
  EXPECT_EQ(w.Restart({svc("b"), svc("c"), svc("g", "far"), dual}), 7u);
  EXPECT_EQ(in_use("mp"), 4u);
  d = w.Run(svc("b"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.11", "198.51.100.11"}));
  EXPECT_TRUE(d.events.empty());
  EXPECT_FALSE(w.last_writes().status.has_value());
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
}  // namespace pylon::allocator
