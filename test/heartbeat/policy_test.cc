// The policy that combines lease and heartbeat liveness, checked against the real Membership and
// Elector: scenarios walk leases, heartbeats and the clock and compare who wins.
#include "heartbeat/policy.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "election/elector.h"
#include "support/election.h"

namespace pylon::heartbeat {
namespace {

using election::NodeName;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(CombinedLiveness, Table) {
  struct Row {
    bool member, lease_live;
    std::optional<PeerState> hb;
    bool want;
  };
  const Row rows[] = {
      {true, false, PeerState::kAlive, true},      // API outage: heard -> live
      {true, true, PeerState::kDead, false},       // fast failover: lease valid, quiet -> dead
      {true, true, PeerState::kUnhealthy, false},  // its link is down
      {true, true, PeerState::kNeverHeard, true},  // old agent: lease decides
      {true, false, PeerState::kNeverHeard, false},
      {true, true, PeerState::kStarting, true},  // a fresh agent: its lease decides
      {true, false, PeerState::kStarting, false},
      {true, true, PeerState::kSilent, true},  // cut off: lease decides
      {true, false, PeerState::kSilent, false},
      {true, true, std::nullopt, true},         // heartbeats off
      {false, true, PeerState::kAlive, false},  // no lease: never live
  };
  for (const auto& r : rows) {
    EXPECT_EQ(CombinedLiveness(r.member, r.lease_live, r.hb), r.want)
        << r.member << r.lease_live << (r.hb ? PeerStateName(*r.hb) : "none");
  }
}

// What JudgeSelf decides from its inputs.
struct SelfCase {
  const char* what;
  SelfInputs in;  // heartbeats_enabled, link_up, leaving, lease_healthy, peers_settled, lease_only
  SelfHealth want;
};

TEST(JudgeSelf, Table) {
  // clang-format off
  const SelfCase rows[] = {
      {"normal", {true, true, false, true, true, false}, SelfHealth::kHealthy},
      {"link down beats everything", {true, false, false, true, true, false}, SelfHealth::kLinkDown},
      {"leaving", {true, true, true, true, true, false}, SelfHealth::kLeaving},
      {"API outage, every peer heard or known dead: keep announcing", {true, true, false, false, true, false}, SelfHealth::kHealthy},
      {"API outage, a peer silent/never heard (may judge us by lease): withdraw", {true, true, false, false, false, false}, SelfHealth::kLeaseUnhealthy},
      {"API outage, a lease-only member exists: withdraw (lease semantics)", {true, true, false, false, true, true}, SelfHealth::kLeaseUnhealthy},
      {"API outage, heartbeats off: lease semantics", {false, true, false, false, true, false}, SelfHealth::kLeaseUnhealthy},
      {"heartbeats off, lease fine", {false, true, false, true, false, false}, SelfHealth::kHealthy},
  };
  // clang-format on
  for (const auto& r : rows) EXPECT_EQ(JudgeSelf(r.in), r.want) << r.what;
}

// A three-node cluster on one subnet: Membership from leases, Detector from heartbeats, overrides
// synced, Elector deciding. Lease renewals and heartbeats are driven by the test.
class World {
 public:
  World() : detector_(DetectorOptions{NodeName("n1"), milliseconds(100), 3}) {
    elector_ = std::make_unique<election::Elector>(
        *election::Elector::Create(election::ElectorOptions{NodeName("n1")}));
    for (int i = 1; i <= 20; ++i) {
      elector_->SetAddress(*net::IpAddress::Parse("192.0.2." + std::to_string(100 + i)), {});
    }
    std::vector<NodeName> peers = {NodeName("n2"), NodeName("n3")};
    detector_.SetPeers(peers);
    for (const char* n : {"n1", "n2", "n3"}) RenewLease(n);
  }
  SteadyTime now() const { return clock_.Now(); }
  void RenewLease(const std::string& node) {
    membership_.Observe(test_support::HeldLease(node, std::to_string(++renewals_), "192.0.2.0/24"),
                        now());
  }
  void Beat(const std::string& node, std::uint8_t flags = flags::kLinkUp) {
    Heartbeat hb;
    hb.node = NodeName(node);
    hb.boot_id = 1;
    hb.sequence = ++seq_;
    hb.flags = flags;
    detector_.OnHeartbeat(hb, now());
  }
  // Advances by `d` in 100 ms steps; each step: the `beating` peers send, leases of `renewing`
  // nodes are renewed every 2 s, the detector runs and overrides are synced.
  void Run(Duration d, std::set<std::string> beating, std::set<std::string> renewing) {
    for (Duration t{}; t < d; t += milliseconds(100)) {
      clock_.Advance(milliseconds(100));
      step_ += 1;
      for (const auto& n : beating) Beat(n);
      if (step_ % 20 == 0) {
        for (const auto& n : renewing) RenewLease(n);
      }
      detector_.Evaluate(now());
      SyncOverrides(detector_, membership_, overridden_);
      SelfInputs in{true, true, false, renewing.count("n1") != 0, detector_.AllPeersSettled(now()),
                    false};
      SyncSelfOverride(membership_, NodeName("n1"), JudgeSelf(in), now(), seconds(5));
    }
  }
  std::vector<std::string> Live() {
    std::vector<std::string> out;
    for (const auto& n : membership_.LiveMembers(now())) out.push_back(n.str());
    return out;
  }
  std::map<std::string, int> WinCounts() {
    elector_->Evaluate(membership_, now());
    std::map<std::string, int> out;
    elector_->ForEachWinner(
        [&](const net::IpAddress&, const NodeName* w) { out[w ? w->str() : "-"]++; });
    return out;
  }
  Detector& detector() { return detector_; }

