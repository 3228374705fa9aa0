// Probe ahead in the agent: the ProbeAhead core (targets, rate, refresh, freshness, taken
// addresses held and published), ProbeGate's pre-probed path (announced at once, one short probe
// in parallel), and the reconciler with probe ahead on over FakeNetlink, packet::FakeAnnouncer and
// inline probers.
#include <gtest/gtest.h>

#include "agent/agent_metrics.h"
#include "agent/conflicts.h"
#include "agent/probe_ahead.h"
#include "agent/reconciler.h"
#include "agent_world.h"
#include "model/conflicts.h"
#include "model/probe_ahead.h"
#include "support/packet/fake_announcer.h"

namespace pylon::agent::testing {
namespace {

std::vector<std::string> Texts(const std::vector<ProbeTarget>& v) {
  std::vector<std::string> out;
  for (const auto& t : v) out.push_back(t.address.ToString());
  return out;
}
std::vector<ProbeTarget> Targets(const std::vector<std::string>& ips) {
  std::vector<ProbeTarget> out;
  for (const auto& ip : ips) out.push_back(ProbeTarget{Ip(ip), "eth0", 2});
  return out;
}
ProbeResult Free(const std::string& ip) { return ProbeResult{{Ip(ip), "eth0", 2}, {}, {}}; }
ProbeResult TakenBy(const std::string& ip, const std::string& mac) {
  return ProbeResult{{Ip(ip), "eth0", 2}, Mac(mac), {}};
}
std::string Published(const ProbeAhead& a, SteadyTime now) {
  std::string out;
  for (const auto& e : a.Published(now)) {
    out += (out.empty() ? "" : ",") + e.address.ToString() + (e.taken ? " taken" : " free");
  }
  return out;
}

const WallTime kWall{seconds(1767225600)};

// --- ProbeAhead ------------------------------------------------------------------------------

TEST(ProbeAheadTest, ProbesEachTargetOnceThenEveryRefreshWithinTheRate) {
  ProbeAhead a(
      ProbeAheadOptions{seconds(10), seconds(30), 2, 2, seconds(30), std::chrono::minutes(5)});
  SteadyTime now{seconds(1000)};
  a.SetTargets(Targets({"192.0.2.1", "192.0.2.2", "192.0.2.3"}), now);
  // Burst 2: two now, the third once a token is back (0.5 s at 2/s).
  EXPECT_EQ(Texts(a.Due(now)), (std::vector<std::string>{"192.0.2.1", "192.0.2.2"}));
  EXPECT_TRUE(a.Due(now).empty());
  ASSERT_TRUE(a.NextWakeup(now));
  EXPECT_EQ(*a.NextWakeup(now), now + milliseconds(500));
  a.Record(Free("192.0.2.1"), now, kWall);
  a.Record(Free("192.0.2.2"), now, kWall);
  now += milliseconds(500);
  EXPECT_EQ(Texts(a.Due(now)), (std::vector<std::string>{"192.0.2.3"}));
  EXPECT_TRUE(a.Due(now).empty());  // running: never twice
  a.Record(Free("192.0.2.3"), now, kWall);
  EXPECT_TRUE(a.Fresh(Ip("192.0.2.1"), "eth0", now));
  EXPECT_FALSE(a.Fresh(Ip("192.0.2.1"), "eth1", now));  // another segment is not proven
  EXPECT_EQ(Published(a, now), "192.0.2.1 free,192.0.2.2 free,192.0.2.3 free");
  // Nothing is due before the refresh; then the two oldest first.
  now += seconds(9);
  EXPECT_TRUE(a.Due(now).empty());
  now += seconds(1);
  EXPECT_EQ(Texts(a.Due(now)), (std::vector<std::string>{"192.0.2.1", "192.0.2.2"}));
  EXPECT_EQ(a.probes_started(), 5u);
  // Not re-probed for fresh_for: no longer fresh, no longer published.
  now += seconds(21);
  EXPECT_FALSE(a.Fresh(Ip("192.0.2.1"), "eth0", now));
  EXPECT_EQ(Published(a, now), "");
}

TEST(ProbeAheadTest, TakenAddressesAreHeldRecheckedAndCounted) {
  ProbeAhead a(
      ProbeAheadOptions{seconds(10), seconds(30), 10, 10, seconds(30), std::chrono::minutes(5)});
  SteadyTime now{seconds(1000)};
  a.SetTargets(Targets({"192.0.2.1", "192.0.2.2"}), now);
  ASSERT_EQ(a.Due(now).size(), 2u);
  a.Record(TakenBy("192.0.2.1", kForeign), now, kWall);
  a.Record(Free("192.0.2.2"), now, kWall);
  EXPECT_EQ(a.conflicts_found(), 1u);
  EXPECT_FALSE(a.Fresh(Ip("192.0.2.1"), "eth0", now));
  auto pub = a.Published(now);
  ASSERT_EQ(pub.size(), 2u);
  EXPECT_TRUE(pub[0].taken);
  EXPECT_EQ(pub[0].mac, kForeign);
  EXPECT_EQ(pub[0].since, kWall);
  EXPECT_EQ(Texts(a.Taken()), (std::vector<std::string>{"192.0.2.1"}));
  // The allocator skips it: no longer a target. Still listed (held), not re-probed; the free one
  // that left the targets is no longer published (and forgotten once stale).
  now += seconds(40);
  a.SetTargets(Targets({"192.0.2.3"}), now);
  EXPECT_EQ(Texts(a.Due(now)), (std::vector<std::string>{"192.0.2.3"}));
  EXPECT_EQ(Published(a, now), "192.0.2.1 taken");
  // While still a target (this node keeps electing it), rechecked every taken_recheck; the same
  // owner keeps its first time and is not counted again.
  a.SetTargets(Targets({"192.0.2.1", "192.0.2.3"}), now);
  EXPECT_EQ(Texts(a.Due(now)), (std::vector<std::string>{"192.0.2.1"}));
  a.Record(TakenBy("192.0.2.1", kForeign), now, kWall + seconds(40));
  EXPECT_EQ(a.conflicts_found(), 1u);
  EXPECT_EQ(a.Published(now)[0].since, kWall);
  // The foreign host left: free again, published free.
  now += seconds(30);
  EXPECT_EQ(Texts(a.Due(now)), (std::vector<std::string>{"192.0.2.1"}));
  a.Record(Free("192.0.2.1"), now, kWall + seconds(70));
  EXPECT_TRUE(a.Fresh(Ip("192.0.2.1"), "eth0", now));
  EXPECT_TRUE(a.Taken().empty());
  // A result for an address not probing is ignored.
  a.Record(TakenBy("192.0.2.1", kForeign), now, kWall);
  EXPECT_TRUE(a.Taken().empty());
  // Held taken entries expire after taken_hold once not a target any more.
  ASSERT_EQ(a.Due(now).size(), 0u);
  a.Record(TakenBy("192.0.2.3", kForeign), now, kWall);  // .3 was started above
  EXPECT_EQ(a.conflicts_found(), 2u);
  a.SetTargets({}, now);
  EXPECT_EQ(a.Taken().size(), 1u);
  now += std::chrono::minutes(5);
  a.SetTargets({}, now);
  EXPECT_TRUE(a.Taken().empty());
  EXPECT_EQ(Published(a, now), "");
}

TEST(ProbeAheadTest, AnErrorLeavesTheAddressUnprovenAndAMovedTargetStartsOver) {
  ProbeAhead a(
      ProbeAheadOptions{seconds(10), seconds(30), 10, 10, seconds(30), std::chrono::minutes(5)});
  SteadyTime now{seconds(1000)};
  a.SetTargets(Targets({"192.0.2.1"}), now);
  ASSERT_EQ(a.Due(now).size(), 1u);
  ProbeResult err = Free("192.0.2.1");
  err.error = "socket: operation not permitted";
  a.Record(err, now, kWall);
  EXPECT_FALSE(a.Fresh(Ip("192.0.2.1"), "eth0", now));
  EXPECT_EQ(a.Due(now).size(), 1u);  // tried again (within the rate)
  a.Record(Free("192.0.2.1"), now, kWall);
  EXPECT_TRUE(a.Fresh(Ip("192.0.2.1"), "eth0", now));
  const std::vector<ProbeTarget> moved = {ProbeTarget{Ip("192.0.2.1"), "eth1", 3}};
  a.SetTargets(moved, now);
  EXPECT_FALSE(a.Fresh(Ip("192.0.2.1"), "eth1", now));
  EXPECT_EQ(a.Due(now).size(), 1u);
}

// --- ProbeGate's pre-probed path --------------------------------------------------------------

TEST(ProbeGatePreprobedTest, AnnouncedAtOnceAndWithdrawnIfTheShortProbeIsAnswered) {
  ProbeGate gate(ProbeGateOptions{seconds(30)});
  SteadyTime now{seconds(1000)};
  const std::set<net::IpAddress> pre = {Ip("192.0.2.1")};
  const auto cands = Targets({"192.0.2.1", "192.0.2.2"});
  auto d = gate.Decide(cands, now, &pre);
  EXPECT_EQ(Texts(d.verify), (std::vector<std::string>{"192.0.2.1"}));
  EXPECT_EQ(Texts(d.start), (std::vector<std::string>{"192.0.2.2"}));  // not pre-probed: full
  EXPECT_EQ(d.withhold, (std::set<net::IpAddress>{Ip("192.0.2.2")}));
  EXPECT_TRUE(gate.Tracks(Ip("192.0.2.1")));
  // Next pass: still verifying, not withheld, no second probe.
  d = gate.Decide(cands, now, &pre);
  EXPECT_TRUE(d.verify.empty());
  EXPECT_EQ(d.withhold, (std::set<net::IpAddress>{Ip("192.0.2.2")}));
  // The short probe is answered by a foreign host: withheld from now on and reported once.
  gate.Record(TakenBy("192.0.2.1", kForeign), now);
  d = gate.Decide(cands, now, &pre);
  EXPECT_TRUE(d.withhold.count(Ip("192.0.2.1")));
  ASSERT_EQ(d.reported.size(), 1u);
  EXPECT_EQ(d.reported[0].mac, Mac(kForeign));
  EXPECT_TRUE(gate.Tracks(Ip("192.0.2.1")));
  d = gate.Decide(cands, now, &pre);
  EXPECT_TRUE(d.reported.empty());
  // A verification that finds it free: nothing more, and forgotten once it is no candidate.
  ProbeGate g2;
  d = g2.Decide(Targets({"192.0.2.1"}), now, &pre);
  g2.Record(Free("192.0.2.1"), now);
  d = g2.Decide(Targets({"192.0.2.1"}), now, &pre);
  EXPECT_TRUE(d.withhold.empty());
  EXPECT_FALSE(g2.Tracks(Ip("192.0.2.1")));
}

// --- The reconciler with probe ahead on -------------------------------------------------------

const std::string kIp = "192.0.2.100";
std::string Winner() { return HashWinner({"node1", "node2", "node3"}, Ip(kIp)); }

// An address not proven free ahead: the full probe (3 requests) before it is added, the pass
// after.
void ExpectFullProbeThenHeld(AgentWorld& w) {
  EXPECT_FALSE(w.Holds(kIp));
  ASSERT_EQ(w.prober_->started().size(), 1u);
  EXPECT_EQ(w.prober_->started()[0].options.count, 3);
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
}

TEST(ProbeAheadReconcilerTest, ACandidateProbedAheadIsAnnouncedInTheFirstPass) {
  WinnerWorld w(kIp);
  w.EnableProbeAhead();
  w.reconciler_->SetProbeAhead({Ip(kIp)}, {});
  w.Pass();
  ASSERT_EQ(w.background_->started().size(), 1u);  // elected here: probed in the background
  EXPECT_EQ(w.background_->started()[0].options.count, 3);
  EXPECT_EQ(w.background_->started()[0].target.interface, "eth0");
  w.Pass();
  auto found = w.reconciler_->ProbeAheadFindings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].taken);
  EXPECT_EQ(w.metrics_.Get(kMetricProbeAheadFresh, {}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricProbeAheadProbes, {}), 1);
  // The Service gets it: added, announced and recorded in the same pass; one short probe runs.
  w.Serve("web", {kIp});
  EXPECT_TRUE(w.Holds(kIp));
  EXPECT_EQ(EventsWith(w.writer_, "AnnouncingLocal"), 1u);
  ASSERT_EQ(w.prober_->started().size(), 1u);
  EXPECT_EQ(w.prober_->started()[0].options.count, 1);
  EXPECT_EQ(w.metrics_.Get(kMetricProbeAheadAnnounced, {}), 1);
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
  EXPECT_EQ(w.prober_->started().size(), 1u);
  EXPECT_EQ(EventsWith(w.writer_, "AddressConflict"), 0u);
}

