// Leader election on a fake clock against the in-memory client: acquisition, renewal, expiry
// judged on the local clock only, transitions, conflicts, release; then Run() end to end.
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "common/time.h"
#include "k8s/leader_election.h"
#include "support/eventually.h"
#include "support/k8s/fake_client.h"

namespace pylon::k8s {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LeaderElectionConfig Config(const std::string& id) {
  LeaderElectionConfig c;
  c.lease_namespace = "pylon-system";
  c.lease_name = "pylon-allocator";
  c.identity = id;
  return c;
}

class ElectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderElector> Make(const std::string& id, LeaderElectionConfig c = {}) {
    if (c.identity.empty()) c = Config(id);
    c.callbacks.on_new_leader = [this, id](const std::string& leader) {
      reports_.push_back(id + " sees " + leader);
    };
    auto e = LeaderElector::Create(client_, c, clock_);
    EXPECT_TRUE(e) << e.error().message();
    return std::move(*e);
  }
  Json Lease() { return *client_.Get(resources::Leases(), "pylon-system", "pylon-allocator"); }
  LeaseSpec Spec() { return *ParseLeaseSpec(Lease()); }

  FakeClock clock_;
  FakeClient client_;
  std::vector<std::string> reports_;
};

TEST_F(ElectionTest, ScenarioAcquireRenewExpireTakeOver) {
  auto a = Make("a");
  auto b = Make("b");

  ASSERT_TRUE(a->TryAcquireOrRenew());  // 404 → create
  EXPECT_TRUE(a->IsLeader());
  LeaseSpec s = Spec();
  EXPECT_EQ(s.holder_identity, "a");
  EXPECT_EQ(s.lease_duration_seconds, 15);
  EXPECT_EQ(s.lease_transitions, 0);
  const WallTime acquired = *s.acquire_time;

  EXPECT_FALSE(b->TryAcquireOrRenew()) << "held and fresh";
  EXPECT_EQ(b->GetLeader(), "a");
  EXPECT_FALSE(b->IsLeader());

  clock_.Advance(seconds(2));
  ASSERT_TRUE(a->TryAcquireOrRenew());  // renew
  s = Spec();
  EXPECT_EQ(*s.acquire_time, acquired) << "renewal keeps acquireTime";
  EXPECT_GT(*s.renew_time, acquired);
  EXPECT_EQ(s.lease_transitions, 0);

  // b saw the renewal 0 s ago: 14 s later the lease is still valid for b.
  EXPECT_FALSE(b->TryAcquireOrRenew());
  clock_.Advance(seconds(14));
  EXPECT_FALSE(b->TryAcquireOrRenew()) << "observed change + 15 s not yet passed";
  clock_.Advance(seconds(1));
  ASSERT_TRUE(b->TryAcquireOrRenew()) << "expired on b's local clock";
  s = Spec();
  EXPECT_EQ(s.holder_identity, "b");
  EXPECT_EQ(s.lease_transitions, 1);

  EXPECT_FALSE(a->TryAcquireOrRenew()) << "a sees b's fresh record";
  EXPECT_FALSE(a->IsLeader());
  EXPECT_EQ(a->GetLeader(), "b");
}

TEST_F(ElectionTest, RemoteRenewTimeIsNeverComparedWithLocalClock) {
  // A lease written by a node whose clock is far off: renewTime decades in the past and future.
  for (const char* renew : {"1971-01-01T00:00:00.000000Z", "2999-01-01T00:00:00.000000Z"}) {
    FakeClient client;
    LeaseSpec other;
    other.holder_identity = "skewed";
    other.lease_duration_seconds = 15;
    other.renew_time = *ParseTime(renew);
    other.acquire_time = other.renew_time;
    ASSERT_TRUE(
        client.Create(resources::Leases(), MakeLease("pylon-system", "pylon-allocator", other)));
    auto b = *LeaderElector::Create(client, Config("b"), clock_);
    EXPECT_FALSE(b->TryAcquireOrRenew()) << renew << ": just observed, so valid";
    clock_.Advance(seconds(14));
    EXPECT_FALSE(b->TryAcquireOrRenew()) << renew;
    clock_.Advance(seconds(2));
    EXPECT_TRUE(b->TryAcquireOrRenew()) << renew << ": expired 15 s after local observation";
  }
}

TEST_F(ElectionTest, ConflictFailsTheAttempt) {
  auto a = Make("a");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  client_.FailNext(Verb::kUpdate, Error(ErrorCode::kConflict, "modified"));
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_TRUE(a->TryAcquireOrRenew());
  client_.FailNext(Verb::kGet, Error(ErrorCode::kUnavailable, "down"));
  EXPECT_FALSE(a->TryAcquireOrRenew());
  client_.FailNext(Verb::kCreate, Error(ErrorCode::kAlreadyExists, "raced"));
  FakeClient empty;
  auto c = *LeaderElector::Create(empty, Config("c"), clock_);
  empty.FailNext(Verb::kCreate, Error(ErrorCode::kAlreadyExists, "raced"));
  EXPECT_FALSE(c->TryAcquireOrRenew());
}

