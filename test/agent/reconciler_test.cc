// Scenario tests of the agent core: planner + address sync + announcements over FakeNetlink and
// fake inputs.
#include "agent/reconciler.h"

#include <gtest/gtest.h>

#include "agent/agent_metrics.h"
#include "agent_world.h"

namespace pylon::agent::testing {
namespace {

// --- Local addresses: only the hash winner holds them --------------------------------------

struct LocalCase {
  std::string ip;
  std::string expect_prefix;  // with the subnet's prefix length
};

class LocalWinnerTest : public ::testing::TestWithParam<LocalCase> {};

TEST_P(LocalWinnerTest, OnlyTheHashWinnerHoldsTheAddress) {
  const LocalCase& c = GetParam();
  const std::string winner = HashWinner(kNodes, Ip(c.ip));
  for (const auto& self : kNodes) {
    SCOPED_TRACE(self);
    AgentWorld w(self);
    w.services_.push_back(Svc("web", {.ips = {c.ip}}));
    auto r = w.Pass();
    if (self != winner) {
      EXPECT_FALSE(w.KernelHas(w.eth0_, c.expect_prefix));
      EXPECT_TRUE(w.writer_.patches.empty());
      EXPECT_TRUE(w.writer_.events.empty());
      EXPECT_TRUE(w.announcer_.sent().empty());
      continue;
    }
    ASSERT_TRUE(w.KernelHas(w.eth0_, c.expect_prefix));
    for (const auto& a : w.KernelAddresses(w.eth0_)) {
      if (a.prefix != Pfx(c.expect_prefix)) continue;
      EXPECT_EQ(a.proto, netlink::kPylonAddressProto);
      EXPECT_NE(a.lifetimes.valid, netlink::kForever);  // dead-man switch
      if (a.family() == net::Family::kV6) {
        EXPECT_TRUE(a.has_flag(netlink::addr_flags::kNoDad));
        EXPECT_EQ(a.lifetimes.preferred, netlink::Seconds{0});  // never a source address
      }
    }
    const std::string fam = Ip(c.ip).is_v4() ? model::kAnnAnnouncingV4 : model::kAnnAnnouncingV6;
    ASSERT_EQ(w.writer_.patches.size(), 1u);
    EXPECT_EQ(w.writer_.patches[0].annotations.at(fam), self + ",eth0");
    ASSERT_EQ(w.writer_.events.size(), 1u);
    EXPECT_EQ(w.writer_.events[0].reason, "AnnouncingLocal");
    EXPECT_EQ(w.writer_.events[0].message,
              "Node " + self + " announcing " + c.ip + " on interface eth0");
    // The announcement burst: one now, then spaced; nothing more after the third.
    EXPECT_EQ(w.announcer_.sent().size(), 1u);
    for (int i = 0; i < 4; ++i) {
      w.clock_.Advance(milliseconds(300));
      w.reconciler_->SendDueAnnouncements();
    }
    ASSERT_EQ(w.announcer_.sent().size(), 3u);
    EXPECT_EQ(w.announcer_.sent()[0].address, Ip(c.ip));
    EXPECT_EQ(w.announcer_.sent()[0].iface.ifindex, w.eth0_);
    EXPECT_EQ(w.metrics_.Get(kMetricGarpSent, {{"family", Ip(c.ip).is_v4() ? "IPv4" : "IPv6"}}), 3);
    EXPECT_EQ(w.metrics_.Get(kMetricAnnounced,
                             {{"kind", "local"}, {"family", Ip(c.ip).is_v4() ? "IPv4" : "IPv6"}}),
              1);
  }
}

INSTANTIATE_TEST_SUITE_P(Addresses, LocalWinnerTest,
                         ::testing::Values(LocalCase{"192.0.2.100", "192.0.2.100/24"},
                                           LocalCase{"192.0.2.101", "192.0.2.101/24"},
                                           LocalCase{"192.0.2.117", "192.0.2.117/24"},
                                           LocalCase{"2001:db8:1::100", "2001:db8:1::100/64"},
                                           LocalCase{"2001:db8:1::1a7", "2001:db8:1::1a7/64"}));

TEST(ReconcilerTest, DualStackFamiliesAreElectedIndependently) {
  const std::string v4 = "192.0.2.103", v6 = "2001:db8:1::105";
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.services_.push_back(Svc("dual", {.ips = {v4, v6}}));
    w.Pass();
    EXPECT_EQ(w.Holds(v4), self == HashWinner(kNodes, Ip(v4))) << self;
    EXPECT_EQ(w.KernelHas(w.eth0_, v6 + "/64"), self == HashWinner(kNodes, Ip(v6))) << self;
  }
}

TEST(ReconcilerTest, UnchangedAnnotationIsNeverRewritten) {
  WinnerWorld w("192.0.2.100");
  w.services_.push_back(Svc("web", AnnouncedBy(w.ip_, w.self_ + ",eth0")));
  w.Pass();
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
  EXPECT_TRUE(w.writer_.patches.empty());
}

// --- Virtual addresses ----------------------------------------------------------------------

TEST(ReconcilerTest, VirtualAddressOnEveryNodeWithAggregationLength) {
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.services_.push_back(Svc("v", {.ips = {"203.0.113.5", "2001:db8:beef::5"}}));
    auto r = w.Pass();
    EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.5/24")) << self;  // default: the subnet's length
    EXPECT_TRUE(w.KernelHas(w.lb0_, "2001:db8:beef::5/120")) << self;  // aggregation /120
    EXPECT_FALSE(w.KernelHas(w.eth0_, "203.0.113.5/24"));
    EXPECT_TRUE(r.plan.virtual_in_use);
    EXPECT_EQ(*w.nl_.ReadSysctl(netlink::ArpIgnore("eth0")), "1");
    EXPECT_EQ(*w.nl_.ReadSysctl(netlink::ArpAnnounce("eth0")), "2");
    EXPECT_TRUE(w.writer_.patches.empty());  // no announcing annotation for virtual addresses
    EXPECT_TRUE(w.announcer_.sent().empty());
    EXPECT_TRUE(w.writer_.events.empty());  // no event per node for virtual addresses
  }
}

