// Informer (reflector semantics) against the in-memory client: initial sync, watch events,
// clean close without relist, short watch → relist, 410 → relist at last RV then RV unset, and
// the relist diff so that handler-observed state always converges to the server's.
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "k8s/backoff.h"
#include "k8s/field_mask.h"
#include "k8s/informer.h"
#include "support/eventually.h"
#include "support/k8s/fake_client.h"

namespace pylon::k8s {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr test_support::Poll Eventually{.timeout = seconds(10), .every = milliseconds(2)};

Json Svc(const std::string& name, const std::string& value = "v") {
  return {{"metadata", {{"name", name}, {"namespace", "demo"}, {"labels", {{"app", "web"}}}}},
          {"spec", {{"value", value}}}};
}

// What the handlers have been told, keyed like the store.
class Observed {
 public:
  EventHandlers Handlers() {
    return EventHandlers{[this](const Json& o) {
                           std::lock_guard<std::mutex> l(mu_);
                           if (state_.count(KeyOf(o).String())) ++errors_;  // add of a known object
                           state_[KeyOf(o).String()] = ResourceVersion(o);
                           ++adds_;
                         },
                         [this](const Json& old_obj, const Json& o) {
                           std::lock_guard<std::mutex> l(mu_);
                           if (state_[KeyOf(o).String()] != ResourceVersion(old_obj)) ++errors_;
                           state_[KeyOf(o).String()] = ResourceVersion(o);
                           ++updates_;
                         },
                         [this](const Json& o) {
                           std::lock_guard<std::mutex> l(mu_);
                           if (state_.erase(KeyOf(o).String()) == 0)
                             ++errors_;  // delete of an unknown object
                           ++deletes_;
                         }};
  }
  std::map<std::string, std::string> state() {
    std::lock_guard<std::mutex> l(mu_);
    return state_;
  }
  int errors() {
    std::lock_guard<std::mutex> l(mu_);
    return errors_;
  }
  int deletes() {
    std::lock_guard<std::mutex> l(mu_);
    return deletes_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> state_;  // key → RV
  int adds_ = 0, updates_ = 0, deletes_ = 0, errors_ = 0;
};

std::map<std::string, std::string> ServerState(FakeClient& client) {
  std::map<std::string, std::string> out;
  auto list = client.List(resources::Services(), "", {});
  for (const auto& o : list->items) {
    out[KeyOf(o).String()] = ResourceVersion(o);
  }
  return out;
}

InformerOptions FastOptions() {
  InformerOptions o;
  o.resource = resources::Services();
  o.backoff.initial = milliseconds(1);
  o.backoff.cap = milliseconds(10);
  o.short_watch = Duration::zero();
  return o;
}

// Three writes to Services in demo: spec.value of `change.first` set to `change.second`,
// `remove` deleted and `add` created.
void ChangeRemoveAdd(FakeClient& client, const std::pair<std::string, std::string>& change,
                     const std::string& remove, const std::string& add) {
  auto o = client.Get(resources::Services(), "demo", change.first);
  ASSERT_TRUE(o);
  (*o)["spec"]["value"] = change.second;
  ASSERT_TRUE(client.Update(resources::Services(), *o));
  ASSERT_TRUE(client.Delete(resources::Services(), "demo", remove, {}));
  ASSERT_TRUE(client.Create(resources::Services(), Svc(add)));
}

// Starts `inf` and waits for its first list and for its watch on `client`.
void StartAndWatch(Informer& inf, FakeClient& client) {
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(10)));
  ASSERT_TRUE(Eventually([&] { return client.open_watches() == 1; }));
}

