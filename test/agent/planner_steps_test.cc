// The planner's pure steps (src/agent/planner_steps.h), each as a scenario table; the whole
// Planner::Compute is covered through the Reconciler (reconciler_test.cc).
#include "agent/planner_steps.h"

#include <gtest/gtest.h>

#include "agent_world.h"
#include "support/election.h"

namespace pylon::agent::testing {
namespace {

using namespace planner_steps;
using config::AnnounceMode;
using std::chrono::seconds;

const SteadyTime kNow = SteadyTime{} + seconds(1000);

// A membership of `leases` (node -> subnets annotation), each renewed at `kNow - age`.
election::Membership Members(const std::map<std::string, std::pair<std::string, int>>& leases) {
  election::Membership m;
  for (const auto& [node, lease] : leases) {
    m.Observe(test_support::HeldLease(node, "1", lease.first), kNow - seconds(lease.second));
  }
  return m;
}

// Svc() with the options a table row varies (every field defaulted, so rows name only theirs).
struct Opt {
  std::string etp = "Cluster";
  std::optional<std::string> lb_class = std::nullopt;
  std::map<std::string, std::string> annotations = {};
  bool deleting = false;
};
ServiceInput S(const std::string& name, std::vector<std::string> ips, Opt opt = {},
               std::vector<model::EndpointSlice> slices = {}) {
  SvcOpts o;
  o.ips = std::move(ips);
  o.etp = opt.etp;
  o.lb_class = opt.lb_class;
  o.annotations = opt.annotations;
  o.deleting = opt.deleting;
  return Svc(name, o, std::move(slices));
}

AddressGroup GroupOf(const std::vector<ServiceInput>& services) {
  AddressGroup g;
  for (const auto& s : services) {
    g.services.push_back(&s);
    if (s.owner.owner == model::Owner::kLaceClass) g.lace = true;
  }
  return g;
}

std::vector<std::string> Names(const std::vector<NodeName>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.str());
  return out;
}

TEST(PlannerSteps, GroupByAddress) {
  std::vector<ServiceInput> services = {
      S("a", {"192.0.2.100", "2001:db8:1::100"}),
      S("b", {"192.0.2.100"}, {.lb_class = "lace-cni.io/public"}),
      S("gone", {"192.0.2.101"}, {.deleting = true}),
      S("theirs", {"192.0.2.102"}, {.lb_class = "example.com/other"}),
  };
  AddressGroups groups = GroupByAddress(services);
  ASSERT_EQ(groups.size(), 2u);  // not the deleted Service's, not another class's
  const AddressGroup& shared = groups.at(Ip("192.0.2.100"));
  ASSERT_EQ(shared.services.size(), 2u);
  EXPECT_EQ(shared.services[0], &services[0]);  // input order
  EXPECT_EQ(shared.services[1], &services[1]);
  EXPECT_TRUE(shared.lace);
  EXPECT_FALSE(groups.at(Ip("2001:db8:1::100")).lace);
}

TEST(PlannerSteps, ProblemReporterIsTheLowestLiveMember) {
  // n1's lease expired 20 s ago (10 s leases); n2 and n3 are live.
  auto m = Members({{"n1", {"192.0.2.0/24", 30}}, {"n3", {"", 0}}, {"n2", {"", 0}}});
  EXPECT_EQ(ProblemReporter(m, kNow), NodeName("n2"));
  EXPECT_EQ(ProblemReporter(m, kNow + seconds(60)), std::nullopt);
  EXPECT_EQ(ProblemReporter(election::Membership{}, kNow), std::nullopt);
}

TEST(PlannerSteps, Classify) {
  struct Row {
    AnnounceMode mode;
    bool lace;
    bool on_subnet;
    AddressClass want;
  };
  const Row rows[] = {
      {AnnounceMode::kLocalOrVirtual, false, true, AddressClass::kLocal},
      {AnnounceMode::kLocalOrVirtual, false, false, AddressClass::kVirtual},
      {AnnounceMode::kL2, true, true, AddressClass::kLocal},
      {AnnounceMode::kL2, true, false, AddressClass::kLaceOffSubnet},
      // A lace Service on a v1 group's address off every subnet: still never virtual.
      {AnnounceMode::kLocalOrVirtual, true, false, AddressClass::kLaceOffSubnet},
      // Routed modes are virtual even on a node subnet, lace or not.
      {AnnounceMode::kL3, true, true, AddressClass::kVirtual},
      {AnnounceMode::kL3, true, false, AddressClass::kVirtual},
      {AnnounceMode::kRemote, false, true, AddressClass::kVirtual},
      {AnnounceMode::kLocal, false, true, AddressClass::kLocal},
      {AnnounceMode::kLocal, false, false, AddressClass::kLocalGroupOffSubnet},
      {AnnounceMode::kLocal, true, false, AddressClass::kLocalGroupOffSubnet},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(config::AnnounceModeName(r.mode)) + " lace=" + std::to_string(r.lace) +
                 " on_subnet=" + std::to_string(r.on_subnet));
    EXPECT_EQ(Classify(r.mode, r.lace, r.on_subnet), r.want);
  }
}

