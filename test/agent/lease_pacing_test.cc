// The quiet lease's pure core: the quiet timing derived from PURELB_*, the condition, and the
// loud/quiet switch with its hold-down (scenario table on one LeasePacing, injected times).
#include "agent/lease_pacing.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pylon::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const LeaseTiming kPureLbDefaults{seconds(10), seconds(7), seconds(2)};

TEST(QuietPace, DerivedFromThePureLbTiming) {
  struct Row {
    const char* name;
    LeaseTiming loud;
    Duration renew, duration, deadline;
  };
  // clang-format off
  const Row rows[] = {
      {"PureLB defaults: kubelet's 10 s / 40 s, deadline 7 s x 4", kPureLbDefaults, seconds(10), seconds(40), seconds(28)},
      {"the lab's 3 s / 2 s / 500 ms: deadline 2 s x 40/3", {seconds(3), seconds(2), milliseconds(500)}, seconds(10), seconds(40), milliseconds(26667)},
      {"a short deadline is raised to halfway between renewal and expiry", {seconds(10), milliseconds(2500), seconds(2)}, seconds(10), seconds(40), seconds(25)},
      {"never louder than loud: a 60 s lease renewed every 15 s stays so", {seconds(60), seconds(45), seconds(15)}, seconds(15), seconds(60), seconds(45)},
      {"a 30 s lease: duration 40 s, deadline 20 s x 4/3", {seconds(30), seconds(20), seconds(12)}, seconds(12), seconds(40), milliseconds(26667)},
  };
  // clang-format on
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ASSERT_TRUE(ValidateLeaseTiming(row.loud));
    const LeasePace q = QuietPace(row.loud, QuietLeaseOptions{});
    EXPECT_EQ(q.mode, LeaseMode::kQuiet);
    EXPECT_EQ(q.renew_period, row.renew);
    EXPECT_EQ(q.lease_duration, row.duration);
    EXPECT_EQ(q.renew_deadline, row.deadline);
    // What LeaseHealth relies on, and never louder than loud.
    EXPECT_LT(q.renew_period, q.renew_deadline);
    EXPECT_LT(q.renew_deadline, q.lease_duration);
    EXPECT_GE(q.renew_period, row.loud.retry_period);
    EXPECT_GE(q.lease_duration, row.loud.lease_duration);
    EXPECT_GE(q.renew_deadline, row.loud.renew_deadline);
  }
  // Loud is PureLB's timing exactly.
  EXPECT_EQ(LoudPace(kPureLbDefaults),
            (LeasePace{LeaseMode::kLoud, seconds(2), seconds(10), seconds(7)}));
}

TEST(HeartbeatsCarryLiveness, EveryFactMustHold) {
  struct Row {
    const char* name;
    HeartbeatLivenessFacts facts;
    bool carried;
  };
  const Row rows[] = {
      {"running, no lease-only member or legacy peer, settled, hears a peer",
       {true, false, false, true, true},
       true},
      {"heartbeats off", {false, false, false, true, true}, false},
      {"a lease-only member judges this node by its lease", {true, true, false, true, true}, false},
      {"a legacy peer (an older agent: no ring)", {true, false, true, true, true}, false},
      {"a peer never heard or silent (not settled)", {true, false, false, false, true}, false},
      {"hears no peer (cut off, or no peer at all)", {true, false, false, true, false}, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(HeartbeatsCarryLiveness(row.facts), row.carried);
  }
}

// LivenessFacts from the peers' detector states, the heartbeat annotations and this node's
// Membership ("a" is this node; leases observed at t0, 10 s long; heartbeat bound 300 ms).
TEST(LivenessFacts, FromPeersAndMembership) {
  using heartbeat::PeerState;
  using enum heartbeat::PeerState;
  struct Lease {
    const char* node;
    const char* holder;     // "" = released
    bool heartbeat = true;  // the lease has a purelb.io/heartbeat annotation
  };
  struct Peer {
    const char* node;
    PeerState state;
    std::optional<int> heard_ms;  // last heard, ms after t0
  };
  struct Row {
    const char* name;
    std::vector<Lease> leases;
    std::vector<Peer> peers;
    int now_ms;
    bool lease_only, settled, hears, carried;
  };
  // clang-format off
  const std::vector<Lease> abc = {{"a", "a"}, {"b", "b"}, {"c", "c"}};
  const Row rows[] = {
      {"both peers heard within their bound", abc, {{"b", kAlive, 900}, {"c", kAlive, 950}}, 1000, false, true, true, true},
      {"b past its bound, the detector not yet run", abc, {{"b", kAlive, 600}, {"c", kAlive, 950}}, 1000, false, false, true, false},
      {"b dead: settled", abc, {{"b", kDead, 100}, {"c", kUnhealthy, 950}}, 1000, false, true, true, true},
      {"b never heard, its lease live: it may judge a by its lease", abc, {{"b", kNeverHeard, std::nullopt}, {"c", kAlive, 950}}, 1000, false, false, true, false},
      {"b never heard, its lease expired here (dead before a started)", abc, {{"b", kNeverHeard, std::nullopt}, {"c", kAlive, 11950}}, 12000, false, true, true, true},
      {"b silent, its lease live", abc, {{"b", kSilent, 100}, {"c", kAlive, 950}}, 1000, false, false, true, false},
      {"d has no heartbeats and a live lease: lease-only", {{"a", "a"}, {"b", "b"}, {"d", "d", false}}, {{"b", kAlive, 950}}, 1000, true, true, true, false},
      {"d has no heartbeats, its lease expired here", {{"a", "a"}, {"b", "b"}, {"d", "d", false}}, {{"b", kAlive, 11950}}, 12000, false, true, true, true},
      {"d released (not eligible): judges nobody", {{"a", "a"}, {"b", "b"}, {"d", "", false}}, {{"b", kAlive, 950}}, 1000, false, true, true, true},
      {"e is a ring member but no neighbour (judged by reports): not lease-only", {{"a", "a"}, {"b", "b"}, {"c", "c"}, {"e", "e"}}, {{"b", kAlive, 950}, {"c", kAlive, 950}}, 1000, false, true, true, true},
      {"no heartbeat peer at all", {{"a", "a"}}, {}, 1000, false, true, false, false},
      {"cut off: every peer silent", abc, {{"b", kSilent, 100}, {"c", kSilent, 120}}, 1000, false, false, false, false},
  };
  // clang-format on
  const SteadyTime t0{std::chrono::hours(1)};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    election::Membership m;
    std::set<election::NodeName> annotated;
    for (const Lease& l : row.leases) {
      if (l.heartbeat) annotated.insert(election::NodeName(l.node));
      election::LeaseObservation o;
      o.node = election::NodeName(l.node);
      o.holder_identity = l.holder;
      o.lease_duration_seconds = 10;
      o.renew_time = "t1";
      m.Observe(o, t0);
    }
    std::vector<heartbeat::PeerStatus> peers;
    for (const Peer& p : row.peers) {
      heartbeat::PeerStatus s;
      s.node = election::NodeName(p.node);
      s.state = p.state;
      if (p.heard_ms) s.last_heard = t0 + milliseconds(*p.heard_ms);
      s.interval = milliseconds(100);
      s.bound = milliseconds(300);
      peers.push_back(s);
    }
    const HeartbeatLivenessFacts f =
        LivenessFacts(peers, annotated, m, election::NodeName("a"), t0 + milliseconds(row.now_ms));
    EXPECT_TRUE(f.heartbeats_running);
    EXPECT_EQ(f.lease_only_members, row.lease_only);
    EXPECT_EQ(f.peers_settled, row.settled);
    EXPECT_EQ(f.hears_any_peer, row.hears);
    EXPECT_EQ(HeartbeatsCarryLiveness(f), row.carried);
  }
}