TEST(ReconcilerTest, NoStrictArpWithoutVirtualAddresses) {
  AgentWorld w("node1");
  w.services_.push_back(Svc("web", {.ips = {"192.0.2.100"}}));
  w.Pass();
  auto v = w.nl_.ReadSysctl(netlink::ArpIgnore("eth0"));
  EXPECT_TRUE(!v || *v != "1");
}

struct EtpVirtualCase {
  std::string name;
  std::map<std::string, bool> endpoints;  // node -> ready
  bool terminating_serving_on_self = false;
  bool expect_held;
};

class EtpLocalVirtualTest : public ::testing::TestWithParam<EtpVirtualCase> {};

TEST_P(EtpLocalVirtualTest, HeldOnlyWithAUsableLocalEndpoint) {
  const auto& c = GetParam();
  AgentWorld w("node2");
  auto slice = Slice("default", "v", c.endpoints);
  if (c.terminating_serving_on_self) {
    model::Endpoint e;
    e.node_name = "node2";
    e.ready = false;
    e.serving = true;
    e.terminating = true;
    slice.endpoints.push_back(e);
  }
  w.services_.push_back(Svc("v", {.ips = {"203.0.113.9"}, .etp = "Local"}, {slice}));
  w.Pass();
  EXPECT_EQ(w.KernelHas(w.lb0_, "203.0.113.9/24"), c.expect_held);
  EXPECT_TRUE(w.writer_.etp_resets.empty());  // virtual addresses honour Local
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EtpLocalVirtualTest,
    ::testing::Values(EtpVirtualCase{"ready_here", {{"node2", true}}, false, true},
                      EtpVirtualCase{"ready_elsewhere", {{"node1", true}}, false, false},
                      EtpVirtualCase{"not_ready_here", {{"node2", false}}, false, false},
                      EtpVirtualCase{"terminating_serving_here", {}, true, true},
                      EtpVirtualCase{"none", {}, false, false}),
    [](const auto& p) { return p.param.name; });

TEST(ReconcilerTest, EtpLocalVirtualFollowsEndpoints) {
  AgentWorld w("node2");
  w.services_.push_back(Svc("v", {.ips = {"203.0.113.9"}, .etp = "Local"},
                            {Slice("default", "v", {{"node2", true}})}));
  w.Pass();
  EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.9/24"));
  w.services_[0].slices = {Slice("default", "v", {{"node3", true}})};  // the pod moved
  w.Pass();
  EXPECT_FALSE(w.KernelHas(w.lb0_, "203.0.113.9/24"));
}

// --- externalTrafficPolicy Local on local addresses -----------------------------------------

TEST(ReconcilerTest, EtpLocalResetByTheWinnerOnly) {
  const std::string ip = "192.0.2.104";
  const std::string winner = HashWinner(kNodes, Ip(ip));
  for (const auto& self : kNodes) {
    AgentWorld w(self, EtpLocalMode::kReset);
    w.services_.push_back(Svc("web", {.ips = {ip}, .etp = "Local"}));
    w.Pass();
    if (self == winner) {
      ASSERT_EQ(w.writer_.etp_resets.size(), 1u);
      EXPECT_EQ(w.writer_.etp_resets[0].name, "web");
      EXPECT_TRUE(w.Holds(ip));
    } else {
      EXPECT_TRUE(w.writer_.etp_resets.empty());
    }
  }
}

TEST(ReconcilerTest, EtpLocalElectAmongNodesWithReadyEndpoints) {
  const std::string ip = "192.0.2.104";
  const std::string hash_winner = HashWinner(kNodes, Ip(ip));
  const std::string with_pod = SomeLoser(kNodes, hash_winner);
  for (const auto& self : kNodes) {
    SCOPED_TRACE(self);
    AgentWorld w(self, EtpLocalMode::kElect);
    w.services_.push_back(
        Svc("web", {.ips = {ip}, .etp = "Local"}, {Slice("default", "web", {{with_pod, true}})}));
    w.Pass();
    EXPECT_EQ(w.Holds(ip), self == with_pod);
    EXPECT_TRUE(w.writer_.etp_resets.empty());  // the Service is left as written
  }
  // No ready endpoint anywhere: nobody announces.
  AgentWorld w(hash_winner, EtpLocalMode::kElect);
  w.services_.push_back(
      Svc("web", {.ips = {ip}, .etp = "Local"}, {Slice("default", "web", {{with_pod, false}})}));
  w.Pass();
  EXPECT_FALSE(w.Holds(ip));
}

