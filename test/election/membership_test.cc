#include "election/membership.h"
#include "support/election.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pylon::election {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Drives one Membership with a FakeClock; each node's renewals bump an opaque renewTime.
class Driver {
 public:
  FakeClock clock;
  Membership members;

  ObserveOutcome Renew(const std::string& node, const std::string& subnets = "192.0.2.0/24",
                       std::optional<std::int64_t> duration = 10) {
    return members.Observe(
        Lease(node, "2024-01-05T12:00:" + std::to_string(++renewals_[node]), subnets, duration),
        clock.Now());
  }
  // Re-delivers the lease unchanged (an informer resync): must not count as a renewal.
  ObserveOutcome Resync(const std::string& node, const std::string& subnets = "192.0.2.0/24") {
    return members.Observe(
        Lease(node, "2024-01-05T12:00:" + std::to_string(renewals_[node]), subnets, 10),
        clock.Now());
  }
  ObserveOutcome RenewWithTime(const std::string& node, const std::string& renew_time) {
    return members.Observe(Lease(node, renew_time, "192.0.2.0/24", 10), clock.Now());
  }
  ObserveOutcome Delete(const std::string& node) {
    return members.Observe(test_support::DeletedLease(node), clock.Now());
  }
  ObserveOutcome Release(const std::string& node) {
    auto o = Lease(node, "released", "192.0.2.0/24", 10);
    o.holder_identity.clear();
    return members.Observe(o, clock.Now());
  }
  std::vector<std::string> Live() const {
    std::vector<std::string> out;
    for (const auto& n : members.LiveMembers(clock.Now())) out.push_back(n.str());
    return out;
  }

 private:
  static LeaseObservation Lease(const std::string& node, const std::string& renew_time,
                                const std::string& subnets, std::optional<std::int64_t> dur) {
    return test_support::HeldLease(node, renew_time, subnets, dur);
  }
  std::map<std::string, int> renewals_;
};

struct Row {
  const char* label;
  std::function<void(Driver&)> act;
  std::vector<std::string> live;
  std::size_t count;
};

void Walk(Driver& d, const std::vector<Row>& rows) {
  for (const auto& r : rows) {
    r.act(d);
    EXPECT_EQ(d.Live(), r.live) << r.label;
    EXPECT_EQ(d.members.size(), r.count) << r.label;
    EXPECT_EQ(d.members.LiveCount(d.clock.Now()), r.live.size()) << r.label;
  }
}

TEST(Membership, LifecycleOnTheLocalClock) {
  Driver d;
  // clang-format off
  Walk(d, {
      {"empty", [](Driver&) {}, {}, 0},
      {"a joins", [](Driver& x) { EXPECT_TRUE(x.Renew("a").joined); }, {"a"}, 1},
      {"b joins 3 s later", [](Driver& x) { x.clock.Advance(seconds(3)); x.Renew("b"); }, {"a", "b"}, 2},
      {"a just before its expiry (t=10s-1ns)", [](Driver& x) { x.clock.Advance(seconds(7) - nanoseconds(1)); }, {"a", "b"}, 2},
      {"a exactly at expiry (t=10s): dead, still a member", [](Driver& x) { x.clock.Advance(nanoseconds(1)); }, {"b"}, 2},
      {"a renews: live again for a full duration from now", [](Driver& x) { EXPECT_TRUE(x.Renew("a").renewed); }, {"a", "b"}, 2},
      {"unchanged resync of b does not extend it; b expires at t=13s", [](Driver& x) { EXPECT_FALSE(x.Resync("b").renewed); x.clock.Advance(seconds(3)); }, {"a"}, 2},
      {"a deleted (graceful shutdown): gone at once", [](Driver& x) { EXPECT_TRUE(x.Delete("a").left); }, {}, 1},
      {"deleting an unknown lease is a no-op", [](Driver& x) { EXPECT_FALSE(x.Delete("zz").left); }, {}, 1},
      {"b renews after expiry: live", [](Driver& x) { x.Renew("b"); }, {"b"}, 1},
      {"b releases the lease (empty holderIdentity): not live", [](Driver& x) { x.Release("b"); }, {}, 1},
  });
  // clang-format on
}

TEST(Membership, ClockSkewImmunity) {
  // The remote renewTime is opaque: far past, far future or garbage changes nothing as long as
  // it keeps changing; a "future" renewTime that stops changing still expires on the local clock.
  Driver d;
  // clang-format off
  Walk(d, {
      {"joins with a renewTime from 1970", [](Driver& x) { x.RenewWithTime("a", "1970-01-01T00:00:00Z"); }, {"a"}, 1},
      {"9 s later, renewTime jumps to 2999", [](Driver& x) { x.clock.Advance(seconds(9)); x.RenewWithTime("a", "2999-12-31T23:59:59Z"); }, {"a"}, 1},
      {"9 s later, back to 1970 (a different value)", [](Driver& x) { x.clock.Advance(seconds(9)); x.RenewWithTime("a", "1970-01-01T00:00:01Z"); }, {"a"}, 1},
      {"9 s later, unparseable renewTime", [](Driver& x) { x.clock.Advance(seconds(9)); x.RenewWithTime("a", "not a time"); }, {"a"}, 1},
      {"a stops renewing: dead 10 s after the last change, whatever renewTime says", [](Driver& x) { x.clock.Advance(seconds(10)); x.RenewWithTime("a", "not a time"); }, {}, 1},
  });
  // clang-format on
}

