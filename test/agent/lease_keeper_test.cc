// The node lease's purelb.io/instance annotation and the guarded delete on shutdown, and its pace
// (loud / quiet, lease_pacing.h), against k8s::FakeClient (RenewOnce and Delete are called
// directly: no worker thread).
#include "agent/lease_keeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "k8s/object.h"
#include "k8s/resource.h"
#include "support/eventually.h"
#include "support/k8s/fake_client.h"

namespace pylon::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LeaseKeeperInstance, DeleteScenarioTable) {
  struct Row {
    const char* name;
    const char* uid;         // this agent's PURELB_POD_UID ("": unset)
    const char* taken_by;    // nullptr: nobody else touches the lease; "": it is deleted
    const char* annotation;  // purelb.io/instance as written by this agent (nullptr: none)
    LeaseDeleteOutcome outcome;
    bool lease_left;
  };
  const Row rows[] = {
      {"no uid: no annotation, unconditional delete", "", nullptr, nullptr,
       LeaseDeleteOutcome::kDeleted, false},
      {"no uid: deletes even a successor's lease (as before)", "", "pod-b", nullptr,
       LeaseDeleteOutcome::kDeleted, false},
      {"own lease: deleted", "pod-a", nullptr, "pod-a", LeaseDeleteOutcome::kDeleted, false},
      {"a successor took the lease over: left alone", "pod-a", "pod-b", "pod-a",
       LeaseDeleteOutcome::kOtherInstance, true},
      {"already gone", "pod-a", "", "pod-a", LeaseDeleteOutcome::kAbsent, false},
  };
  const auto& leases = k8s::resources::Leases();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    k8s::FakeClient client;
    FakeClock clock;
    LeaseKeeper keeper(client, "purelb-system", election::NodeName("node1"),
                       LeaseTiming{seconds(10), seconds(7), seconds(2)}, clock, nullptr);
    if (*row.uid != '\0') keeper.SetInstance(row.uid);
    ASSERT_TRUE(keeper.RenewOnce());
    auto lease = client.Get(leases, "purelb-system", "purelb-node-node1");
    ASSERT_TRUE(lease);
    if (row.annotation == nullptr) {
      EXPECT_FALSE(Find(*lease, {"metadata", "annotations", "purelb.io/instance"}));
    } else {
      EXPECT_EQ(k8s::Annotation(*lease, "purelb.io/instance"), row.annotation);
    }
    if (row.taken_by != nullptr) {
      if (*row.taken_by == '\0') {
        ASSERT_TRUE(client.Delete(leases, "purelb-system", "purelb-node-node1", {}));
      } else {
        (*lease)["metadata"]["annotations"]["purelb.io/instance"] = row.taken_by;
        ASSERT_TRUE(client.Update(leases, *lease));
      }
    }
    auto outcome = keeper.Delete();
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_EQ(*outcome, row.outcome);
    EXPECT_EQ(client.Get(leases, "purelb-system", "purelb-node-node1").has_value(), row.lease_left);
  }
}

// A lease rewritten between the read and the delete (resourceVersion precondition fails) is read
// again (k8s::RetryOnConflict): still ours, it is deleted; an API error is returned, and a
// conflict on every attempt ends in an error that says the retries ran out.
TEST(LeaseKeeperInstance, DeleteRetriesAfterAConflictAndReportsErrors) {
  const auto& leases = k8s::resources::Leases();
  k8s::FakeClient client;
  FakeClock clock;
  LeaseKeeper keeper(client, "purelb-system", election::NodeName("node1"),
                     LeaseTiming{seconds(10), seconds(7), seconds(2)}, clock, nullptr);
  keeper.SetInstance("pod-a");
  ASSERT_TRUE(keeper.RenewOnce());
  client.FailNext(k8s::Verb::kDelete, Error(ErrorCode::kConflict, "precondition"), 1);
  auto outcome = keeper.Delete();
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(*outcome, LeaseDeleteOutcome::kDeleted);
  EXPECT_FALSE(client.Get(leases, "purelb-system", "purelb-node-node1"));

  ASSERT_TRUE(keeper.RenewOnce());
  client.FailNext(k8s::Verb::kGet, Error(ErrorCode::kUnavailable, "down"), 1);
  EXPECT_FALSE(keeper.Delete());

  client.FailNext(k8s::Verb::kDelete, Error(ErrorCode::kConflict, "precondition"), 100);
  auto gave_up = keeper.Delete();
  ASSERT_FALSE(gave_up);
  EXPECT_EQ(gave_up.error().code(), ErrorCode::kConflict);
  EXPECT_NE(gave_up.error().message().find("gave up after 5 attempts"), std::string::npos)
      << gave_up.error().message();
  EXPECT_TRUE(client.Get(leases, "purelb-system", "purelb-node-node1"));
}

