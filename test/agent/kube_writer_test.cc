// KubeWriter against k8s::FakeClient: the writes land as merge patches / creates / deletes, and
// repeated identical writes are not sent again (the write-storm trap).
#include "agent/kube_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/clock.h"

#include "k8s/event_recorder.h"
#include "k8s/resource.h"
#include "support/k8s/fake_client.h"
#include "support/k8s/fake_event_recorder.h"

namespace pylon::agent {
namespace {

using nlohmann::json;

class KubeWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    json svc = {{"metadata", {{"name", "web"}, {"namespace", "default"}}},
                {"spec", {{"type", "LoadBalancer"}, {"externalTrafficPolicy", "Local"}}}};
    ASSERT_TRUE(client_.Create(k8s::resources::Services(), svc));
    writer_.Start();
  }
  void TearDown() override { writer_.Stop(); }
  // Waits until the worker has nothing queued.
  void Drain() {
    writer_.Stop();
    writer_.Start();
  }

  k8s::FakeClient client_;
  k8s::FakeEventRecorder recorder_;
  FakeClock clock_;
  KubeWriter writer_{client_, recorder_, KubeWriterOptions{"purelb-system", "node1"}, clock_};
};

TEST_F(KubeWriterTest, AnnotationPatchIsSentOnceForTheSameValue) {
  AnnotationPatch p{{"default", "web"}, {{"purelb.io/announcing-IPv4", "node1,eth0"}}, "1"};
  writer_.PatchAnnotations(p);
  Drain();
  const int patches = client_.calls(k8s::Verb::kPatch);
  EXPECT_EQ(patches, 1);
  auto svc = client_.Get(k8s::resources::Services(), "default", "web");
  ASSERT_TRUE(svc);
  EXPECT_EQ(k8s::Annotation(*svc, "purelb.io/announcing-IPv4"), "node1,eth0");
  for (int i = 0; i < 5; ++i) writer_.PatchAnnotations(p);  // every pass asks again
  Drain();
  EXPECT_EQ(client_.calls(k8s::Verb::kPatch), patches)
      << writer_.writes() << " " << writer_.failures();
  // After the dedup window a still-wanted write is sent again (self-healing), once.
  clock_.Advance(std::chrono::seconds(31));
  writer_.PatchAnnotations(p);
  Drain();
  EXPECT_EQ(client_.calls(k8s::Verb::kPatch), patches + 1);
  // Removal.
  writer_.PatchAnnotations(
      {{"default", "web"}, {{"purelb.io/announcing-IPv4", std::nullopt}}, "2"});
  Drain();
  svc = client_.Get(k8s::resources::Services(), "default", "web");
  EXPECT_EQ(k8s::Annotation(*svc, "purelb.io/announcing-IPv4"), "");
}

// An identical patch asked for on another version of the Service than the one the last write was
// decided on: the Service changed after our write and lost our value (another node overwrote the
// annotation), so it is written again -- not waiting out the dedup window -- after 1 s, then 2 s,
// 4 s ... for consecutive such rewrites (two confused writers stay bounded), reset once the
// window has passed.
TEST_F(KubeWriterTest, IdenticalPatchOnANewerVersionIsWrittenAgain) {
  struct Step {
    const char* observed;  // the resourceVersion the planner decided on
    int advance_ms;        // clock step before asking
    bool sent;             // the patch is sent
  };
  const Step steps[] = {
      {"10", 0, true},      // t=0: first write
      {"10", 100, false},   // the cache lags behind it: same version
      {"12", 100, false},   // another version, but within 1 s of the write
      {"12", 1000, true},   // t=1.2: the value was lost after our write: written again
      {"12", 100, false},   // not again on the version it was decided on
      {"14", 1000, false},  // lost again, but the second rewrite waits 2 s
      {"14", 1000, true},   // t=3.3
      {"16", 3000, false},  // the third waits 4 s
      {"16", 1100, true},   // t=7.4
      {"", 5000, false},    // no version known: the plain dedup window
      {"18", 31000, true},  // t=43.4: past the window; the backoff starts over
      {"20", 1000, true},   // 1 s later, a first rewrite again
  };
  AnnotationPatch p{{"default", "web"}, {{"purelb.io/announcing-IPv4", "node2,eth0"}}, ""};
  int sent = 0;
  for (const auto& step : steps) {
    SCOPED_TRACE(std::string("observed ") + step.observed);
    clock_.Advance(std::chrono::milliseconds(step.advance_ms));
    p.observed_version = step.observed;
    writer_.PatchAnnotations(p);
    Drain();
    sent += step.sent ? 1 : 0;
    EXPECT_EQ(client_.calls(k8s::Verb::kPatch), sent);
  }
}