// Each family follows its own EndpointSlices, as kube-proxy programs each family from the slices
// of that addressType: a dual-stack pod's two slices are separate writes, and the node whose IPv4
// endpoint turned unready while its IPv6 one is still ready drops IPv4 traffic already.
TEST(ReconcilerTest, EtpLocalElectFollowsEachFamilysSlices) {
  const std::string v4 = "192.0.2.108", v6 = "2001:db8:1::108";
  // The IPv4 endpoint on the node that would lose v4 between the two nodes with endpoints, so
  // that electing among every node with an endpoint of either family picks the wrong one.
  const std::vector<std::string> pair = {"node2", "node3"};
  const std::string v4_node = SomeLoser(pair, HashWinner(pair, Ip(v4)));
  const std::string v6_node = v4_node == "node2" ? "node3" : "node2";
  for (const auto& self : kNodes) {
    SCOPED_TRACE(self);
    AgentWorld w(self, EtpLocalMode::kElect);
    auto slice4 = Slice("default", "dual", {{v4_node, true}, {v6_node, false}});
    slice4.address_type = "IPv4";
    auto slice6 = Slice("default", "dual", {{v4_node, false}, {v6_node, true}});
    slice6.name = "dual-def";
    slice6.address_type = "IPv6";
    w.services_.push_back(Svc("dual", {.ips = {v4, v6}, .etp = "Local"}, {slice4, slice6}));
    w.Pass();
    EXPECT_EQ(w.Holds(v4), self == v4_node);
    EXPECT_EQ(w.KernelHas(w.eth0_, v6 + "/64"), self == v6_node);
  }
}

// purelb.io/node-affinity: service-endpoints: elected among live nodes with an endpoint; none
// live -> the plain election, counted once; a shared address ignores the annotation.
TEST(ReconcilerTest, NodeAffinityPrefersEndpointNodesAndFallsBack) {
  const std::string ip = "192.0.2.109";
  const std::string hash_winner = HashWinner(kNodes, Ip(ip));
  const std::string with_pod = SomeLoser(kNodes, hash_winner);
  const std::map<std::string, std::string> affinity = {
      {model::kAnnNodeAffinity, model::kNodeAffinityServiceEndpoints}};
  for (const auto& self : kNodes) {
    SCOPED_TRACE(self);
    {
      AgentWorld w(self);
      w.services_.push_back(Svc("web", {.ips = {ip}, .annotations = affinity},
                                {Slice("default", "web", {{with_pod, true}})}));
      w.Pass();
      EXPECT_EQ(w.Holds(ip), self == with_pod);
      EXPECT_EQ(w.metrics_.Get(kMetricAffinityFallbacks, {}), 0);
    }
    {
      // The only endpoint is on a node that is not in the election: plain election.
      AgentWorld w(self);
      w.services_.push_back(Svc("web", {.ips = {ip}, .annotations = affinity},
                                {Slice("default", "web", {{"node9", true}})}));
      w.Pass();
      w.Pass();
      EXPECT_EQ(w.Holds(ip), self == hash_winner);
      EXPECT_EQ(w.metrics_.Get(kMetricAffinityFallbacks, {}), 1);  // once, not per pass
    }
    {
      auto shared = affinity;
      shared[model::kAnnSharing] = "k";
      AgentWorld w(self);
      w.services_.push_back(Svc("web", {.ips = {ip}, .annotations = shared},
                                {Slice("default", "web", {{with_pod, true}})}));
      w.Pass();
      EXPECT_EQ(w.Holds(ip), self == hash_winner);
    }
  }
}

// --- Failover, stickiness, membership -------------------------------------------------------

TEST(ReconcilerTest, TakesOverWhenTheWinnerLeavesAndIsSticky) {
  const std::string ip = "192.0.2.106";
  const std::string first = HashWinner(kNodes, Ip(ip));
  std::vector<std::string> rest;
  for (const auto& n : kNodes) {
    if (n != first) rest.push_back(n);
  }
  const std::string second = HashWinner(rest, Ip(ip));
  AgentWorld w(second);
  w.services_.push_back(Svc("web", AnnouncedBy(ip, first + ",eth0")));
  w.Pass();
  EXPECT_FALSE(w.Holds(ip));

  // Graceful: the winner deletes its lease -> taken over at once.
  w.DeleteLease(first);
  w.Pass();
  EXPECT_TRUE(w.Holds(ip));
  EXPECT_EQ(w.metrics_.Get(kMetricWinnerChanges, {}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricMemberCount, {}), 2);
  w.services_[0].service.annotations[model::kAnnAnnouncingV4] = second + ",eth0";

  // The preferred node returns: sticky, the current announcer keeps the address.
  w.Renew(first);
  w.Pass();
  EXPECT_TRUE(w.Holds(ip));
}

TEST(ReconcilerTest, TakesOverWhenTheWinnersLeaseExpires) {
  const std::string ip = "192.0.2.107";
  const std::string first = HashWinner(kNodes, Ip(ip));
  const std::string self = SomeLoser(kNodes, first);
  std::vector<std::string> live;
  for (const auto& n : kNodes) {
    if (n != first) live.push_back(n);
  }
  AgentWorld w(self);
  w.Serve("web", {ip});
  EXPECT_FALSE(w.Holds(ip));
  w.Advance(seconds(5), live);
  w.Pass();
  // Still inside the winner's lease: nobody takes over yet.
  EXPECT_FALSE(w.Holds(ip));
  w.Advance(seconds(6), live);  // 11 s without a renewal from `first`
  w.Pass();
  EXPECT_EQ(w.Holds(ip), self == HashWinner(live, Ip(ip)));
}