TEST(PlannerSteps, RecordedAnnouncer) {
  const auto ip = Ip("192.0.2.200");
  const L2Advertisement l2{L2AdvertisementName(ip), ip,   "default", "a",
                           "lace-cni.io/public",    "n3", "eth0"};
  const L2Index with_l2 = {{l2.name, &l2}};
  auto ann = [](const std::string& v) {
    return std::map<std::string, std::string>{{model::kAnnAnnouncingV4, v}};
  };
  struct Row {
    std::string name;
    std::vector<ServiceInput> services;
    L2Index l2s;
    std::optional<std::string> want;
  };
  const std::vector<Row> rows = {
      {"lace: the L2Advertisement's node",
       {S("a", {"192.0.2.200"}, {.lb_class = "lace-cni.io/public", .annotations = ann("n1,eth0")})},
       with_l2,
       "n3"},
      {"not lace: an L2Advertisement is not read",
       {S("a", {"192.0.2.200"}, {.annotations = ann("n1,eth0")})},
       with_l2,
       "n1"},
      {"the first Service whose annotation names a node for the address",
       {S("a", {"192.0.2.200"}, {.annotations = ann("garbage")}),
        S("b", {"192.0.2.200"}, {.annotations = ann("n2,eth0,192.0.2.200")}),
        S("c", {"192.0.2.200"}, {.annotations = ann("n4,eth0")})},
       {},
       "n2"},
      {"a v2 entry for another address does not count",
       {S("a", {"192.0.2.200"}, {.annotations = ann("n2,eth0,192.0.2.201")})},
       {},
       std::nullopt},
      {"none recorded", {S("a", {"192.0.2.200"})}, {}, std::nullopt},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto got = RecordedAnnouncer(ip, GroupOf(r.services), r.l2s);
    EXPECT_EQ(got ? std::optional<std::string>(got->str()) : std::nullopt, r.want);
  }
}

TEST(PlannerSteps, EtpLocalCandidates) {
  const auto ip = Ip("192.0.2.100");
  auto v6_slice = Slice("default", "x", {{"n1", true}});
  v6_slice.address_type = "IPv6";
  struct Row {
    std::string name;
    std::vector<ServiceInput> services;
    std::optional<std::vector<std::string>> want;
  };
  const std::vector<Row> rows = {
      {"no Local Service: no restriction",
       {S("a", {"192.0.2.100"}, {}, {Slice("default", "a", {{"n1", true}})})},
       std::nullopt},
      {"the nodes with a ready local endpoint",
       {S("a", {"192.0.2.100"}, {.etp = "Local"},
          {Slice("default", "a", {{"n1", true}, {"n2", false}, {"n3", true}})})},
       std::vector<std::string>{"n1", "n3"}},
      {"shared: those of every Local Service; Cluster ones do not narrow",
       {S("a", {"192.0.2.100"}, {.etp = "Local"},
          {Slice("default", "a", {{"n1", true}, {"n3", true}})}),
        S("b", {"192.0.2.100"}, {.etp = "Local"},
          {Slice("default", "b", {{"n3", true}, {"n4", true}})}),
        S("c", {"192.0.2.100"}, {}, {Slice("default", "c", {{"n9", true}})})},
       std::vector<std::string>{"n3"}},
      {"Local without endpoints of the family: nobody may win",
       {S("a", {"192.0.2.100"}, {.etp = "Local"}, {v6_slice})},
       std::vector<std::string>{}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto got = EtpLocalCandidates(ip, GroupOf(r.services));
    EXPECT_EQ(got ? std::optional(Names(*got)) : std::nullopt, r.want);
  }
}

TEST(PlannerSteps, EndpointAffinity) {
  const auto ip = Ip("192.0.2.100");
  const std::map<std::string, std::string> affinity = {
      {model::kAnnNodeAffinity, model::kNodeAffinityServiceEndpoints}};
  auto shared_affinity = affinity;
  shared_affinity[model::kAnnSharing] = "k";
  const std::vector<ServiceInput> alone = {
      S("a", {"192.0.2.100"}, {.annotations = affinity},
        {Slice("default", "a",
               {{"n1", true}, {"n2", true}, {"n3", true}, {"n4", true}, {"n5", false}})})};
  EXPECT_TRUE(UsesEndpointAffinity(GroupOf(alone)));
  EXPECT_FALSE(
      UsesEndpointAffinity(GroupOf({S("a", {"192.0.2.100"}, {.annotations = shared_affinity})})));
  EXPECT_FALSE(UsesEndpointAffinity(GroupOf({S("a", {"192.0.2.100"})})));
  EXPECT_FALSE(UsesEndpointAffinity(GroupOf({alone[0], S("b", {"192.0.2.100"})})));

  // n1: live, on the subnet. n2: lease expired. n3: excluded. n4: another subnet. n5: its
  // endpoint neither ready nor serving.
  auto m = Members({{"n1", {"192.0.2.0/24", 0}},
                    {"n2", {"192.0.2.0/24", 30}},
                    {"n3", {"192.0.2.0/24", 0}},
                    {"n4", {"203.0.113.0/24", 0}},
                    {"n5", {"192.0.2.0/24", 0}}});
  const std::vector<NodeName> excluded = {NodeName("n3")};
  EXPECT_EQ(Names(AffinityCandidates(ip, alone[0], m, kNow, &excluded)),
            (std::vector<std::string>{"n1"}));
  EXPECT_EQ(Names(AffinityCandidates(ip, alone[0], m, kNow, nullptr)),
            (std::vector<std::string>{"n1", "n3"}));
}

TEST(PlannerSteps, VirtualPrefixLength) {
  const config::InForceConfig config = TestConfig();
  struct Row {
    std::string ip;
    int want;
  };
  const Row rows[] = {
      {"10.9.9.9", 32},           // no pool entry: a host route
      {"192.0.2.220", 32},        // mode l3 class: no aggregation
      {"2001:db8:beef::5", 120},  // aggregation /120
      {"2001:db8:2::5", 128},     // no pool entry
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.ip);
    auto match = config.FindAddress(Ip(r.ip));
    EXPECT_EQ(VirtualPrefixLength(Ip(r.ip), match ? &*match : nullptr), r.want);
  }
}