TEST_F(KubeWriterTest, FailedWriteIsRetriedOnTheNextRequest) {
  client_.FailNext(k8s::Verb::kPatch, Error(ErrorCode::kUnavailable, "injected"));
  AnnotationPatch p{{"default", "web"}, {{"purelb.io/announcing-IPv6", "node1,eth0"}}, "1"};
  writer_.PatchAnnotations(p);
  Drain();
  EXPECT_EQ(writer_.failures(), 1);
  writer_.PatchAnnotations(p);
  Drain();
  auto svc = client_.Get(k8s::resources::Services(), "default", "web");
  EXPECT_EQ(k8s::Annotation(*svc, "purelb.io/announcing-IPv6"), "node1,eth0");
}

TEST_F(KubeWriterTest, TrafficPolicyResetWithEvent) {
  writer_.ResetTrafficPolicy({"default", "web"});
  Drain();
  auto svc = client_.Get(k8s::resources::Services(), "default", "web");
  EXPECT_EQ(FindString(*svc, {"spec", "externalTrafficPolicy"}).value_or(""), "Cluster");
  auto events = recorder_.Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("ExternalTrafficPolicy"), std::string::npos) << events[0];
  EXPECT_NE(events[0].find("Local -> Cluster"), std::string::npos) << events[0];
}

TEST_F(KubeWriterTest, L2AdvertisementCreateUpdateDelete) {
  L2Advertisement l2{"ipv4-192-0-2-201",
                     *net::IpAddress::Parse("192.0.2.201"),
                     "default",
                     "web",
                     "lace-cni.io/public",
                     "node1",
                     "eth0"};
  writer_.UpsertL2Advertisement(l2);
  Drain();
  auto obj = client_.Get(k8s::resources::L2Advertisements(), "", l2.name);
  ASSERT_TRUE(obj);
  auto parsed = ParseL2Advertisement(*obj);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, l2);
  l2.node = "node2";
  writer_.UpsertL2Advertisement(l2);
  Drain();
  EXPECT_EQ(*ParseL2Advertisement(*client_.Get(k8s::resources::L2Advertisements(), "", l2.name)),
            l2);
  writer_.DeleteL2Advertisement(l2.name);
  Drain();
  EXPECT_FALSE(client_.Get(k8s::resources::L2Advertisements(), "", l2.name));
}

// Writes queued while the API is slow, decided on passes that the node won an address: a later
// pass that no longer asks for them (the node stopped winning it) drops them, so they cannot land
// after the node withdrew and name it as the announcer. Events are not level-based: kept. Rows:
// what the second pass asks for again, and what lands.
TEST_F(KubeWriterTest, QueuedWritesAPassNoLongerAsksForAreDropped) {
  struct Row {
    const char* name;
    bool ask_patch_again;
    bool ask_l2_again;
  };
  for (const Row& row : {Row{"stopped winning: neither lands", false, false},
                         Row{"still wanted: both land", true, true},
                         Row{"only the patch still wanted", true, false}}) {
    SCOPED_TRACE(row.name);
    KubeWriter w{client_, recorder_, KubeWriterOptions{"purelb-system", "node1"}, clock_};
    const std::string value = std::string("node1,eth0,") + row.name;
    AnnotationPatch p{{"default", "web"}, {{"purelb.io/announcing-IPv4", value}}, "1"};
    L2Advertisement l2{"ipv4-192-0-2-202",
                       *net::IpAddress::Parse("192.0.2.202"),
                       "default",
                       "web",
                       "lace-cni.io/public",
                       "node1",
                       "eth0"};
    (void)client_.Delete(k8s::resources::L2Advertisements(), "", l2.name, {});
    const int events = static_cast<int>(recorder_.Events().size());
    // Pass 1, the worker not running (the API hung): the writes wait in the queue.
    w.PatchAnnotations(p);
    w.UpsertL2Advertisement(l2);
    w.Event(ServiceEvent{{"default", "web"}, false, "AnnouncingLocal", row.name});
    w.PassDone();
    // Pass 2.
    if (row.ask_patch_again) w.PatchAnnotations(p);
    if (row.ask_l2_again) w.UpsertL2Advertisement(l2);
    w.PassDone();
    w.Start();
    w.Stop();
    auto svc = client_.Get(k8s::resources::Services(), "default", "web");
    ASSERT_TRUE(svc);
    EXPECT_EQ(k8s::Annotation(*svc, "purelb.io/announcing-IPv4") == value, row.ask_patch_again);
    EXPECT_EQ(client_.Get(k8s::resources::L2Advertisements(), "", l2.name).has_value(),
              row.ask_l2_again);
    EXPECT_EQ(static_cast<int>(recorder_.Events().size()), events + 1);
  }
}

}  // namespace
}  // namespace pylon::agent