TEST(ReconcilerTest, NodeBeingDeletedStopsAnnouncing) {
  const std::string ip = "192.0.2.118";
  const std::string first = HashWinner(kNodes, Ip(ip));
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.services_.push_back(Svc("web", {.ips = {ip}}));
    w.Pass();
    EXPECT_EQ(w.Holds(ip), self == first);
    w.excluded_ = {NodeName(first)};  // e.g. deletionTimestamp set on the winner's Node
    w.Pass();
    std::vector<std::string> rest;
    for (const auto& n : kNodes) {
      if (n != first) rest.push_back(n);
    }
    EXPECT_EQ(w.Holds(ip), self == HashWinner(rest, Ip(ip))) << self;
  }
}

TEST(ReconcilerTest, SubnetChangeWithdraws) {
  WinnerWorld w("192.0.2.108");
  w.Serve("web", {w.ip_});
  ASSERT_TRUE(w.Holds(w.ip_));
  // This node moves to another subnet: its interface and its lease say so.
  w.network_.interfaces[0].subnets = {Pfx("198.51.100.0/24")};
  w.Renew(w.self_, "198.51.100.0/24");
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
  // Still local for the others: never virtual here.
  EXPECT_FALSE(w.KernelHas(w.lb0_, w.ip_ + "/24"));
}

// --- Ownership: sweep, foreign addresses --------------------------------------------------

struct SweepCase {
  std::string name;
  bool proto_support;  // false: only the ownership record marks ours
};

class SweepTest : public ::testing::TestWithParam<SweepCase> {};

TEST_P(SweepTest, RemovesStaleOwnAddressesOnlyAndNeverForeignOnes) {
  const auto& c = GetParam();
  AgentWorld w("node1", EtpLocalMode::kReset, c.proto_support);
  // Left behind by a previous run of this agent.
  netlink::AddressSpec stale = netlink::VipAddressSpec(
      w.eth0_, Pfx("192.0.2.115/24"), netlink::Seconds{30},
      c.proto_support ? std::optional<std::uint8_t>(netlink::kPylonAddressProto) : std::nullopt);
  ASSERT_TRUE(w.nl_.AddAddress(stale).has_value());
  ASSERT_TRUE(w.nl_
                  .AddAddress(netlink::VipAddressSpec(
                      w.lb0_, Pfx("203.0.113.20/24"), netlink::Seconds{30},
                      c.proto_support ? std::optional<std::uint8_t>(netlink::kPylonAddressProto)
                                      : std::nullopt))
                  .has_value());
  MemoryOwnershipStore record;
  if (!c.proto_support) {
    ASSERT_TRUE(record
                    .Save({OwnedAddress{"eth0", Pfx("192.0.2.115/24")},
                           OwnedAddress{"kube-lb0", Pfx("203.0.113.20/24")}})
                    .has_value());
  }
  // Somebody else's addresses, in our pools and not.
  w.Host(w.eth0_, "192.0.2.116/24");
  w.Host(w.lb0_, "203.0.113.21/24");
  AddressSync sync(w.nl_, record, w.clock_);
  ASSERT_TRUE(sync.Load().has_value());
  auto report = sync.Apply({});
  EXPECT_EQ(report.removed.size(), 2u);
  EXPECT_FALSE(w.KernelHas(w.eth0_, "192.0.2.115/24"));
  EXPECT_FALSE(w.KernelHas(w.lb0_, "203.0.113.20/24"));
  EXPECT_TRUE(w.KernelHas(w.eth0_, "192.0.2.116/24"));
  EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.21/24"));
  EXPECT_TRUE(w.KernelHas(w.eth0_, "192.0.2.11/24"));  // the host's own
  EXPECT_TRUE(w.KernelHas(w.eth0_, "2001:db8:1::11/128"));
  EXPECT_TRUE(sync.owned().empty());
  EXPECT_TRUE(record.Load()->empty());
}

INSTANTIATE_TEST_SUITE_P(Marks, SweepTest,
                         ::testing::Values(SweepCase{"ifa_proto", true},
                                           SweepCase{"state_record", false}),
                         [](const auto& p) { return p.param.name; });

TEST(ReconcilerTest, RecordIsWrittenBeforeTheAddressIsAdded) {
  const std::string ip = "192.0.2.109";
  const std::string self = HashWinner(kNodes, Ip(ip));
  AgentWorld x(self, EtpLocalMode::kReset, false);
  x.services_.push_back(Svc("web", {.ips = {ip}}));
  x.nl_.FailNext("AddAddress", Error(ErrorCode::kSystem, "injected"));
  x.Pass();
  // The add failed: the record does not keep the address.
  EXPECT_TRUE(x.store_.Load()->empty());
  x.Pass();
  EXPECT_TRUE(x.Holds(ip));
  EXPECT_EQ(x.store_.Load()->count(OwnedAddress{"eth0", Pfx(ip + "/24")}), 1u);
}

TEST(ReconcilerTest, ForeignHolderOfADesiredAddressIsLeftAlone) {
  WinnerWorld w("192.0.2.110");
  w.Host(w.eth0_, w.ip_ + "/24");  // the admin put it there by hand
  w.services_.push_back(Svc("web", {.ips = {w.ip_}}));
  auto r = w.Pass();
  EXPECT_EQ(r.sync.conflicts.size(), 1u);
  EXPECT_EQ(w.writer_.node_events.size(), 1u);
  EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty());
  w.services_.clear();
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));                  // not ours: never removed
  EXPECT_EQ(w.writer_.node_events.size(), 1u);  // reported once
}