TEST(Informer, SyncsAndFollowsWatch) {
  FakeClient client;
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  ASSERT_TRUE(client.Create(resources::Services(), Svc("b")));
  Informer inf(client, FastOptions());
  Observed seen;
  inf.AddHandlers(seen.Handlers());
  EXPECT_FALSE(inf.HasSynced());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(10)));
  EXPECT_EQ(inf.store().Size(), 2u);
  ASSERT_TRUE(Eventually([&] { return client.open_watches() == 1; }));

  ASSERT_NO_FATAL_FAILURE(ChangeRemoveAdd(client, {"b", "changed"}, "a", "c"));
  ASSERT_TRUE(Eventually([&] { return seen.state() == ServerState(client); }));
  EXPECT_EQ(inf.store().Get("demo", "b")->at("spec").at("value"), "changed");
  EXPECT_FALSE(inf.store().Get("demo", "a"));
  EXPECT_EQ(inf.LastSyncResourceVersion(), std::to_string(client.resource_version()));

  // Bookmarks advance the last seen RV too.
  ASSERT_TRUE(client.Create(resources::ConfigMaps(),
                            Json{{"metadata", {{"name", "x"}, {"namespace", "demo"}}}}));
  client.SendBookmarks();
  ASSERT_TRUE(Eventually(
      [&] { return inf.LastSyncResourceVersion() == std::to_string(client.resource_version()); }));
  EXPECT_EQ(inf.stats().lists, 1);
  EXPECT_EQ(seen.errors(), 0);
  inf.Stop();
}

TEST(Informer, CleanCloseRewatchesWithoutRelist) {
  FakeClient client;
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  Informer inf(client, FastOptions());
  ASSERT_NO_FATAL_FAILURE(StartAndWatch(inf, client));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Eventually([&] { return client.open_watches() == 1; }));
    int64_t watches = inf.stats().watches;
    client.CloseWatches();
    ASSERT_TRUE(Eventually([&] { return inf.stats().watches > watches; }));
  }
  ASSERT_TRUE(client.Create(resources::Services(), Svc("b")));
  ASSERT_TRUE(Eventually([&] { return inf.store().Size() == 2; }));
  EXPECT_EQ(inf.stats().lists, 1);
  EXPECT_EQ(client.calls(Verb::kList), 1);
}

TEST(Informer, ShortWatchWithoutEventsCountsAsErrorAndRelists) {
  FakeClient client;
  auto opts = FastOptions();
  opts.short_watch = seconds(60);  // every close is "short" here
  Informer inf(client, opts);
  ASSERT_NO_FATAL_FAILURE(StartAndWatch(inf, client));
  client.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return inf.stats().lists >= 2; }));
  EXPECT_GE(inf.stats().errors, 1);
}

TEST(Informer, ExpiredWatchRelistsAtLastRvThenUnsetAndDiffs) {
  FakeClient client;
  for (const char* n : {"keep", "change", "remove"}) {
    ASSERT_TRUE(client.Create(resources::Services(), Svc(n)));
  }
  Informer inf(client, FastOptions());
  Observed seen;
  inf.AddHandlers(seen.Handlers());
  ASSERT_NO_FATAL_FAILURE(StartAndWatch(inf, client));

  // Keep the informer disconnected while the server changes, then compact the history.
  client.FailNext(Verb::kWatch, Error(ErrorCode::kUnavailable, "down"), 1000000);
  client.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return client.open_watches() == 0; }));
  ASSERT_NO_FATAL_FAILURE(ChangeRemoveAdd(client, {"change", "new"}, "remove", "added"));
  client.Compact();
  client.ClearFailures();

  // Watch from the old RV → 410 → a consistent list (RV unset), as client-go does: listing
  // again at the refused RV can loop on kube-apiserver's watch cache.
  ASSERT_TRUE(Eventually([&] { return seen.state() == ServerState(client); }));
  EXPECT_GE(inf.stats().expired, 1);
  // The relist's counter is bumped after its handlers ran: poll.
  EXPECT_TRUE(Eventually([&] { return inf.stats().lists == 2; })) << inf.stats().lists;
  EXPECT_EQ(seen.deletes(), 1);
  EXPECT_EQ(seen.errors(), 0);
  EXPECT_EQ(inf.store().Get("demo", "change")->at("spec").at("value"), "new");
}

