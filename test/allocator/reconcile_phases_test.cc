// Scenario tables for the pure phases of the reconcile (reconcile_phases.h): ResolveOwner,
// ParseRequest and ActiveConflicts, each row one Service against one config.
#include "allocator/reconcile_phases.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "allocator/rebuild.h"
#include "common/time.h"
#include "config/validate.h"
#include "model/conflicts.h"
#include "test_objects.h"

namespace pylon::allocator {
namespace {

using json = nlohmann::json;
using testing::SvcSpec;
using Status = Owner::Status;
using net::Family;

// One config in force and its (empty) pool state.
class Phases {
 public:
  explicit Phases(std::vector<json> objects) {
    config_ = config::ValidateConfig(objects, config_).config;
    EXPECT_TRUE(pool_.SetPools(PoolDefinitions(config_)).has_value());
  }
  model::Service View(const SvcSpec& s) const {
    auto view = model::ParseService(testing::ServiceJson(s));
    EXPECT_TRUE(view.has_value());
    return *view;
  }
  Owner Resolve(const model::Service& svc) const {
    return ResolveOwner(svc, *pool::ServiceKey::Make(svc.ns, svc.name), config_, pool_,
                        "purelb-system");
  }
  // `s` as the phases after ResolveOwner take it: its view and its owner.
  std::pair<model::Service, Owner> ViewAndOwner(const SvcSpec& s) const {
    model::Service svc = View(s);
    Owner owner = Resolve(svc);
    return {std::move(svc), std::move(owner)};
  }
  const config::InForceConfig& config() const { return config_; }

 private:
  config::InForceConfig config_;
  pool::Allocator pool_;
};

std::vector<json> Config() {
  return {testing::SeedLocalDual(),
          testing::SeedPublicClass(),
          testing::SmallDefaultGroup(),
          testing::V2LocalGroup("team", "192.0.2.20-192.0.2.22", {"team-a"}, /*enforce=*/true),
          testing::V2GroupJson("mp", json::parse(R"({"local":{"multiPool":true,
              "v4pools":[{"pool":"192.0.2.100-192.0.2.109","subnet":"192.0.2.0/24"}]}})")),
          testing::V2GroupJson("bal", json::parse(R"({"local":{"balancePools":true,
              "multiPool":true,
              "v4pools":[{"pool":"192.0.2.200-192.0.2.209","subnet":"192.0.2.0/24"}]}})"))};
}

SvcSpec Svc(std::map<std::string, std::string> annotations = {}) {
  SvcSpec s;
  s.annotations = std::move(annotations);
  return s;
}

TEST(ResolveOwnerTest, Table) {
  struct Row {
    std::string what;
    SvcSpec svc;
    Status status;
    std::string name;
    Reason reason = Reason::kNone;
    std::string pool_key = {};  // expected (kResolved, kDenied)
    std::string group_word = {};
  };
  SvcSpec cluster_ip = Svc();
  cluster_ip.type = "ClusterIP";
  SvcSpec deleting = Svc();
  deleting.deleting = true;
  SvcSpec foreign = Svc();
  foreign.cls = "example.com/other";
  SvcSpec lace = Svc();
  lace.cls = "lace-cni.io/public";
  SvcSpec lace_missing = Svc();
  lace_missing.cls = "lace-cni.io/nope";
  SvcSpec team = Svc();
  team.ns = "team-a";
  SvcSpec team_escapes = Svc({{"purelb.io/service-group", "localdual"}});
  team_escapes.ns = "team-a";
  SvcSpec shows_gone = Svc({{"purelb.io/allocated-from", "gone"}});
  shows_gone.ingress = {"192.0.2.10"};
  const std::vector<Row> rows = {
      {"ClusterIP: not Pylon's", cluster_ip, Status::kNotPylons, ""},
      {"being deleted: not Pylon's", deleting, Status::kNotPylons, ""},
      {"a foreign class: not Pylon's", foreign, Status::kNotPylons, ""},
      {"no annotation: the default group", Svc(), Status::kResolved, "default", Reason::kNone,
       "ServiceGroup purelb-system/default", "ServiceGroup default"},
      {"the annotation names the group", Svc({{"purelb.io/service-group", "localdual"}}),
       Status::kResolved, "localdual", Reason::kNone, "ServiceGroup purelb-system/localdual",
       "ServiceGroup localdual"},
      {"the annotation names no group", Svc({{"purelb.io/service-group", "missing"}}),
       Status::kUnconfigured, "missing", Reason::kNoSuchGroup},
      {"a Lace class", lace, Status::kResolved, "public", Reason::kNone, "LoadBalancerClass public",
       "LoadBalancerClass public"},
      {"a Lace class not in force", lace_missing, Status::kUnconfigured, "nope",
       Reason::kNoSuchClass},
      {"the namespace's group", team, Status::kResolved, "team", Reason::kNone,
       "ServiceGroup purelb-system/team", "ServiceGroup team"},
      {"an enforced namespace naming another group: denied", team_escapes, Status::kDenied,
       "localdual", Reason::kNamespaceDenied, "ServiceGroup purelb-system/localdual"},
      {"shows addresses of a group no longer in force: that group stays its choice", shows_gone,
       Status::kUnconfigured, "gone", Reason::kNoSuchGroup},
  };
  Phases p(Config());
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const model::Service svc = p.View(r.svc);
    const Owner o = p.Resolve(svc);
    EXPECT_EQ(o.status, r.status);
    EXPECT_EQ(o.name, r.name);
    EXPECT_EQ(ReasonName(o.refusal ? o.refusal->reason : Reason::kNone), ReasonName(r.reason));
    EXPECT_EQ(o.pool_key, r.pool_key);
    EXPECT_EQ(o.group_word, r.group_word);
    EXPECT_EQ(o.group != nullptr, r.status == Status::kResolved);
  }
}

