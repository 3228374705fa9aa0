// Event correlation (dedup → PATCH, aggregation, spam filter) on a fake clock, and the async
// recorder writing through the in-memory client.
#include <thread>

#include <gtest/gtest.h>

#include "common/time.h"
#include "k8s/event_recorder.h"
#include "support/eventually.h"
#include "support/k8s/fake_client.h"

namespace pylon::k8s {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const ObjectReference kSvc{"Service", "demo", "web", "uid-1", "v1"};
const ObjectReference kNode{"Node", "", "node-1", "uid-n", "v1"};

EventRecorderOptions Opts() {
  EventRecorderOptions o;
  o.component = "pylon-allocator";
  o.host = "node-1";
  return o;
}

TEST(MakeEvent, Shape) {
  WallTime now = *ParseTime("2025-01-02T03:04:05.5Z");
  Json e = MakeEvent(kSvc, EventLevel::kWarning, "AllocationFailed", "no pool", Opts(), now, 255);
  EXPECT_EQ(e["metadata"]["name"], "web.ff");
  EXPECT_EQ(e["metadata"]["namespace"], "demo");
  EXPECT_EQ(e["involvedObject"], (Json{{"kind", "Service"},
                                       {"namespace", "demo"},
                                       {"name", "web"},
                                       {"uid", "uid-1"},
                                       {"apiVersion", "v1"}}));
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "AllocationFailed");
  EXPECT_EQ(e["source"]["component"], "pylon-allocator");
  EXPECT_EQ(e["reportingComponent"], "pylon-allocator");
  EXPECT_EQ(e["firstTimestamp"], "2025-01-02T03:04:05Z");
  EXPECT_EQ(e["lastTimestamp"], "2025-01-02T03:04:05Z");
  EXPECT_EQ(e["count"], 1);
  Json n = MakeEvent(kNode, EventLevel::kNormal, "R", "m", Opts(), now, 1);
  EXPECT_EQ(n["metadata"]["namespace"], "default") << "cluster-scoped object";
  EXPECT_FALSE(n["involvedObject"].contains("namespace"));
  EXPECT_EQ(n["type"], "Normal");
}

class CorrelatorTest : public ::testing::Test {
 protected:
  Json Ev(const std::string& reason, const std::string& msg, const ObjectReference& ref = kSvc) {
    return MakeEvent(ref, EventLevel::kNormal, reason, msg, Opts(), clock_.WallNow(), ++n_);
  }
  FakeClock clock_;
  int64_t n_ = 0;
};

TEST_F(CorrelatorTest, IdenticalEventBecomesPatchOfCountAndLastTimestamp) {
  EventCorrelator c({}, clock_);
  auto first = c.Correlate(Ev("AddressAssigned", "192.0.2.1"));
  ASSERT_EQ(first.action, EventCorrelator::Action::kCreate);
  const std::string name = Name(first.event);
  clock_.Advance(seconds(6));
  auto second = c.Correlate(Ev("AddressAssigned", "192.0.2.1"));
  ASSERT_EQ(second.action, EventCorrelator::Action::kPatch);
  EXPECT_EQ(Name(second.event), name);
  EXPECT_EQ(second.patch["count"], 2);
  EXPECT_EQ(second.patch["lastTimestamp"], FormatTime(clock_.WallNow()));
  EXPECT_EQ(second.event["firstTimestamp"], first.event["firstTimestamp"]);
  auto other = c.Correlate(Ev("AddressAssigned", "192.0.2.2"));
  EXPECT_EQ(other.action, EventCorrelator::Action::kCreate) << "different message";
  clock_.Advance(minutes(11));
  auto late = c.Correlate(Ev("AddressAssigned", "192.0.2.1"));
  EXPECT_EQ(late.action, EventCorrelator::Action::kCreate) << "outside the dedup window";
}

TEST_F(CorrelatorTest, SimilarEventsAreAggregatedAfterTen) {
  EventCorrelator c({}, clock_);
  for (int i = 0; i < 9; ++i) {
    auto d = c.Correlate(Ev("Sync", "msg " + std::to_string(i)));
    EXPECT_EQ(d.action, EventCorrelator::Action::kCreate);
    EXPECT_EQ(d.event["message"], "msg " + std::to_string(i));
  }
  auto tenth = c.Correlate(Ev("Sync", "msg 9"));
  EXPECT_EQ(tenth.action, EventCorrelator::Action::kCreate);
  EXPECT_EQ(tenth.event["message"], "(combined from similar events): msg 9");
  auto eleventh = c.Correlate(Ev("Sync", "msg 10"));
  EXPECT_EQ(eleventh.action, EventCorrelator::Action::kPatch) << "the combined event counts up";
  EXPECT_EQ(eleventh.patch["count"], 2);
  EXPECT_EQ(eleventh.patch["message"], "(combined from similar events): msg 10");
}