TEST_F(ElectionTest, StaleResourceVersionIsAConflict) {
  auto a = Make("a");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  Json lease = Lease();
  clock_.Advance(seconds(1));
  ASSERT_TRUE(a->TryAcquireOrRenew());  // a new renewTime moves the RV on
  lease["spec"]["holderIdentity"] = "intruder";
  auto put = client_.Update(resources::Leases(), lease);
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code(), ErrorCode::kConflict);
}

TEST_F(ElectionTest, ReleaseLetsOthersAcquireAtOnce) {
  auto a = Make("a");
  auto b = Make("b");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());
  ASSERT_TRUE(a->Release());
  LeaseSpec s = Spec();
  EXPECT_EQ(s.holder_identity, "");
  EXPECT_EQ(s.lease_duration_seconds, 1);
  EXPECT_FALSE(a->IsLeader());
  ASSERT_TRUE(b->TryAcquireOrRenew()) << "an empty holder is free at once";
  EXPECT_EQ(Spec().lease_transitions, 1);
  EXPECT_TRUE(a->Release()) << "not leader: nothing to do";
  EXPECT_EQ(Spec().holder_identity, "b");
}

TEST_F(ElectionTest, MicroTimeOnTheWireHasSixDigits) {
  auto a = Make("a");
  clock_.Advance(milliseconds(1));
  ASSERT_TRUE(a->TryAcquireOrRenew());
  Json lease = Lease();
  std::regex micro(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(lease["spec"]["renewTime"].get<std::string>(), micro));
  EXPECT_TRUE(std::regex_match(lease["spec"]["acquireTime"].get<std::string>(), micro));
}

TEST_F(ElectionTest, OnNewLeaderReportsEachHolderChangeOnce) {
  auto a = Make("a");
  auto b = Make("b");
  a->TryAcquireOrRenew();
  a->MaybeReportTransition();
  a->TryAcquireOrRenew();
  a->MaybeReportTransition();
  b->TryAcquireOrRenew();
  b->MaybeReportTransition();
  clock_.Advance(seconds(16));
  b->TryAcquireOrRenew();
  b->MaybeReportTransition();
  a->TryAcquireOrRenew();
  a->MaybeReportTransition();
  EXPECT_EQ(reports_, (std::vector<std::string>{"a sees a", "b sees a", "b sees b", "a sees b"}));
}

TEST(ElectionConfig, Validation) {
  FakeClient client;
  auto ok = Config("a");
  EXPECT_TRUE(ValidateLeaderElectionConfig(ok));
  auto c = ok;
  c.renew_deadline = c.lease_duration;
  EXPECT_FALSE(ValidateLeaderElectionConfig(c));
  c = ok;
  c.renew_deadline = seconds(2);  // not > 1.2 × 2 s
  EXPECT_FALSE(ValidateLeaderElectionConfig(c));
  c = ok;
  c.identity = "";
  EXPECT_FALSE(LeaderElector::Create(client, c));
}

// Run() on the real clock with short periods: one leader at a time; cancel releases; a leader
// that cannot renew steps down after the renew deadline.
TEST(ElectionRun, HandOverOnCancelAndStepDownOnRenewFailure) {
  FakeClient client;
  // Two leaders at once = b starts before a was told to stop. (Like client-go, Run() releases
  // the lease before it calls on_stopped_leading, so b may legitimately start between the two:
  // the callbacks cannot be used to detect an overlap.)
  std::atomic<bool> a_cancelled{false};
  std::atomic<bool> both{false};
  auto cfg = [&](const std::string& id, std::atomic<bool>* started, std::atomic<bool>* stopped) {
    LeaderElectionConfig c = Config(id);
    // Loose enough that a thread stalled on a loaded machine keeps its lease.
    c.lease_duration = seconds(3);
    c.renew_deadline = seconds(2);
    c.retry_period = milliseconds(50);
    c.release_on_cancel = true;
    c.callbacks.on_started_leading = [&, started, id] {
      if (id == "b" && !a_cancelled) both = true;
      *started = true;
    };
    c.callbacks.on_stopped_leading = [stopped] { *stopped = true; };
    return c;
  };
  std::atomic<bool> a_started{false}, a_stopped{false}, b_started{false}, b_stopped{false};
  auto a = *LeaderElector::Create(client, cfg("a", &a_started, &a_stopped));
  auto b = *LeaderElector::Create(client, cfg("b", &b_started, &b_stopped));
  Canceller ca, cb;
  std::thread ta([&] { a->Run(ca); });
  auto wait_for = [](const std::atomic<bool>& flag) {
    return test_support::Eventually([&] { return flag.load(); }, seconds(10), milliseconds(5));
  };
  ASSERT_TRUE(wait_for(a_started));
  std::thread tb([&] { b->Run(cb); });
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(b_started) << "b waits while a renews";
  a_cancelled = true;
  ca.Cancel();
  ta.join();
  EXPECT_TRUE(a_stopped);
  ASSERT_TRUE(wait_for(b_started)) << "released lease taken over";
  // b can no longer write: it must step down within the renew deadline.
  client.FailNext(Verb::kGet, Error(ErrorCode::kUnavailable, "partition"), 1000);
  ASSERT_TRUE(wait_for(b_stopped));
  cb.Cancel();
  tb.join();
  EXPECT_FALSE(both.load());
}

}  // namespace
}  // namespace pylon::k8s