 private:
  FakeClock clock_;
  election::Membership membership_;
  Detector detector_;
  std::unique_ptr<election::Elector> elector_;
  std::set<NodeName> overridden_;
  std::uint64_t renewals_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t step_ = 0;
};

using Names = std::vector<std::string>;

TEST(Policy, ApiOutageChangesNothing) {
  World w;
  w.Run(seconds(3), {"n2", "n3"}, {"n1", "n2", "n3"});
  const auto before = w.WinCounts();
  EXPECT_EQ(w.Live(), (Names{"n1", "n2", "n3"}));
  // The API server goes away: no lease is renewed for a minute, heartbeats continue.
  w.Run(seconds(60), {"n2", "n3"}, {});
  // Every lease looks expired, n1's own too (its renewals fail); peers stay live by heartbeat and
  // n1 by its own health (SyncSelfOverride).
  EXPECT_EQ(w.Live(), (Names{"n1", "n2", "n3"}));
  EXPECT_TRUE(w.detector().AllPeersSettled(w.now()));
  EXPECT_EQ(
      JudgeSelf(SelfInputs{true, true, false, false, w.detector().AllPeersSettled(w.now()), false}),
      SelfHealth::kHealthy);
  // Nothing moved.
  EXPECT_EQ(w.WinCounts(), before);
}

TEST(Policy, NodeFailureDuringApiOutageStillFailsOver) {
  World w;
  w.Run(seconds(3), {"n2", "n3"}, {"n1", "n2", "n3"});
  w.Run(seconds(30), {"n2", "n3"}, {});  // outage
  w.Run(milliseconds(300), {"n2"}, {});  // n3 crashes during the outage
  Names live = w.Live();
  EXPECT_EQ(std::find(live.begin(), live.end(), "n3"), live.end());
  EXPECT_EQ(w.WinCounts().count("n3"), 0u);
  EXPECT_GT(w.WinCounts()["n2"], 0);
}

TEST(Policy, CrashFailsOverWithinTheBoundDespiteAValidLease) {
  World w;
  w.Run(seconds(3), {"n2", "n3"}, {"n1", "n2", "n3"});
  ASSERT_GT(w.WinCounts()["n3"], 0);
  w.Run(milliseconds(200), {"n2"}, {"n1", "n2"});  // n3 silent for 200 ms: still alive
  EXPECT_GT(w.WinCounts()["n3"], 0);
  w.Run(milliseconds(100), {"n2"}, {"n1", "n2"});  // 300 ms: dead, its lease still valid
  EXPECT_EQ(w.WinCounts().count("n3"), 0u);
  // It comes back: alive at its first heartbeat.
  w.Run(milliseconds(100), {"n2", "n3"}, {"n1", "n2"});
  Names live = w.Live();
  EXPECT_NE(std::find(live.begin(), live.end(), "n3"), live.end());
}

TEST(Policy, CutOffNodeDoesNotGrabEverything) {
  World w;
  w.Run(seconds(3), {"n2", "n3"}, {"n1", "n2", "n3"});
  const auto before = w.WinCounts();
  // n1 hears nobody any more (carrier up), leases still renewed through another path.
  w.Run(seconds(2), {}, {"n1", "n2", "n3"});
  EXPECT_EQ(w.detector().CountIn(PeerState::kSilent), 2u);
  EXPECT_EQ(w.Live(), (Names{"n1", "n2", "n3"}));  // the lease decides: nobody declared dead
  EXPECT_EQ(w.WinCounts(), before);
  // If renewals fail too, n1 must withdraw (peers may judge it by its lease).
  EXPECT_EQ(
      JudgeSelf(SelfInputs{true, true, false, false, w.detector().AllPeersSettled(w.now()), false}),
      SelfHealth::kLeaseUnhealthy);
}

TEST(Policy, PeerWithLinkDownLosesItsAddressesWhileItsLeaseIsRenewed) {
  World w;
  w.Run(seconds(3), {"n2", "n3"}, {"n1", "n2", "n3"});
  ASSERT_GT(w.WinCounts()["n3"], 0);
  w.Beat("n3", 0);  // n3 reports its announcing link down (heartbeat over another path)
  w.Run(milliseconds(100), {"n2"}, {"n1", "n2", "n3"});
  EXPECT_EQ(w.WinCounts().count("n3"), 0u);
}

TEST(SyncOverrides, SetsAndClears) {
  FakeClock clock;
  election::Membership m;
  Detector d(DetectorOptions{NodeName("me"), milliseconds(100), 3});
  std::vector<NodeName> peers = {NodeName("a")};
  d.SetPeers(peers);
  std::set<NodeName> record;
  EXPECT_FALSE(SyncOverrides(d, m, record));  // never heard: nothing to set
  Heartbeat hb;
  hb.node = NodeName("a");
  hb.boot_id = 1;
  hb.sequence = 1;
  d.OnHeartbeat(hb, clock.Now());
  d.Evaluate(clock.Now());
  EXPECT_TRUE(SyncOverrides(d, m, record));
  EXPECT_EQ(m.OverrideFor(NodeName("a"), clock.Now())->state, election::Liveness::kAlive);
  EXPECT_FALSE(SyncOverrides(d, m, record));  // unchanged
  d.SetPeers({});
  EXPECT_TRUE(SyncOverrides(d, m, record));
  EXPECT_FALSE(m.OverrideFor(NodeName("a"), clock.Now()));
  EXPECT_TRUE(record.empty());
}

}  // namespace
}  // namespace pylon::heartbeat