TEST(ParseRequestTest, Table) {
  struct Row {
    std::string what;
    SvcSpec svc;
    Reason refused = Reason::kNone;
    std::vector<Family> families = {};
    bool multi = false;
    bool unpooled = false;
  };
  auto group = [](const std::string& g, std::map<std::string, std::string> more = {}) {
    SvcSpec s = Svc({{"purelb.io/service-group", g}});
    for (auto& [k, v] : more) s.annotations[k] = v;
    return s;
  };
  SvcSpec bad_policy = Svc();
  bad_policy.policy = "Sometimes";
  SvcSpec bad_protocol = Svc();
  bad_protocol.ports = {{"XTP", 80}};
  SvcSpec bad_port = Svc();
  bad_port.ports = {{"TCP", 70000}};
  SvcSpec dual_on_v4 = Svc();
  dual_on_v4.families = {"IPv4", "IPv6"};
  dual_on_v4.policy = "RequireDualStack";
  SvcSpec prefer_dual = group("localdual");
  prefer_dual.families = {"IPv6", "IPv4"};
  prefer_dual.policy = "PreferDualStack";
  SvcSpec purelb_v4 = group("localdual", {{"purelb.io/allocated-by", "PureLB"}});
  purelb_v4.families = {"IPv4", "IPv6"};
  purelb_v4.policy = "PreferDualStack";
  purelb_v4.ingress = {"192.168.10.225"};
  SvcSpec lb_ip = Svc();
  lb_ip.load_balancer_ip = "192.0.2.11";
  const std::vector<Row> rows = {
      {"plain", Svc(), Reason::kNone, {Family::kV4}},
      {"a malformed requested address", Svc({{"purelb.io/addresses", "nope"}}),
       Reason::kInvalidAnnotation},
      {"two annotations that disagree",
       Svc({{"purelb.io/addresses", "192.0.2.10"},
            {"loadbalancer.lace-cni.io/loadBalancerIPs", "192.0.2.11"}}),
       Reason::kInvalidAnnotation},
      {"spec.loadBalancerIP is a request", lb_ip, Reason::kNone, {Family::kV4}},
      {"an unknown ipFamilyPolicy", bad_policy, Reason::kInvalidService},
      {"an unknown protocol", bad_protocol, Reason::kInvalidService},
      {"a port out of range", bad_port, Reason::kInvalidService},
      {"RequireDualStack on an IPv4-only group", dual_on_v4, Reason::kFamilyUnavailable},
      {"an IPv6 request on an IPv4-only group: outside, names no pool",
       Svc({{"purelb.io/addresses", "2001:db8::1"}}),
       Reason::kOutsidePools,
       {},
       false,
       true},
      {"PreferDualStack: both, in ipFamilies order",
       prefer_dual,
       Reason::kNone,
       {Family::kV6, Family::kV4}},
      {"PureLB-branded PreferDualStack keeps the family it shows",
       purelb_v4,
       Reason::kNone,
       {Family::kV4}},
      {"multi-pool group", group("mp"), Reason::kNone, {Family::kV4}, true},
      {"multi-pool off by annotation",
       group("mp", {{"purelb.io/multi-pool", "false"}}),
       Reason::kNone,
       {Family::kV4},
       false},
      {"multi-pool with a requested address: claimed the ordinary way",
       group("mp", {{"purelb.io/addresses", "192.0.2.102"}}),
       Reason::kNone,
       {Family::kV4},
       false},
      {"multi-pool with a sharing key", group("mp", {{"purelb.io/allow-shared-ip", "k"}}),
       Reason::kMultiPoolRefused},
      {"multi-pool with balancePools", group("bal"), Reason::kMultiPoolRefused},
  };
  Phases p(Config());
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const auto [svc, o] = p.ViewAndOwner(r.svc);
    ASSERT_EQ(o.status, Status::kResolved);
    const ParsedRequest parsed = ParseRequest(svc, o);
    EXPECT_EQ(ReasonName(parsed.refusal ? parsed.refusal->reason : Reason::kNone),
              ReasonName(r.refused))
        << (parsed.refusal ? parsed.refusal->message : "");
    EXPECT_EQ(parsed.unpooled, r.unpooled);
    if (parsed.refusal) continue;
    EXPECT_EQ(parsed.request.families, r.families);
    EXPECT_EQ(parsed.request.multi, r.multi);
  }
}