// The quiet lease through the keeper: the duration each renewal writes and the health deadline
// that goes with it, across both switches (PureLB defaults 10 s / 7 s / 2 s; quiet 10 s / 40 s /
// 28 s). One keeper walked through the rows.
TEST(LeaseKeeperPacing, WrittenDurationAndHealthDeadlineFollowTheMode) {
  enum class Renew { kNone, kOk, kFail };
  struct Row {
    const char* name;
    int advance_s;
    std::optional<bool> carried;  // SetHeartbeatsCarryLiveness(*carried), then
    bool changed;                 // its result
    Renew renew;                  // RenewOnce()
    LeaseMode mode;
    int written_s;      // leaseDurationSeconds in the lease afterwards
    int healthy_for_s;  // HealthyUntil() - now afterwards
  };
  const Row rows[] = {
      {"first renewal: loud", 0, false, false, Renew::kOk, LeaseMode::kLoud, 10, 7},
      {"heartbeats carry liveness: the hold-down starts", 1, true, false, Renew::kNone,
       LeaseMode::kLoud, 10, 6},
      {"held 30 s: quiet, renewed at once with 40 s", 30, true, true, Renew::kOk, LeaseMode::kQuiet,
       40, 28},
      {"quiet renewal 10 s later", 10, true, false, Renew::kOk, LeaseMode::kQuiet, 40, 28},
      {"heartbeats stop carrying it: loud, but its renewal fails (API down)", 9, false, true,
       Renew::kFail, LeaseMode::kLoud, 40, 19},
      {"still the quiet deadline: peers still see the 40 s lease", 2, std::nullopt, false,
       Renew::kFail, LeaseMode::kLoud, 40, 17},
      {"the loud renewal succeeds: 10 s written, 7 s deadline", 2, false, false, Renew::kOk,
       LeaseMode::kLoud, 10, 7},
  };
  const auto& leases = k8s::resources::Leases();
  k8s::FakeClient client;
  FakeClock clock;
  LeaseKeeper keeper(client, "purelb-system", election::NodeName("node1"),
                     LeaseTiming{seconds(10), seconds(7), seconds(2)}, clock, nullptr);
  int ok = 0, failed = 0;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    clock.Advance(seconds(row.advance_s));
    if (row.carried) {
      EXPECT_EQ(keeper.SetHeartbeatsCarryLiveness(*row.carried), row.changed);
    }
    if (row.renew == Renew::kFail) {
      client.FailNext(k8s::Verb::kUpdate, Error(ErrorCode::kUnavailable, "down"), 1);
      EXPECT_FALSE(keeper.RenewOnce());
      ++failed;
    } else if (row.renew == Renew::kOk) {
      ASSERT_TRUE(keeper.RenewOnce());
      ++ok;
    }
    EXPECT_EQ(keeper.pacing().mode(), row.mode);
    auto lease = client.Get(leases, "purelb-system", "purelb-node-node1");
    ASSERT_TRUE(lease);
    EXPECT_EQ(FindInt(*lease, {"spec", "leaseDurationSeconds"}), row.written_s);
    ASSERT_TRUE(keeper.HealthyUntil());
    EXPECT_EQ(*keeper.HealthyUntil() - clock.Now(), seconds(row.healthy_for_s));
    EXPECT_TRUE(keeper.Healthy());
  }
  EXPECT_EQ(keeper.renewals(), ok);
  EXPECT_EQ(keeper.failures(), failed);
}

// The worker renews at once on a change of pace, in both directions, without waiting for its
// period (5 minutes here, so only the change can explain a write in between).
TEST(LeaseKeeperPacing, TheWorkerRenewsAtOnceWhenThePaceChanges) {
  const auto& leases = k8s::resources::Leases();
  k8s::FakeClient client;
  FakeClock clock;
  QuietLeaseOptions quiet;
  quiet.renew_period = std::chrono::minutes(10);
  quiet.lease_duration = std::chrono::minutes(20);
  LeaseKeeper keeper(client, "purelb-system", election::NodeName("node1"),
                     LeaseTiming{std::chrono::minutes(10), seconds(500), std::chrono::minutes(5)},
                     clock, nullptr, quiet);
  auto written = [&]() -> std::int64_t {
    auto lease = client.Get(leases, "purelb-system", "purelb-node-node1");
    return lease ? FindInt(*lease, {"spec", "leaseDurationSeconds"}).value_or(0) : 0;
  };
  // Waits for a condition (the worker thread writes); never for a time.
  const test_support::Poll until{.timeout = std::chrono::minutes(1), .every = milliseconds(5)};
  keeper.Start();
  ASSERT_TRUE(until([&] { return keeper.renewals() == 1; }));
  EXPECT_EQ(written(), 600);
  EXPECT_FALSE(keeper.SetHeartbeatsCarryLiveness(true));
  clock.Advance(seconds(30));
  EXPECT_TRUE(keeper.SetHeartbeatsCarryLiveness(true));
  EXPECT_TRUE(until([&] { return keeper.renewals() == 2; }));
  EXPECT_EQ(written(), 1200);
  EXPECT_TRUE(keeper.SetHeartbeatsCarryLiveness(false));
  EXPECT_TRUE(until([&] { return keeper.renewals() == 3; }));
  EXPECT_EQ(written(), 600);
  keeper.Stop();
  EXPECT_EQ(keeper.renewals(), 3);
}

TEST(LeaseKeeperPacing, QuietLeaseOffStaysLoud) {
  k8s::FakeClient client;
  FakeClock clock;
  QuietLeaseOptions off;
  off.enabled = false;
  LeaseKeeper keeper(client, "purelb-system", election::NodeName("node1"),
                     LeaseTiming{seconds(10), seconds(7), seconds(2)}, clock, nullptr, off);
  EXPECT_FALSE(keeper.SetHeartbeatsCarryLiveness(true));
  clock.Advance(std::chrono::minutes(5));
  EXPECT_FALSE(keeper.SetHeartbeatsCarryLiveness(true));
  EXPECT_EQ(keeper.pacing().mode(), LeaseMode::kLoud);
  EXPECT_EQ(keeper.pacing().QuietAt(), std::nullopt);
  ASSERT_TRUE(keeper.RenewOnce());
  auto lease = client.Get(k8s::resources::Leases(), "purelb-system", "purelb-node-node1");
  ASSERT_TRUE(lease);
  EXPECT_EQ(FindInt(*lease, {"spec", "leaseDurationSeconds"}), 10);
}

}  // namespace
}  // namespace pylon::agent