// --- Health, shutdown, departures ----------------------------------------------------------

TEST(ReconcilerTest, UnhealthyLeaseWithdrawsLocalKeepsVirtual) {
  WinnerWorld w("192.0.2.111");
  w.services_.push_back(Svc("web", {.ips = {w.ip_}}));
  w.services_.push_back(Svc("v", {.ips = {"203.0.113.7"}}));
  w.Pass();
  ASSERT_TRUE(w.Holds(w.ip_));
  w.healthy_ = false;
  w.writer_.Clear();
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
  EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.7/24"));
  EXPECT_TRUE(w.writer_.patches.empty());  // no writes while unhealthy
  w.healthy_ = true;
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
}

TEST(ReconcilerTest, ShutdownWithdrawsEverythingOfOursOnly) {
  WinnerWorld w("192.0.2.112");
  w.services_.push_back(Svc("web", {.ips = {w.ip_}}));
  w.services_.push_back(Svc("v", {.ips = {"203.0.113.8"}}));
  w.Pass();
  w.shutting_down_ = true;
  w.Pass();
  EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty());
  EXPECT_TRUE(w.OwnAddresses(w.lb0_).empty());
  EXPECT_FALSE(w.Holds(w.ip_));
  EXPECT_FALSE(w.KernelHas(w.lb0_, "203.0.113.8/24"));
  EXPECT_EQ(w.KernelAddresses(w.eth0_).size(), 2u);  // the host's two addresses
}

TEST(ReconcilerTest, StartupHoldOffTakesNoNewAddressButKeepsHeldOnes) {
  const std::string a = "192.0.2.115", b = "192.0.2.116";
  const std::string self = HashWinner(kNodes, Ip(a));
  AgentWorld w(self);
  w.Serve("a", {a});
  ASSERT_TRUE(w.Holds(a));
  // A restart: the agent holds `a` already; `b` is new. Neither is withdrawn nor taken.
  w.hold_off_ = true;
  w.writer_.Clear();
  w.Serve("b", {b});
  EXPECT_TRUE(w.Holds(a));
  EXPECT_FALSE(w.Holds(b));
  for (const auto& p : w.writer_.patches) EXPECT_NE(p.service.name, "b");
  w.hold_off_ = false;
  w.Pass();
  EXPECT_EQ(w.Holds(b), self == HashWinner(kNodes, Ip(b)));
}

// Start-up: an address whose recorded announcer this agent does not see yet is not taken, even by
// the hash winner among the nodes it sees (that announcer's agent may just not have written its
// lease yet: agents starting together, a migration from PureLB, e2e_migration_test). A lease
// duration later an announcer never seen is dead and the address is taken.
TEST(ReconcilerTest, StartupDefersToAnAnnouncerNotSeenYet) {
  WinnerWorld w("192.0.2.117");
  w.defer_unseen_ = true;
  w.services_.push_back(Svc("m", AnnouncedBy(w.ip_, "node9,eth0," + w.ip_)));
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
  for (const auto& p : w.writer_.patches) EXPECT_NE(p.service.name, "m");
  w.defer_unseen_ = false;
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
}

TEST(ReconcilerTest, DepartedServiceWithdrawsAtOnceAndClearsItsAnnotation) {
  WinnerWorld w("192.0.2.113");
  w.Serve("web", {w.ip_});
  ASSERT_TRUE(w.Holds(w.ip_));
  // The allocator released the address; our annotation is still on the Service.
  w.services_[0] =
      Svc("web", {.ips = {}, .annotations = {{model::kAnnAnnouncingV4, w.self_ + ",eth0"}}});
  w.writer_.Clear();
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
  ASSERT_EQ(w.writer_.patches.size(), 1u);
  EXPECT_FALSE(w.writer_.patches[0].annotations.at(model::kAnnAnnouncingV4).has_value());
  // Deleted altogether.
  w.services_.clear();
  w.Pass();
  EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty());
}

TEST(ReconcilerTest, DeadManSwitchRenewalKeepsTheAddress) {
  WinnerWorld w("192.0.2.114");
  w.Serve("web", {w.ip_});
  for (int i = 0; i < 6; ++i) {  // a minute of passes every 10 s
    w.Advance(seconds(10), kNodes);
    w.Pass();
  }
  EXPECT_TRUE(w.Holds(w.ip_));
  // The agent dies: nothing renews; the kernel drops the address by itself.
  w.clock_.Advance(seconds(31));
  EXPECT_FALSE(w.Holds(w.ip_));
}

// --- Lace classes ---------------------------------------------------------------------------

TEST(ReconcilerTest, LaceWinnerKeepsItsL2AdvertisementCurrent) {
  WinnerWorld w("192.0.2.201");
  w.services_.push_back(Svc("lace", {.ips = {w.ip_}, .lb_class = "lace-cni.io/public"}));
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
  ASSERT_EQ(w.writer_.l2_upserts.size(), 1u);
  const L2Advertisement& l2 = w.writer_.l2_upserts[0];
  EXPECT_EQ(l2.name, "ipv4-192-0-2-201");
  EXPECT_EQ(l2.node, w.self_);
  EXPECT_EQ(l2.interface, "eth0");
  EXPECT_EQ(l2.load_balancer_class, "lace-cni.io/public");
  EXPECT_EQ(l2.service_namespace, "default");
  EXPECT_EQ(l2.service_name, "lace");
  // Observed as written: not written again.
  w.l2advs_ = {l2};
  w.writer_.Clear();
  w.Pass();
  EXPECT_TRUE(w.writer_.l2_upserts.empty());
  // The Service goes away: the winner deletes the advertisement.
  w.services_.clear();
  w.Pass();
  EXPECT_EQ(w.writer_.l2_deletes, std::vector<std::string>{"ipv4-192-0-2-201"});
}