TEST(Membership, OverridesRefineLivenessButNotMembership) {
  Driver d;
  const auto t0 = d.clock.Now();
  // clang-format off
  Walk(d, {
      {"a and b join", [](Driver& x) { x.Renew("a"); x.Renew("b"); }, {"a", "b"}, 2},
      {"detector: a dead (lease still fresh)", [](Driver& x) { x.members.SetOverride(NodeName("a"), {Liveness::kDead, std::nullopt}); }, {"b"}, 2},
      {"a renewing does not undo the detector", [](Driver& x) { x.clock.Advance(seconds(1)); x.Renew("a"); }, {"b"}, 2},
      {"detector clears: lease decides again", [](Driver& x) { x.members.ClearOverride(NodeName("a")); }, {"a", "b"}, 2},
      // Then the clock is at t0+15s.
      {"detector: b alive until t0+30s, its lease goes stale at t0+10s", [t0](Driver& x) { x.members.SetOverride(NodeName("b"), {Liveness::kAlive, t0 + seconds(30)}); x.clock.Advance(seconds(14)); }, {"b"}, 2},
      {"override lapses at t0+30s: b judged by its stale lease", [](Driver& x) { x.clock.Advance(seconds(15)); }, {}, 2},
      {"an override never creates a member", [](Driver& x) { x.members.SetOverride(NodeName("ghost"), {Liveness::kAlive, std::nullopt}); }, {}, 2},
      {"an alive override does not revive a deleted lease", [](Driver& x) { x.members.SetOverride(NodeName("b"), {Liveness::kAlive, std::nullopt}); x.Delete("b"); }, {}, 1},
  });
  // clang-format on
}

TEST(Membership, NextExpiryIsTheEarliestLivenessChange) {
  Driver d;
  const auto t0 = d.clock.Now();
  EXPECT_FALSE(d.members.NextExpiry(t0));
  d.Renew("a");  // expires t0+10
  d.clock.Advance(seconds(4));
  d.Renew("b");  // expires t0+14
  EXPECT_EQ(d.members.NextExpiry(d.clock.Now()), t0 + seconds(10));
  // A dead override on b with a deadline: the next change is when it lapses.
  d.members.SetOverride(NodeName("b"), {Liveness::kDead, t0 + seconds(6)});
  EXPECT_EQ(d.members.NextExpiry(d.clock.Now()), t0 + seconds(6));
  // Walking exactly to each reported instant flips liveness there.
  d.clock.Advance(seconds(2));  // t0+6
  EXPECT_TRUE(d.members.IsLive(NodeName("b"), d.clock.Now()));
  EXPECT_EQ(d.members.NextExpiry(d.clock.Now()), t0 + seconds(10));
  d.clock.Advance(seconds(4));  // t0+10
  EXPECT_FALSE(d.members.IsLive(NodeName("a"), d.clock.Now()));
  EXPECT_EQ(d.members.NextExpiry(d.clock.Now()), t0 + seconds(14));
  d.clock.Advance(seconds(4));
  EXPECT_FALSE(d.members.NextExpiry(d.clock.Now()));
  // A released lease schedules nothing.
  d.Release("c");
  EXPECT_FALSE(d.members.NextExpiry(d.clock.Now()));
}

TEST(Membership, LeaseDurationDefaultsAndClamps) {
  Driver d;
  const auto t0 = d.clock.Now();
  struct DurationRow {
    const char* node;
    std::optional<std::int64_t> duration;
    nanoseconds expected;
    bool issue;
  };
  const DurationRow rows[] = {
      {"n15", 15, seconds(15), false},
      {"nabsent", std::nullopt, seconds(10), true},
      {"nzero", 0, seconds(10), true},
      {"nneg", -5, seconds(10), true},
      {"nhuge", 86400 * 365, std::chrono::minutes(5), true},
  };
  for (const auto& r : rows) {
    auto out = d.Renew(r.node, "192.0.2.0/24", r.duration);
    EXPECT_EQ(!out.issues.empty(), r.issue) << r.node;
    const Member* m = d.members.Find(NodeName(r.node));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->lease_expiry(), t0 + r.expected) << r.node;
    // The same bad value on the next renewal is not reported again.
    EXPECT_TRUE(d.Renew(r.node, "192.0.2.0/24", r.duration).issues.empty()) << r.node;
  }
}