TEST(ProbeAheadReconcilerTest, OnlyTheElectedNodeProbesAhead) {
  const std::string winner = Winner();
  AgentWorld w(SomeLoser({"node1", "node2", "node3"}, winner));
  w.EnableProbeAhead();
  w.reconciler_->SetProbeAhead({Ip(kIp)}, {});
  w.Pass();
  EXPECT_TRUE(w.background_->started().empty());
  EXPECT_TRUE(w.reconciler_->ProbeAheadFindings().empty());
}

TEST(ProbeAheadReconcilerTest, ARequestedAddressKeepsTheFullProbeEvenProbedAhead) {
  WinnerWorld w(kIp);
  w.EnableProbeAhead();
  w.reconciler_->SetProbeAhead({}, {Ip(kIp)});
  w.services_.push_back(Svc("web", {.ips = {kIp}, .annotations = {{"purelb.io/addresses", kIp}}}));
  w.Pass();
  ExpectFullProbeThenHeld(w);
}

TEST(ProbeAheadReconcilerTest, NothingIsProbedAheadDuringTheStartUpHoldOff) {
  WinnerWorld w(kIp);
  w.EnableProbeAhead();
  w.reconciler_->SetProbeAhead({Ip(kIp)}, {});
  w.hold_off_ = true;
  w.Pass();
  w.hold_off_ = false;
  w.defer_unseen_ = true;
  w.Pass();
  EXPECT_TRUE(w.background_->started().empty());
  w.defer_unseen_ = false;
  w.Pass();
  EXPECT_EQ(w.background_->started().size(), 1u);
}