TEST(ReconcilerTest, LaceAddressOffEverySubnetIsAnErrorNeverVirtual) {
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.services_.push_back(Svc("lace", {.ips = {"198.51.100.9"}, .lb_class = "lace-cni.io/public"}));
    w.Pass();
    w.Pass();
    EXPECT_TRUE(w.OwnAddresses(w.lb0_).empty());
    EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty());
    if (self == "node1") {  // the reporter: the live member with the lowest name, once
      ASSERT_EQ(w.writer_.events.size(), 1u);
      EXPECT_TRUE(w.writer_.events[0].warning);
      EXPECT_EQ(w.writer_.events[0].reason, "NoNodeOnSubnet");
    } else {
      EXPECT_TRUE(w.writer_.events.empty());
    }
  }
}

TEST(ReconcilerTest, LaceL3AddressIsVirtualOnEveryNodeEvenOnANodeSubnet) {
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.services_.push_back(
        Svc("routed", {.ips = {"192.0.2.221", "203.0.113.130"}, .lb_class = "lace-cni.io/routed"}));
    w.Pass();
    w.Pass();
    EXPECT_TRUE(w.KernelHas(w.lb0_, "192.0.2.221/32")) << self;
    EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.130/32")) << self;  // host route: no aggregation
    EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty()) << self;
    EXPECT_TRUE(w.writer_.l2_upserts.empty()) << self;  // no L2Advertisement: nothing elected
    EXPECT_TRUE(w.writer_.events.empty()) << self;
  }
}

// A purelb.io/v2 group's Services get the v2 announcing form, "node,interface,ip" entries (one per
// address, other addresses' entries kept, entries of addresses the Service lost dropped); a v1
// group's keep "node,interface". A v1-form value is read for stickiness either way.
TEST(ReconcilerTest, V2GroupsWriteTheV2AnnouncingForm) {
  const std::string ip = "192.0.2.231";
  const std::string winner = HashWinner(kNodes, Ip(ip));
  {
    AgentWorld w(winner);
    w.Serve("v2svc", {ip});
    EXPECT_TRUE(w.Holds(ip));
    ASSERT_EQ(w.writer_.patches.size(), 1u);
    EXPECT_EQ(w.writer_.patches[0].annotations.at(model::kAnnAnnouncingV4), winner + ",eth0," + ip);
  }
  {
    // Another node's entry for an address the Service still has stays; one for an address it
    // lost, and the old v1 form, go.
    AgentWorld w(winner);
    w.services_.push_back(
        Svc("v2svc",
            {.ips = {ip, "192.0.2.232"},
             .annotations = {{model::kAnnAnnouncingV4,
                              "zz,eth9,192.0.2.232 old,eth0,192.0.2.233 " + winner + ",eth0"}}}));
    w.Pass();
    ASSERT_FALSE(w.writer_.patches.empty());
    EXPECT_EQ(w.writer_.patches[0].annotations.at(model::kAnnAnnouncingV4),
              winner + ",eth0," + ip + " zz,eth9,192.0.2.232");
  }
  {
    // Sticky on a v1-form announcer (a group that moved from v1 to v2): the named node keeps it.
    const std::string other = SomeLoser(kNodes, winner);
    AgentWorld w(winner);
    w.services_.push_back(Svc("v2svc", AnnouncedBy(ip, other + ",eth0")));
    w.Pass();
    EXPECT_FALSE(w.Holds(ip));
  }
}

TEST(ReconcilerTest, V2RemoteIsVirtualEverywhereAndV2LocalOffSubnetIsNeverAnnounced) {
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.services_.push_back(Svc("remote", {.ips = {"192.0.2.241"}}));
    w.services_.push_back(Svc("local", {.ips = {"203.0.113.201"}}));
    w.Pass();
    w.Pass();
    EXPECT_TRUE(w.KernelHas(w.lb0_, "192.0.2.241/24")) << self;  // aggregation default: subnet
    EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty()) << self;
    EXPECT_FALSE(w.KernelHas(w.lb0_, "203.0.113.201/24")) << self;
    if (self == "node1") {
      ASSERT_EQ(w.writer_.events.size(), 1u);
      EXPECT_EQ(w.writer_.events[0].reason, "NoNodeOnSubnet");
      EXPECT_NE(w.writer_.events[0].message.find("purelb.io/v2 local"), std::string::npos);
    } else {
      EXPECT_TRUE(w.writer_.events.empty()) << self;
    }
  }
}

TEST(ReconcilerTest, EtpLocalOnAnAggregateIsWarnedAboutOnce) {
  // 203.0.113.0/26 of the world's ServiceGroup has aggregation default: the /24 subnet.
  for (const auto& self : kNodes) {
    AgentWorld w(self);
    w.Serve(Svc("agg", {.ips = {"203.0.113.5"}, .etp = "Local"}));
    w.Pass();
    if (self == "node1") {
      ASSERT_EQ(w.writer_.events.size(), 1u);
      EXPECT_EQ(w.writer_.events[0].reason, "EtpLocalAggregated");
      EXPECT_NE(w.writer_.events[0].message.find("/24 aggregate"), std::string::npos);
    } else {
      EXPECT_TRUE(w.writer_.events.empty());
    }
  }
}