TEST(PlannerSteps, HoldsVirtual) {
  const auto ip = Ip("192.0.2.100");
  auto local = [](std::map<std::string, bool> eps) {
    return S("a", {"192.0.2.100"}, {.etp = "Local"}, {Slice("default", "a", eps)});
  };
  struct Row {
    std::string name;
    std::vector<ServiceInput> services;
    bool want;
  };
  const std::vector<Row> rows = {
      {"Cluster", {S("a", {"192.0.2.100"})}, true},
      {"Local, a ready endpoint here", {local({{"self", true}})}, true},
      {"Local, an endpoint here not ready", {local({{"self", false}, {"n1", true}})}, false},
      {"Local, no endpoint here", {local({{"n1", true}})}, false},
      {"shared with another Service: held", {local({}), S("b", {"192.0.2.100"})}, true},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(HoldsVirtual(ip, GroupOf(r.services), "self"), r.want);
  }
}

TEST(PlannerSteps, CountWinnerMoves) {
  const auto ip = Ip("192.0.2.100");
  const NodeName a("a"), b("b");
  struct Row {
    std::optional<NodeName> before, after;
    std::uint64_t want;
  };
  const Row rows[] = {
      {std::nullopt, a, 0},  // new address: not a move
      {a, a, 0},
      {a, b, 1},
      {a, std::nullopt, 1},  // lost its node
      {std::nullopt, std::nullopt, 0},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(CountWinnerMoves({election::WinnerChange{ip, r.before, r.after}}), r.want);
  }
}

TEST(PlannerSteps, LocalAddress) {
  NodeNetwork network;
  network.interfaces.push_back({"eth0", 2, {Pfx("192.0.2.0/24")}});
  network.interfaces.push_back({"eth1", 3, {Pfx("192.0.2.0/25"), Pfx("203.0.113.0/24")}});
  const std::vector<ServiceInput> services = {S("b", {"192.0.2.100"}), S("a", {"192.0.2.100"})};
  auto d = LocalAddress(Ip("192.0.2.100"), network, GroupOf(services));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->address, Pfx("192.0.2.100/24"));  // the first interface's subnet wins
  EXPECT_EQ(d->interface, "eth0");
  EXPECT_EQ(d->ifindex, 2);
  EXPECT_EQ(d->kind, AddressKind::kLocal);
  EXPECT_EQ(d->services, (std::vector<std::string>{"default/a", "default/b"}));
  EXPECT_FALSE(LocalAddress(Ip("198.51.100.1"), network, GroupOf(services)).has_value());
}