// One LeasePacing walked through time with the PureLB defaults and a 30 s hold-down.
TEST(LeasePacing, LoudAtOnceQuietAfterTheHoldDown) {
  struct Row {
    const char* name;
    double at_s;  // seconds after t0, non-decreasing
    bool carried;
    bool changed;  // Observe's result: renew at once
    LeaseMode mode;
    std::optional<double> quiet_at_s;
  };
  constexpr LeaseMode kLoud = LeaseMode::kLoud;
  constexpr LeaseMode kQuiet = LeaseMode::kQuiet;
  const Row rows[] = {
      {"starts loud", 0, false, false, kLoud, std::nullopt},
      {"the condition starts holding: quiet 30 s later", 1, true, false, kLoud, 31},
      {"still holding, not yet", 30.9, true, false, kLoud, 31},
      {"held for the hold-down: quiet, renew now", 31, true, true, kQuiet, std::nullopt},
      {"stays quiet", 45, true, false, kQuiet, std::nullopt},
      {"stops holding: loud at once, renew now", 46, false, true, kLoud, std::nullopt},
      {"holds again: the hold-down starts over", 47, true, false, kLoud, 77},
      {"a break in the hold-down resets it", 60, false, false, kLoud, std::nullopt},
      {"holds again", 61, true, false, kLoud, 91},
      {"a pass late after the hold-down: quiet then", 95, true, true, kQuiet, std::nullopt},
      {"loud again", 96, false, true, kLoud, std::nullopt},
      {"loud stays loud", 97, false, false, kLoud, std::nullopt},
  };
  const SteadyTime t0{std::chrono::hours(1)};
  auto at = [&](double s) {
    return t0 + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
  };
  LeasePacing p(kPureLbDefaults, QuietLeaseOptions{});
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(p.Observe(row.carried, at(row.at_s)), row.changed);
    EXPECT_EQ(p.mode(), row.mode);
    EXPECT_EQ(p.QuietAt(),
              row.quiet_at_s ? std::optional<SteadyTime>(at(*row.quiet_at_s)) : std::nullopt);
    const LeasePace want = row.mode == kQuiet ? QuietPace(kPureLbDefaults, QuietLeaseOptions{})
                                              : LoudPace(kPureLbDefaults);
    EXPECT_EQ(p.pace(), want);
    // A failed renewal is retried after the loud retry period in either mode.
    EXPECT_EQ(p.WaitAfter(true), want.renew_period);
    EXPECT_EQ(p.WaitAfter(false), seconds(2));
  }
}

TEST(LeasePacing, OffStaysLoud) {
  QuietLeaseOptions off;
  off.enabled = false;
  LeasePacing p(kPureLbDefaults, off);
  const SteadyTime t0{std::chrono::hours(1)};
  for (int s = 0; s <= 600; s += 10) {
    EXPECT_FALSE(p.Observe(true, t0 + seconds(s)));
    EXPECT_EQ(p.mode(), LeaseMode::kLoud);
    EXPECT_EQ(p.QuietAt(), std::nullopt);
  }
  EXPECT_EQ(p.pace(), LoudPace(kPureLbDefaults));
}

}  // namespace
}  // namespace pylon::agent