TEST(ReconcilerTest, ServicesOfOtherClassesAreIgnored) {
  AgentWorld w("node1");
  const int before = w.nl_.mutation_count();
  w.services_.push_back(Svc("other", {.ips = {"192.0.2.100"}, .lb_class = "example.com/lb"}));
  w.services_.push_back(Svc("np", {.ips = {"192.0.2.101"}, .type = "NodePort"}));
  w.Pass();
  EXPECT_TRUE(w.OwnAddresses(w.eth0_).empty());
  EXPECT_EQ(w.nl_.mutation_count(), before);
}

}  // namespace
}  // namespace pylon::agent::testing

namespace pylon::agent::testing {
namespace {

// --- The successor's wire check (takeover.h) ---------------------------------------------------

TEST(ReconcilerTest, TakeoverWaitsWhileTheSilentHolderStillAnswers) {
  WinnerWorld w("192.0.2.100", {"node2", "node3"});
  FakeWireChecker wire;
  // Longer than the lease (10 s): the holder's addresses outlive its lease's expiry.
  w.EnableWireCheck(&wire, std::chrono::seconds(30));
  w.macs_["node1"] = "02:00:00:00:00:01";
  w.Renew("node1");
  w.peer_signs_[NodeName("node1")].kube_proxy_url = "http://192.0.2.11:10256/healthz";
  w.services_.push_back(Svc("web", AnnouncedBy(w.ip_, "node1,eth0")));
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_)) << "node1 is alive and sticky";
  EXPECT_TRUE(wire.jobs.empty());

  // node1's agent dies; its lease runs out. A check starts, the address waits for it.
  w.Advance(std::chrono::seconds(11), {"node2", "node3"});
  w.Pass();
  ASSERT_EQ(wire.jobs.size(), 1u);
  EXPECT_EQ(wire.jobs[0].holder, NodeName("node1"));
  EXPECT_EQ(wire.jobs[0].holder_macs.size(), 1u);
  EXPECT_EQ(wire.jobs[0].kube_proxy_url, "http://192.0.2.11:10256/healthz");
  EXPECT_FALSE(w.Holds(w.ip_));
  // node1's kernel answers and its kube-proxy passes: deferred, nothing written.
  wire.Answer(true, true);
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
  EXPECT_TRUE(w.writer_.patches.empty());
  EXPECT_TRUE(w.announcer_.sent().empty());
  // node1's agent is back: the address stays there, no check is due.
  w.Advance(milliseconds(100), {"node1", "node2", "node3"});
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
  EXPECT_TRUE(wire.jobs.empty());
  EXPECT_EQ(w.metrics_.Get(kMetricAddressMoves, {{"reason", "crash"}}), 0);

  // Dead again, and this time its address expired: nobody answers, taken over at once.
  w.Advance(std::chrono::seconds(11), {"node2", "node3"});
  w.Pass();
  ASSERT_EQ(wire.jobs.size(), 1u);
  wire.Answer(false, false);
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
  EXPECT_EQ(w.metrics_.Get(kMetricAddressMoves, {{"reason", "crash"}}), 1);
  bool moved_event = false;
  for (const auto& e : w.writer_.events) {
    if (e.reason == "AddressMoved") {
      moved_event = true;
      EXPECT_NE(e.message.find("took over " + w.ip_ + " (crash)"), std::string::npos) << e.message;
    }
  }
  EXPECT_TRUE(moved_event);
}

TEST(ReconcilerTest, TakeoverFromAHolderThatLeftIsImmediateAndCountedPlanned) {
  WinnerWorld w("192.0.2.100", {"node2", "node3"});
  FakeWireChecker wire;
  w.EnableWireCheck(&wire);
  w.macs_["node1"] = "02:00:00:00:00:01";
  w.Renew("node1");
  w.peer_signs_[NodeName("node1")].kube_proxy_url = "http://192.0.2.11:10256/healthz";
  w.services_.push_back(Svc("web", AnnouncedBy(w.ip_, "node1,eth0")));
  w.Pass();
  w.DeleteLease("node1");  // a graceful stop: withdrawn, then the lease deleted
  w.Pass();
  EXPECT_TRUE(wire.jobs.empty());
  EXPECT_TRUE(w.Holds(w.ip_));
  EXPECT_EQ(w.metrics_.Get(kMetricAddressMoves, {{"reason", "planned"}}), 1);
}

// --- The drain of planned moves (drain.h) ---------------------------------------------------