TEST(ProbeAheadReconcilerTest, AnAnswerFromAMemberNodeIsNoForeignOwner) {
  // Another node probing the same address at the same moment (its probe counts as a claim).
  const std::string winner = Winner();
  const std::string other = SomeLoser({"node1", "node2", "node3"}, winner);
  AgentWorld w(winner);
  w.EnableProbeAhead();
  w.announcer_.SetOwner(Ip(kIp), Mac("02:00:00:00:77:01"));
  w.reconciler_->SetProbeAhead({Ip(kIp)}, {});
  w.Pass();  // probed before the peer's MACs were known: its answer comes back as an owner
  ASSERT_EQ(w.background_->started().size(), 1u);
  w.macs_[other] = "02:00:00:00:77:01";
  w.Renew(other);
  w.Pass();
  EXPECT_TRUE(w.reconciler_->ProbeAheadFindings().empty());  // unproven, not taken
  EXPECT_EQ(w.metrics_.Get(kMetricProbeAheadConflicts, {}), 0);
}

TEST(ProbeAheadReconcilerTest, FreeElsewhereCountsAndUnprovenAddressesKeepTheFullProbe) {
  WinnerWorld w(kIp);
  w.EnableProbeAhead();
  // Proven free by a live peer (its lease annotation): announced at once here.
  w.reconciler_->SetProbeAhead({}, {Ip(kIp)});
  w.Serve("web", {kIp});
  EXPECT_TRUE(w.Holds(kIp));
  ASSERT_EQ(w.prober_->started().size(), 1u);
  EXPECT_EQ(w.prober_->started()[0].options.count, 1);

  // Not pre-probed anywhere: the full probe before the first announcement, as before.
  WinnerWorld v(kIp);
  v.EnableProbeAhead();
  v.reconciler_->SetProbeAhead({}, {});
  v.Serve("web", {kIp});
  ExpectFullProbeThenHeld(v);
}