// The agent's quiet lease (agent/lease_pacing.h): 40 s written while heartbeats carry liveness,
// the PURELB_* 10 s otherwise. Each renewal's own duration applies from when it is seen, with no
// issue reported; a switch of duration alone counts as a renewal.
TEST(Membership, QuietAndLoudLeaseDurations) {
  Driver d;
  // clang-format off
  Walk(d, {
      {"n1 loud, n2 quiet", [](Driver& x) { x.Renew("n1", "192.0.2.0/24", 10); EXPECT_TRUE(x.Renew("n2", "192.0.2.0/24", 40).issues.empty()); }, {"n1", "n2"}, 2},
      {"11 s: the loud lease expired, the quiet one not", [](Driver& x) { x.clock.Advance(seconds(11)); }, {"n2"}, 2},
      {"39.9 s: still live", [](Driver& x) { x.clock.Advance(milliseconds(28900)); }, {"n2"}, 2},
      {"40 s after it was seen: expired", [](Driver& x) { x.clock.Advance(milliseconds(100)); }, {}, 2},
      {"n2 renews quiet", [](Driver& x) { x.Renew("n2", "192.0.2.0/24", 40); }, {"n2"}, 2},
      {"30 s later n2 goes loud", [](Driver& x) { x.clock.Advance(seconds(30)); EXPECT_TRUE(x.Renew("n2", "192.0.2.0/24", 10).renewed); }, {"n2"}, 2},
      {"10 s after the loud write: expired (not 40 s after the quiet one)", [](Driver& x) { x.clock.Advance(seconds(10)); }, {}, 2},
  });
  // clang-format on
  const Member* n2 = d.members.Find(NodeName("n2"));
  ASSERT_NE(n2, nullptr);
  EXPECT_EQ(n2->lease_duration, seconds(10));
  // The same renewTime with only the duration changed is a change of spec: a renewal.
  Driver e;
  e.RenewWithTime("n3", "2024-01-05T12:00:00Z");
  e.clock.Advance(seconds(9));
  const LeaseObservation quiet =
      test_support::HeldLease("n3", "2024-01-05T12:00:00Z", "192.0.2.0/24", 40);
  EXPECT_TRUE(e.members.Observe(quiet, e.clock.Now()).renewed);
  EXPECT_EQ(e.members.Find(NodeName("n3"))->lease_expiry(), e.clock.Now() + seconds(40));
}

TEST(Membership, SubnetsAnnotationChangesAndIssues) {
  Driver d;
  auto out = d.Renew("a", "192.0.2.0/24,bogus");
  EXPECT_TRUE(out.joined);
  EXPECT_EQ(out.issues.size(), 1u);
  const std::uint64_t v1 = d.members.Find(NodeName("a"))->version;
  const std::uint64_t g1 = d.members.generation();
  // Renewal with the same annotation: no subnet change, no repeated issue, same generation.
  out = d.Renew("a", "192.0.2.0/24,bogus");
  EXPECT_FALSE(out.subnets_changed);
  EXPECT_TRUE(out.issues.empty());
  EXPECT_EQ(d.members.generation(), g1);
  // A different spelling of the same subnets: reparsed, not a change.
  out = d.Renew("a", "192.0.2.9/24");
  EXPECT_FALSE(out.subnets_changed);
  EXPECT_EQ(d.members.Find(NodeName("a"))->version, v1);
  EXPECT_TRUE(d.members.Find(NodeName("a"))->subnet_issues.empty());
  // A real change bumps the version and generation.
  out = d.Renew("a", "192.0.2.0/24,2001:db8::/64");
  EXPECT_TRUE(out.subnets_changed);
  EXPECT_TRUE(out.membership_changed());
  EXPECT_NE(d.members.Find(NodeName("a"))->version, v1);
  EXPECT_GT(d.members.generation(), g1);
  // Entirely malformed: still a member (its lease is there), with no subnets.
  out = d.Renew("a", "%%%");
  EXPECT_TRUE(out.subnets_changed);
  EXPECT_EQ(out.issues.size(), 1u);
  EXPECT_TRUE(d.members.Find(NodeName("a"))->subnets.empty());
  EXPECT_TRUE(d.members.IsLive(NodeName("a"), d.clock.Now()));
}

TEST(Membership, LeaseNames) {
  EXPECT_EQ(LeaseNameFor(NodeName("worker-1")), "purelb-node-worker-1");
  EXPECT_EQ(NodeFromLeaseName("purelb-node-worker-1"), NodeName("worker-1"));
  EXPECT_FALSE(NodeFromLeaseName("purelb-node-"));
  EXPECT_FALSE(NodeFromLeaseName("pylon-allocator"));
}

}  // namespace
}  // namespace pylon::election