TEST(PlannerSteps, AnnouncingValue) {
  const auto ip = Ip("192.0.2.100");
  const auto s =
      S("a", {"192.0.2.100", "192.0.2.101", "2001:db8:1::100"},
        {.annotations = {{model::kAnnAnnouncingV4,
                          "n1,eth0,192.0.2.100 n2,eth0,192.0.2.101 n3,eth0,192.0.2.99"}}});
  EXPECT_EQ(AnnouncingValue(s.service, ip, "self", "eth1", false), "self,eth1");
  // v2: this address's entry claimed, the other address's kept, the gone address's dropped.
  EXPECT_EQ(AnnouncingValue(s.service, ip, "self", "eth1", true),
            "self,eth1,192.0.2.100 n2,eth0,192.0.2.101");
}

TEST(PlannerSteps, WantedL2AdvertisementNamesTheFirstLaceService) {
  const auto ip = Ip("192.0.2.200");
  const std::vector<ServiceInput> services = {
      S("plain", {"192.0.2.200"}), S("lace", {"192.0.2.200"}, {.lb_class = "lace-cni.io/public"})};
  EXPECT_EQ(WantedL2Advertisement(ip, GroupOf(services), "self", "eth0"),
            (L2Advertisement{"ipv4-192-0-2-200", ip, "default", "lace", "lace-cni.io/public",
                             "self", "eth0"}));
}

TEST(PlannerSteps, SetAnnotationMergesPerService) {
  const auto a = S("a", {"192.0.2.100"});
  std::map<ServiceRef, AnnotationPatch> patches;
  SetAnnotation(patches, a.service, "k1", "v1");
  SetAnnotation(patches, a.service, "k2", std::nullopt);
  ASSERT_EQ(patches.size(), 1u);
  const AnnotationPatch& p = patches.begin()->second;
  EXPECT_EQ(p.service, (ServiceRef{"default", "a"}));
  EXPECT_EQ(p.observed_version, "1");
  EXPECT_EQ(p.annotations, (std::map<std::string, std::optional<std::string>>{
                               {"k1", "v1"}, {"k2", std::nullopt}}));
}

TEST(PlannerSteps, StaleAnnouncingAnnotations) {
  auto both = [](const std::string& v4, const std::string& v6) {
    return std::map<std::string, std::string>{{model::kAnnAnnouncingV4, v4},
                                              {model::kAnnAnnouncingV6, v6}};
  };
  const std::vector<ServiceInput> services = {
      // Lost its IPv6 address: only that family's annotation is stale.
      S("lost-v6", {"192.0.2.100"}, {.annotations = both("self,eth0", "self,eth0")}),
      // Names another node: not ours to clear.
      S("other", {}, {.annotations = both("n1,eth0", "n1,eth0")}),
      // Being deleted: every family naming this node.
      S("deleting", {"192.0.2.101"},
        {.annotations = both("n1,eth0,192.0.2.9 self,eth0,192.0.2.101", "self,eth0"),
         .deleting = true}),
      // Not Pylon's.
      S("theirs", {},
        {.lb_class = "example.com/other", .annotations = both("self,eth0", "self,eth0")}),
  };
  std::vector<std::string> got;
  for (const auto& s : StaleAnnouncingAnnotations(services, "self")) {
    got.push_back(s.service->name + "/" + std::string(net::FamilyName(s.family)));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"lost-v6/IPv6", "deleting/IPv4", "deleting/IPv6"}));
}

TEST(PlannerSteps, OrphanedL2Advertisements) {
  auto l2 = [](const std::string& ip, const std::string& node) {
    return L2Advertisement{L2AdvertisementName(Ip(ip)), Ip(ip), "default", "a",
                           "lace-cni.io/public",        node,   "eth0"};
  };
  const std::vector<L2Advertisement> l2s = {
      l2("192.0.2.200", "self"),  // orphaned, names this node
      l2("192.0.2.201", "live"),  // orphaned, its node is live: it deletes it
      l2("192.0.2.202", "dead"),  // orphaned, its node is gone: the reporter deletes it
      l2("192.0.2.203", "self"),  // still owed
  };
  const std::set<std::string> in_use = {L2AdvertisementName(Ip("192.0.2.203"))};
  auto m = Members({{"live", {"", 0}}, {"self", {"", 0}}, {"dead", {"", 30}}});
  EXPECT_EQ(OrphanedL2Advertisements(l2s, in_use, "self", m, kNow, true),
            (std::vector<std::string>{"ipv4-192-0-2-200", "ipv4-192-0-2-202"}));
  EXPECT_EQ(OrphanedL2Advertisements(l2s, in_use, "self", m, kNow, false),
            (std::vector<std::string>{"ipv4-192-0-2-200"}));
}

}  // namespace
}  // namespace pylon::agent::testing
