// Probe ahead in the allocator: the taken addresses read from the live node leases, kept out of
// the pool before any Service gets them (and released when no live node lists them), a Service
// that requests one refused, and the group status (probeAhead, conflicts "Skipped",
// conflictCount).
#include "allocator/probe_ahead.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/config_status.h"
#include "allocator/rebuild.h"
#include "allocator/reconcile.h"
#include "allocator/service_writes.h"
#include "common/time.h"
#include "config/validate.h"
#include "model/probe_ahead.h"
#include "reconcile_world.h"
#include "test_objects.h"

namespace pylon::allocator::testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

NodeLease Lease(const std::string& node, const std::string& probe_ahead, WallTime renewed) {
  NodeLease l = ReadNodeLease(node, node, 10, renewed, "192.0.2.0/24");
  l.probe_ahead_annotation = probe_ahead;
  return l;
}

TEST(ProbeAheadAllocatorTest, OnlyPoolsOfLocalAddressesAreProbedAhead) {
  struct Row {
    config::AnnounceMode mode;
    bool probed;
  };
  for (const Row& r : {Row{config::AnnounceMode::kLocalOrVirtual, true},  // ServiceGroup v1 local
                       Row{config::AnnounceMode::kLocal, true},           // ServiceGroup v2 local
                       Row{config::AnnounceMode::kL2, true},              // LoadBalancerClass l2
                       Row{config::AnnounceMode::kL3, false},             // LoadBalancerClass l3
                       Row{config::AnnounceMode::kRemote, false}}) {      // ServiceGroup v2 remote
    config::Group g;
    g.mode = r.mode;
    EXPECT_EQ(ProbedAhead(g), r.probed) << config::AnnounceModeName(r.mode);
  }
}

TEST(ProbeAheadAllocatorTest, TakenEntriesComeFromLiveLeasesOnly) {
  const std::string taken = "192.0.2.10 taken " + kMac + " " + FormatTime(kT0);
  const std::vector<NodeLease> leases = {
      Lease("node1", taken + ",192.0.2.11 free " + FormatTime(kT0), kT0),
      // Also lists .10, later: the earliest report wins.
      Lease("node2", "192.0.2.10 taken " + kMac + " " + FormatTime(kT0 + seconds(5)), kT0),
      // Expired lease: not believed.
      Lease("node3", "192.0.2.12 taken " + kMac + " " + FormatTime(kT0), kT0 - minutes(1)),
      Lease("node4", "garbage", kT0),
  };
  auto t = TakenFromLeases(leases, kT0 + seconds(1));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], (TakenAhead{Ip("192.0.2.10"), kMac, "node1", kT0}));
}

class World : public ConflictWorld {
 public:
  Decision Run(SvcSpec s, WallTime now) { return ReconcileAt(testing::ServiceJson(s), now); }
  void Apply(const std::vector<TakenAhead>& taken) {
    changed_.clear();
    freed_.clear();
    ApplyTakenAhead(taken, config_, ctx_.conflict_hold, book_, pool_, &changed_, &freed_);
  }
  std::vector<std::string> Next() {
    std::vector<std::string> out;
    const auto next = pool_.NextFree(kPool, net::Family::kV4, 4);
    EXPECT_TRUE(next.has_value());
    if (!next) return out;
    for (const auto& ip : *next) out.push_back(ip.ToString());
    return out;
  }
  std::set<std::string> changed_, freed_;
};