// node1 held the address and leaves load balancing (excluded) while alive: this node takes the
// address and, before adding it, forwards the flows node1 still carries to node1's address on
// the segment; for the timeout, then not.
TEST(ReconcilerTest, TakeoverFromAnExcludedLiveHolderForwardsItsFlowsFirst) {
  WinnerWorld w("192.0.2.100", {"node2", "node3"});
  w.EnableDrain(std::chrono::seconds(60), w.ip_ + "/24");
  w.peer_signs_[NodeName("node1")].addresses = {Ip("2001:db8:1::11"), Ip("192.0.2.11")};
  w.services_.push_back(Svc("web", AnnouncedBy(w.ip_, "node1,eth0")));
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_)) << "node1 is alive and sticky";
  EXPECT_TRUE(w.drain_rulesets_.empty());

  w.excluded_.push_back(NodeName("node1"));  // e.g. labelled exclude-from-external-load-balancers
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
  ASSERT_EQ(w.drain_rulesets_.size(), 1u);
  EXPECT_NE(w.drain_rulesets_[0].find("ip daddr 192.0.2.100 tcp flags & (syn | ack) != syn ct "
                                      "state { new, invalid } dup to 192.0.2.11 device \"eth0\""),
            std::string::npos)
      << w.drain_rulesets_[0];
  EXPECT_FALSE(w.drain_before_add_[0]) << "the table is written before the address is added";
  EXPECT_EQ(w.metrics_.Get(kMetricDrainForwards, {}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricAddressMoves, {{"reason", "planned"}}), 1);

  // Later passes (the announcing annotation now names this node) write nothing new.
  w.Advance(std::chrono::seconds(30), {"node1", "node2", "node3"});
  w.Pass();
  EXPECT_EQ(w.drain_rulesets_.size(), 1u);
  // The timeout: the table is emptied, the address stays.
  w.Advance(std::chrono::seconds(30), {"node1", "node2", "node3"});
  w.Pass();
  ASSERT_EQ(w.drain_rulesets_.size(), 2u);
  EXPECT_EQ(w.drain_rulesets_[1], RenderDrainRuleset({}));
  EXPECT_EQ(w.metrics_.Get(kMetricDrainForwards, {}), 0);
  EXPECT_TRUE(w.Holds(w.ip_));
}

// Which takeovers drain: only from a holder that is excluded, still alive, and has an address on
// the subnet.
TEST(ReconcilerTest, OnlyPlannedMovesFromLiveHoldersWithAnAddressDrain) {
  const std::string ip = "192.0.2.100";
  const std::string self = HashWinner({"node2", "node3"}, Ip(ip));
  struct Row {
    const char* what;
    bool excluded, alive;
    std::vector<std::string> addresses;
    bool drains;
  };
  for (const Row& r :
       {Row{"excluded and alive", true, true, {"192.0.2.11"}, true},
        Row{"crashed (lease expired), not excluded", false, false, {"192.0.2.11"}, false},
        Row{"excluded, but its lease expired too", true, false, {"192.0.2.11"}, false},
        Row{"excluded, no heartbeat endpoints", true, true, {}, false},
        Row{"excluded, its address on another subnet", true, true, {"198.51.100.11"}, false}}) {
    SCOPED_TRACE(r.what);
    AgentWorld w(self);
    w.EnableDrain(std::chrono::seconds(60));
    for (const auto& a : r.addresses) w.peer_signs_[NodeName("node1")].addresses.push_back(Ip(a));
    w.services_.push_back(Svc("web", AnnouncedBy(ip, "node1,eth0")));
    w.Pass();
    if (r.excluded) w.excluded_.push_back(NodeName("node1"));
    if (!r.alive) w.Advance(std::chrono::seconds(11), {"node2", "node3"});
    w.Pass();
    EXPECT_TRUE(w.Holds(ip));
    EXPECT_EQ(!w.drain_rulesets_.empty(), r.drains);
    EXPECT_EQ(w.metrics_.Get(kMetricDrainForwards, {}), r.drains ? 1 : 0);
  }
}

// A table that cannot be written does not stop the move (flows are reset, as without a drain),
// and is written on the next pass.
TEST(ReconcilerTest, AFailedDrainWriteIsRetriedAndNeverHoldsTheMove) {
  WinnerWorld w("192.0.2.100", {"node2", "node3"});
  w.EnableDrain(std::chrono::seconds(60));
  w.peer_signs_[NodeName("node1")].addresses = {Ip("192.0.2.11")};
  w.services_.push_back(Svc("web", AnnouncedBy(w.ip_, "node1,eth0")));
  w.Pass();
  w.excluded_.push_back(NodeName("node1"));
  w.drain_fail_ = true;
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
  EXPECT_TRUE(w.drain_rulesets_.empty());
  w.drain_fail_ = false;
  w.Pass();
  ASSERT_EQ(w.drain_rulesets_.size(), 1u);
  EXPECT_NE(w.drain_rulesets_[0].find("dup to 192.0.2.11"), std::string::npos);
}

TEST(ReconcilerTest, RestartedAgentKeepsWhatItHoldsUntilFirstHealthy) {
  WinnerWorld w("192.0.2.100");
  w.Serve("web", {w.ip_});
  ASSERT_TRUE(w.Holds(w.ip_));
  const auto patches = w.writer_.patches.size();
  // Not healthy yet (lease not renewed, kube-proxy not checked): kept while in PlanInputs::keep.
  w.healthy_ = false;
  w.keep_ = {Ip(w.ip_)};
  w.Pass();
  EXPECT_TRUE(w.Holds(w.ip_));
  EXPECT_EQ(w.writer_.patches.size(), patches) << "no write for a kept address";
  // Nothing new is taken meanwhile.
  std::string other;
  for (int i = 101; i < 140 && other.empty(); ++i) {
    const std::string cand = "192.0.2." + std::to_string(i);
    if (HashWinner(kNodes, Ip(cand)) == w.self_) other = cand;
  }
  ASSERT_FALSE(other.empty());
  w.Serve("other", {other});
  EXPECT_FALSE(w.Holds(other));
  // Without it, an unhealthy node withdraws.
  w.keep_.clear();
  w.Pass();
  EXPECT_FALSE(w.Holds(w.ip_));
}

}  // namespace
}  // namespace pylon::agent::testing
