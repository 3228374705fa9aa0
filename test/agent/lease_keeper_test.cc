// The node lease's purelb.io/instance annotation and the guarded delete on shutdown, against
// k8s::FakeClient (RenewOnce and Delete are called directly: no worker thread).
#include "agent/lease_keeper.h"

#include <gtest/gtest.h>

#include <string>

#include "k8s/object.h"
#include "k8s/resource.h"
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

}  // namespace
}  // namespace pylon::agent