// A 410 on the watch relists at once whatever the backoff (here an hour): the server is up and
// the cache is stale until the list. Before the fix the list waited the backoff, grown by an
// outage to tens of seconds (the soak: an agent kept a Service's address 85 s after the Service
// was gone).
TEST(Informer, AnExpiredWatchRelistsAtOnceWhateverTheBackoff) {
  FakeClient client;
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  auto opts = FastOptions();
  opts.backoff.initial = std::chrono::hours(1);
  opts.backoff.cap = std::chrono::hours(1);
  opts.backoff.jitter = 0;
  Informer inf(client, opts);
  ASSERT_NO_FATAL_FAILURE(StartAndWatch(inf, client));
  client.FailNext(Verb::kWatch, Error(ErrorCode::kGone, "too old resource version (HTTP 410)"));
  client.CloseWatches();
  EXPECT_TRUE(Eventually([&] { return inf.stats().lists == 2; })) << inf.stats().lists;
  EXPECT_EQ(inf.stats().expired, 1);
  // Again after a watch that was served (no event: a quiet resource, one 410 per compaction; the
  // soak, seed 8, waited 37 s on the second one before this).
  ASSERT_TRUE(Eventually([&] { return client.open_watches() == 1; }));
  client.FailNext(Verb::kWatch, Error(ErrorCode::kGone, "too old resource version (HTTP 410)"));
  client.CloseWatches();
  EXPECT_TRUE(Eventually([&] { return inf.stats().lists == 3; })) << inf.stats().lists;
  inf.Stop();
}

TEST(Informer, TooLargeResourceVersionRelistsWithoutRv) {
  // A server that lost its state (restart) is behind the informer's RV: it answers 504
  // "Too large resource version" to the watch at that RV. The relist must not ask for that RV
  // again (it would get the same 504): it is a consistent read.
  const Error too_large(ErrorCode::kUnavailable,
                        "Too large resource version: 99, current: 3 (HTTP 504 Timeout)");
  FakeClient client;
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  Informer inf(client, FastOptions());
  ASSERT_NO_FATAL_FAILURE(StartAndWatch(inf, client));
  client.FailNext(Verb::kWatch, too_large);
  client.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return inf.stats().lists == 2; }));
  EXPECT_EQ(client.calls(Verb::kList), 2) << "initial, then (after the watch's 504) RV unset";
  EXPECT_EQ(inf.stats().expired, 1);
}

TEST(Informer, ListErrorsBackOffAndRecover) {
  FakeClient client;
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  client.FailNext(Verb::kList, Error(ErrorCode::kUnavailable, "500"), 3);
  Informer inf(client, FastOptions());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(10)));
  EXPECT_EQ(client.calls(Verb::kList), 4);
  EXPECT_EQ(inf.stats().errors, 3);
}

// Only consecutive failures escalate: a watch that delivered events resets the backoff, so the
// failures of a fault burst the watch survived do not delay the next recovery (the allocator's
// chaos run waited a wait grown by unrelated earlier faults, past its deadline).
TEST(Informer, AWatchThatDeliveredResetsTheBackoff) {
  FakeClient client;
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  client.FailNext(Verb::kList, Error(ErrorCode::kUnavailable, "500"), 4);
  auto opts = FastOptions();
  opts.backoff.cap = seconds(1);
  opts.backoff.jitter = 0;
  Informer inf(client, opts);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(10)));
  EXPECT_EQ(inf.stats().backoff, milliseconds(16)) << "1 ms doubled by four failed lists";
  ASSERT_TRUE(Eventually([&] { return client.open_watches() == 1; }));
  ASSERT_TRUE(client.Create(resources::Services(), Svc("b")));
  ASSERT_TRUE(Eventually([&] { return inf.store().Get("demo", "b").has_value(); }));
  client.CloseWatches();
  EXPECT_TRUE(Eventually([&] { return inf.stats().backoff == milliseconds(1); }))
      << std::chrono::duration_cast<milliseconds>(inf.stats().backoff).count() << " ms";
}

TEST(Informer, SelectorTransitionsAreAddsAndDeletes) {
  FakeClient client;
  auto opts = FastOptions();
  opts.label_selector = "app=web";
  Informer inf(client, opts);
  Observed seen;
  inf.AddHandlers(seen.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(10)));
  ASSERT_TRUE(client.Create(resources::Services(), Svc("a")));
  ASSERT_TRUE(Eventually([&] { return inf.store().Size() == 1; }));
  Json a = *client.Get(resources::Services(), "demo", "a");
  a["metadata"]["labels"]["app"] = "db";
  ASSERT_TRUE(client.Update(resources::Services(), a));
  ASSERT_TRUE(Eventually([&] { return inf.store().Size() == 0; }));
  // The store is updated before the handlers run: poll.
  EXPECT_TRUE(Eventually([&] { return seen.deletes() == 1; })) << seen.deletes();
  EXPECT_EQ(seen.errors(), 0);
}