TEST(ActiveConflictsTest, Table) {
  const WallTime t0 = ParseWholeSecondsTime("2025-03-01T10:00:00Z").value();
  const auto hold = std::chrono::minutes(5);
  Phases p(Config());
  auto conflict = [&](const std::string& ip, WallTime at) {
    return std::pair<const std::string, std::string>{
        model::ConflictAnnotationKey(*net::IpAddress::Parse(ip)),
        ip + " 02:aa:bb:cc:dd:ee node2 eth0 " + FormatTime(at)};
  };
  struct Row {
    std::string what;
    SvcSpec svc;
    WallTime now;
    std::vector<std::string> active;
    bool requested = false;
    std::optional<std::chrono::nanoseconds> recheck_after = std::nullopt;
  };
  const std::vector<Row> rows = {
      {"none", Svc(), t0, {}},
      {"one in force: recheck when its hold ends",
       Svc({conflict("192.0.2.10", t0)}),
       t0 + std::chrono::minutes(1),
       {"192.0.2.10"},
       false,
       std::chrono::minutes(4)},
      {"hold over", Svc({conflict("192.0.2.10", t0)}), t0 + hold, {}},
      {"outside the Service's group: not its business",
       Svc({conflict("192.168.10.225", t0)}),
       t0,
       {}},
      {"the requested address",
       Svc({conflict("192.0.2.11", t0), {"purelb.io/addresses", "192.0.2.11"}}),
       t0,
       {"192.0.2.11"},
       true,
       hold},
      {"a report from the future counts from now",
       Svc({conflict("192.0.2.12", t0 + hold)}),
       t0,
       {"192.0.2.12"},
       false,
       hold},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const auto [svc, o] = p.ViewAndOwner(r.svc);
    ASSERT_EQ(o.status, Status::kResolved);
    const ConflictState st =
        ActiveConflicts(svc, *RequestedOf(svc), *o.group, p.config(), nullptr, r.now, hold);
    std::vector<std::string> active;
    for (const auto& c : st.active) active.push_back(c.address.ToString());
    EXPECT_EQ(active, r.active);
    EXPECT_EQ(st.requested.has_value(), r.requested);
    EXPECT_EQ(st.recheck_after, r.recheck_after);
    EXPECT_EQ(st.avoid.size(), r.active.size());
  }
}

// Another owner's reservation makes a requested address a conflict without a report of its own.
TEST(ActiveConflictsTest, AnotherOwnersReservationCountsForARequest) {
  const WallTime t0 = ParseWholeSecondsTime("2025-03-01T10:00:00Z").value();
  Phases p(Config());
  ConflictBook book;
  ConflictReport other{*net::IpAddress::Parse("192.0.2.11"),
                       "02:aa:bb:cc:dd:ee",
                       "node2",
                       "eth0",
                       "default/other",
                       t0,
                       t0 + std::chrono::minutes(5)};
  bool changed = false;
  book.Set("default/other", {"ServiceGroup purelb-system/default", {other}}, &changed);
  const auto [svc, o] = p.ViewAndOwner(Svc({{"purelb.io/addresses", "192.0.2.11"}}));
  ConflictState st = ActiveConflicts(svc, *RequestedOf(svc), *o.group, p.config(), &book,
                                     t0 + std::chrono::minutes(2), std::chrono::minutes(5));
  ASSERT_TRUE(st.requested.has_value());
  EXPECT_EQ(st.requested->service, "default/web");
  EXPECT_EQ(st.recheck_after, std::chrono::minutes(3));
  st = ActiveConflicts(svc, *RequestedOf(svc), *o.group, p.config(), &book,
                       t0 + std::chrono::minutes(5), std::chrono::minutes(5));
  EXPECT_FALSE(st.requested.has_value()) << "the other's hold is over";
}

}  // namespace
}  // namespace pylon::allocator