TEST(ProbeAheadAllocatorTest, ATakenAddressIsNeverHandedOutWhileListed) {
  World w;
  EXPECT_EQ(w.Next(), (std::vector<std::string>{"192.0.2.10", "192.0.2.11", "192.0.2.12"}));
  const TakenAhead t{Ip("192.0.2.10"), kMac, "node1", kT0};
  w.Apply({t});
  EXPECT_EQ(w.changed_, std::set<std::string>{kPool});
  EXPECT_EQ(w.Next(), (std::vector<std::string>{"192.0.2.11", "192.0.2.12"}));
  // Idempotent: the same list changes nothing.
  w.Apply({t});
  EXPECT_TRUE(w.changed_.empty());
  // The first Service gets the next address, no event about a conflict: it never had .10.
  SvcSpec web;
  web.name = "web";
  Decision d = w.Run(web, kT0 + seconds(1));
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.11"});
  for (const auto& e : d.events) EXPECT_NE(e.reason, "AddressConflict");
  // A Service that asks for it is refused, naming the host.
  SvcSpec req;
  req.name = "req";
  req.annotations = {{"purelb.io/addresses", "192.0.2.10"}};
  d = w.Run(req, kT0 + seconds(2));
  ASSERT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_EQ(d.reason, Reason::kAddressConflict);
  EXPECT_NE(d.message.find("192.0.2.10 is in use on the network by another host (MAC " + kMac +
                           ", answered the probe of node node1 at"),
            std::string::npos)
      << d.message;
  // The pool's status names it.
  auto shown = w.book_.ForPool(kPool);
  ASSERT_GE(shown.size(), 1u);
  EXPECT_TRUE(std::any_of(shown.begin(), shown.end(), [](const ConflictReport& r) {
    return r.skipped && r.address.ToString() == "192.0.2.10";
  }));
  // No live node lists it any more: back in the pool.
  w.Apply({});
  EXPECT_EQ(w.freed_, std::set<std::string>{kPool});
  EXPECT_EQ(w.Next(), (std::vector<std::string>{"192.0.2.12", "192.0.2.10"}));
}

TEST(ProbeAheadAllocatorTest, ATakenAddressAServiceHoldsAlreadyIsLeftToTheAgentsProbe) {
  World w;
  SvcSpec web;
  web.name = "web";
  ASSERT_EQ(Ips(w.Run(web, kT0)), std::vector<std::string>{"192.0.2.10"});
  w.Apply({TakenAhead{Ip("192.0.2.10"), kMac, "node1", kT0}});
  EXPECT_EQ(w.pool_.HoldersOf(Ip("192.0.2.10")).size(), 1u);
  EXPECT_EQ(w.pool_.HoldersOf(Ip("192.0.2.10"))[0].ToString(), "default/web");
}

TEST(ProbeAheadAllocatorTest, StatusShowsTheNextAddressesAndTheSkippedOnes) {
  json obj = testing::SmallDefaultGroup();
  const config::ObjectStatus st = ValidStatus();
  PoolUsage usage;
  usage.probe_ahead = true;
  usage.next_v4 = {Ip("192.0.2.11"), Ip("192.0.2.12")};
  ConflictReport r{Ip("192.0.2.10"), kMac, "node1", "", "", kT0, kT0 + minutes(5), false};
  r.skipped = true;
  usage.conflicts = {r};
  ConfigStatusWrite w = PlanConfigStatus(obj, st, usage, "2025-03-01T10:00:00Z");
  ASSERT_TRUE(w.object.has_value());
  const json& s = (*w.object)["status"];
  EXPECT_EQ(s["probeAhead"],
            (json{{"ipv4", {"192.0.2.11", "192.0.2.12"}}, {"ipv6", json::array()}}));
  EXPECT_EQ(s["conflictCount"], 1);
  ASSERT_EQ(s["conflicts"].size(), 1u);
  EXPECT_EQ(s["conflicts"][0]["action"], "Skipped");
  EXPECT_EQ(s["conflicts"][0]["node"], "node1");
  // Without probe ahead there is no probeAhead field; without conflicts no count.
  ConfigStatusWrite off = PlanConfigStatus(*w.object, st, PoolUsage{}, "2025-03-01T10:00:01Z");
  ASSERT_TRUE(off.object.has_value());
  EXPECT_FALSE((*off.object)["status"].contains("probeAhead"));
  EXPECT_FALSE((*off.object)["status"].contains("conflictCount"));
}

}  // namespace
}  // namespace pylon::allocator::testing
