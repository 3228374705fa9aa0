// The quiet lease's pure core: the quiet timing derived from PURELB_*, the condition, and the
// loud/quiet switch with its hold-down (scenario table on one LeasePacing, injected times).
#include "agent/lease_pacing.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>

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
  const Row rows[] = {
      {"PureLB defaults: kubelet's 10 s / 40 s, deadline 7 s x 4", kPureLbDefaults, seconds(10),
       seconds(40), seconds(28)},
      {"the lab's 3 s / 2 s / 500 ms: deadline 2 s x 40/3",
       {seconds(3), seconds(2), milliseconds(500)},
       seconds(10),
       seconds(40),
       milliseconds(26667)},
      {"a short deadline is raised to halfway between renewal and expiry",
       {seconds(10), milliseconds(2500), seconds(2)},
       seconds(10),
       seconds(40),
       seconds(25)},
      {"never louder than loud: a 60 s lease renewed every 15 s stays so",
       {seconds(60), seconds(45), seconds(15)},
       seconds(15),
       seconds(60),
       seconds(45)},
      {"a 30 s lease: duration 40 s, deadline 20 s x 4/3",
       {seconds(30), seconds(20), seconds(12)},
       seconds(12),
       seconds(40),
       milliseconds(26667)},
  };
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

TEST(HeartbeatsCarryLiveness, AllFourFactsMustHold) {
  struct Row {
    const char* name;
    HeartbeatLivenessFacts facts;
    bool carried;
  };
  const Row rows[] = {
      {"running, no lease-only member, settled, hears a peer", {true, false, true, true}, true},
      {"heartbeats off", {false, false, true, true}, false},
      {"a lease-only member judges this node by its lease", {true, true, true, true}, false},
      {"a peer never heard or silent (not settled)", {true, false, false, true}, false},
      {"hears no peer (cut off, or no peer at all)", {true, false, true, false}, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(HeartbeatsCarryLiveness(row.facts), row.carried);
  }
}

TEST(AnyLeaseOnlyMember, MembersWithoutHeartbeatsOtherThanSelfAndReleased) {
  const SteadyTime t0{std::chrono::hours(1)};
  election::Membership m;
  auto observe = [&](const char* node, const char* holder) {
    election::LeaseObservation o;
    o.node = election::NodeName(node);
    o.holder_identity = holder;
    o.lease_duration_seconds = 40;
    o.renew_time = "t1";
    m.Observe(o, t0);
  };
  observe("self", "self");
  observe("b", "b");
  const election::NodeName self("self");
  EXPECT_FALSE(AnyLeaseOnlyMember(m, self, {election::NodeName("b")}));
  EXPECT_TRUE(AnyLeaseOnlyMember(m, self, {}));
  observe("c", "");  // released (its kube-proxy fails): judges nobody
  EXPECT_FALSE(AnyLeaseOnlyMember(m, self, {election::NodeName("b")}));
  observe("d", "d");  // an older agent, or heartbeats off there
  EXPECT_TRUE(AnyLeaseOnlyMember(m, self, {election::NodeName("b")}));
  // A heartbeat peer that is no member (its lease not seen yet) does not matter.
  EXPECT_FALSE(AnyLeaseOnlyMember(
      m, self, {election::NodeName("b"), election::NodeName("d"), election::NodeName("e")}));
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