TEST_F(CorrelatorTest, SpamFilterBurst25ThenOnePerFiveMinutes) {
  EventCorrelator c({}, clock_);
  int written = 0;
  for (int i = 0; i < 40; ++i) {
    auto d = c.Correlate(Ev("R" + std::to_string(i), "m"));  // distinct reasons: no aggregation
    if (d.action != EventCorrelator::Action::kSkip) ++written;
  }
  EXPECT_EQ(written, 25);
  EXPECT_NE(c.Correlate(Ev("other-object", "m", kNode)).action, EventCorrelator::Action::kSkip)
      << "the budget is per object";
  clock_.Advance(minutes(4));
  EXPECT_EQ(c.Correlate(Ev("X1", "m")).action, EventCorrelator::Action::kSkip);
  clock_.Advance(minutes(1));
  EXPECT_NE(c.Correlate(Ev("X2", "m")).action, EventCorrelator::Action::kSkip);
  EXPECT_EQ(c.Correlate(Ev("X3", "m")).action, EventCorrelator::Action::kSkip);
}

constexpr test_support::Poll Eventually{.timeout = seconds(10), .every = milliseconds(2)};

std::vector<Json> DescribeEvents(FakeClient& client) {
  ListOptions lo;
  lo.field_selector =
      "involvedObject.kind=Service,involvedObject.name=web,involvedObject.namespace=demo,"
      "involvedObject.uid=uid-1";
  return client.List(resources::Events(), "demo", lo)->items;
}

TEST(EventRecorder, CreatesThenPatchesAndRecreatesWhenGone) {
  FakeClient client;
  FakeClock clock;
  EventRecorderImpl rec(client, Opts(), clock);
  rec.Start();
  rec.Event(kSvc, EventLevel::kNormal, "AddressAssigned", "Assigned 192.0.2.1");
  ASSERT_TRUE(Eventually([&] { return rec.written() == 1; }));
  clock.Advance(seconds(5));
  rec.Event(kSvc, EventLevel::kNormal, "AddressAssigned", "Assigned 192.0.2.1");
  ASSERT_TRUE(Eventually([&] { return rec.written() == 2; }));
  auto events = DescribeEvents(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 2);
  EXPECT_EQ(events[0]["lastTimestamp"], FormatTime(clock.WallNow()));
  EXPECT_NE(events[0]["firstTimestamp"], events[0]["lastTimestamp"]);
  EXPECT_EQ(events[0]["source"]["component"], "pylon-allocator");

  // The server expired the event: the PATCH gets 404 and the recorder creates it again.
  ASSERT_TRUE(client.Delete(resources::Events(), "demo", Name(events[0]), {}));
  rec.Event(kSvc, EventLevel::kNormal, "AddressAssigned", "Assigned 192.0.2.1");
  ASSERT_TRUE(Eventually([&] { return rec.written() == 3; }));
  EXPECT_EQ(DescribeEvents(client).size(), 1u);
  EXPECT_EQ(client.calls(Verb::kCreate), 2);
  rec.Stop();
}

TEST(EventRecorder, RetriesTransientFailuresAndDropsWhenFull) {
  FakeClient client;
  FakeClock clock;
  EventRecorderOptions o = Opts();
  o.retry_interval = milliseconds(1);
  o.queue_capacity = 3;
  EventRecorderImpl rec(client, o, clock);
  client.FailNext(Verb::kCreate, Error(ErrorCode::kUnavailable, "500"), 2);
  for (int i = 0; i < 5; ++i) {
    rec.Event(kSvc, EventLevel::kWarning, "R" + std::to_string(i), "m");  // not started: queued
  }
  EXPECT_EQ(rec.dropped(), 2);
  rec.Start();
  ASSERT_TRUE(Eventually([&] { return rec.written() == 3; }));
  EXPECT_EQ(client.calls(Verb::kCreate), 5);
  EXPECT_EQ(DescribeEvents(client).size(), 3u);
  // A non-transient failure drops the event without retrying.
  client.FailNext(Verb::kCreate, Error(ErrorCode::kInvalidArgument, "422"), 1);
  rec.Event(kSvc, EventLevel::kWarning, "Bad", "m");
  rec.Stop();
  EXPECT_EQ(client.calls(Verb::kCreate), 6);
}

TEST(ObjectReference, FromObjectAndResource) {
  Json svc = {{"kind", "Service"},
              {"apiVersion", "v1"},
              {"metadata", {{"name", "web"}, {"namespace", "demo"}, {"uid", "u"}}}};
  auto r = ObjectReference::FromObject(svc);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "Service");
  EXPECT_EQ(r->uid, "u");
  svc.erase("kind");
  EXPECT_FALSE(ObjectReference::FromObject(svc));
  auto fr = ObjectReference::For(resources::Services(), svc);
  EXPECT_EQ(fr.kind, "Service");
  EXPECT_EQ(fr.api_version, "v1");
}

}  // namespace
}  // namespace pylon::k8s