TEST(ProbeAheadReconcilerTest, AForeignOwnerFoundAheadIsPublishedAndNeverAnnounced) {
  WinnerWorld w(kIp);
  w.EnableProbeAhead();
  w.announcer_.SetOwner(Ip(kIp), Mac(kForeign));
  w.reconciler_->SetProbeAhead({Ip(kIp)}, {});
  w.Pass();
  w.Pass();
  auto found = w.reconciler_->ProbeAheadFindings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].taken);
  EXPECT_EQ(found[0].mac, kForeign);
  EXPECT_EQ(w.metrics_.Get(kMetricProbeAheadConflicts, {}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricProbeAheadTaken, {}), 1);
  const std::string text = model::FormatProbeAhead(found);
  EXPECT_NE(text.find(kIp + " taken " + kForeign), std::string::npos) << text;
  // The allocator no longer offers it; the finding stays published.
  w.reconciler_->SetProbeAhead({}, {});
  w.Pass();
  EXPECT_EQ(w.reconciler_->ProbeAheadFindings().size(), 1u);
  // A Service that gets it anyway (a race, or it asked for it) goes through the full probe and
  // is refused as before.
  w.Serve("web", {kIp});
  w.Pass();
  EXPECT_FALSE(w.Holds(kIp));
  EXPECT_EQ(EventsWith(w.writer_, "AddressConflict"), 1u);
}

TEST(ProbeAheadReconcilerTest, AnAnswerToTheShortProbeWithdrawsAndReports) {
  WinnerWorld w(kIp);
  w.EnableProbeAhead();
  w.reconciler_->SetProbeAhead({}, {Ip(kIp)});
  w.services_.push_back(Svc("web", {.ips = {kIp}}));
  // The foreign host appears between the background probe and the Service.
  w.announcer_.SetOwner(Ip(kIp), Mac(kForeign));
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));  // announced at once
  // The Service now shows this node as announcing (written by the pass above).
  w.services_[0] =
      Svc("web", {.ips = {kIp}, .annotations = {{model::kAnnAnnouncingV4, w.self_ + ",eth0"}}});
  w.Pass();
  EXPECT_FALSE(w.Holds(kIp));  // withdrawn
  EXPECT_EQ(EventsWith(w.writer_, "AddressConflict"), 1u);
  w.Pass();
  EXPECT_FALSE(w.Holds(kIp));  // and stays withdrawn
  EXPECT_EQ(EventsWith(w.writer_, "AddressConflict"), 1u);
}

}  // namespace
}  // namespace pylon::agent::testing