TEST(Informer, TransformedCompactCacheFollowsWatchAndRelist) {
  FakeClient client;
  auto with_extra = [](Json o) {
    o["spec"]["extra"] = std::string(200, 'x');
    return o;
  };
  for (const char* n : {"keep", "change", "remove"}) {
    ASSERT_TRUE(client.Create(resources::Services(), with_extra(Svc(n))));
  }
  auto opts = FastOptions();
  opts.compact = true;
  opts.transform = [](Json& o) { FieldMask::Of({"metadata", "spec.value"}).Apply(o); };
  Informer inf(client, opts);
  Observed seen;
  std::mutex mu;
  int untrimmed = 0;  // objects handed to handlers that still carry spec.extra
  auto check = [&](const Json& o) {
    std::lock_guard<std::mutex> l(mu);
    if (Find(o, {"spec"}) && Find(o, {"spec"})->contains("extra")) ++untrimmed;
  };
  inf.AddHandlers(seen.Handlers());
  inf.AddHandlers({check,
                   [&](const Json& a, const Json& b) {
                     check(a);
                     check(b);
                   },
                   check});
  ASSERT_NO_FATAL_FAILURE(StartAndWatch(inf, client));
  EXPECT_EQ(*inf.store().Get("demo", "keep"),
            (Json{{"metadata", client.Get(resources::Services(), "demo", "keep")->at("metadata")},
                  {"spec", {{"value", "v"}}}}));
  EXPECT_GT(inf.store().PackedBytes(), 0u);

  // Watch events, then a relist after 410 (diffed against the compact cache).
  Json c = *client.Get(resources::Services(), "demo", "change");
  c["spec"]["value"] = "watched";
  ASSERT_TRUE(client.Update(resources::Services(), c));
  ASSERT_TRUE(Eventually([&] { return seen.state() == ServerState(client); }));
  client.FailNext(Verb::kWatch, Error(ErrorCode::kUnavailable, "down"), 1000000);
  client.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return client.open_watches() == 0; }));
  c = *client.Get(resources::Services(), "demo", "change");
  c["spec"]["value"] = "relisted";
  ASSERT_TRUE(client.Update(resources::Services(), c));
  ASSERT_TRUE(client.Delete(resources::Services(), "demo", "remove", {}));
  ASSERT_TRUE(client.Create(resources::Services(), with_extra(Svc("added"))));
  client.Compact();
  client.ClearFailures();
  ASSERT_TRUE(Eventually([&] { return seen.state() == ServerState(client); }));
  EXPECT_EQ(seen.errors(), 0);
  EXPECT_EQ(seen.deletes(), 1);
  EXPECT_EQ(inf.store().Get("demo", "change")->at("spec"), (Json{{"value", "relisted"}}));
  EXPECT_EQ(inf.store().Get("demo", "added")->at("spec"), (Json{{"value", "v"}}));
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(untrimmed, 0);
}

TEST(Backoff, DoublesToCapJittersAndResets) {
  FakeClock clock;
  BackoffOptions o;  // 800 ms, ×2, 30 s cap, reset after 2 min, jitter 1.0
  Backoff b(o, clock, 42);
  std::vector<int64_t> bases;
  for (int i = 0; i < 8; ++i) {
    Duration base = b.current();
    Duration d = b.Next();
    EXPECT_GE(d, base);
    EXPECT_LT(d, base * 2);
    bases.push_back(std::chrono::duration_cast<milliseconds>(base).count());
    clock.Advance(seconds(1));
  }
  EXPECT_EQ(bases, (std::vector<int64_t>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
  clock.Advance(seconds(121));
  b.Next();
  EXPECT_EQ(b.current(), milliseconds(1600)) << "reset to 800 ms, then advanced once";
  BackoffOptions nojitter = o;
  nojitter.jitter = 0;
  Backoff exact(nojitter, clock);
  EXPECT_EQ(exact.Next(), milliseconds(800));
  EXPECT_EQ(exact.Next(), milliseconds(1600));
}

}  // namespace
}  // namespace pylon::k8s
