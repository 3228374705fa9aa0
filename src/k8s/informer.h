// An informer for one resource: client-go reflector semantics feeding a local Store and handlers.
//  - LIST with limit (paginated; the first one with resourceVersion unset, a consistent read),
//    then WATCH from the list's RV with allowWatchBookmarks=true and timeoutSeconds uniformly
//    random in [min, 2·min) (300–600 s).
//  - A clean close re-watches from the last seen RV without relisting; a watch that closes within
//    `short_watch` (1 s) having delivered no event counts as an error (relist after backoff).
//  - 410 (in-stream ERROR Expired/Gone or HTTP 410) on the watch → relist with RV unset. Other
//    failures → relist at RV = last seen, not older than it (resourceVersionMatch=NotOlderThan:
//    the current objects, never the snapshot at that RV); if that RV is expired (or "Too large
//    resource version"), relist at once with RV unset.
//  - Transport errors / 429 / 5xx on the watch → re-watch from the last RV (after a backoff when no
//    event came through); other errors → relist after backoff.
//  - After a 410 on the watch the consistent relist comes at once, not after the backoff: the
//    server answered, and the cache stays stale until that list (the soak saw an agent act on a
//    Service cache 85 s old, a 410 followed by a backoff grown to 47 s by an API outage). Once
//    until a watch is served again (an event, or open past `short_watch`): a 410 at once after
//    the relist waits the backoff.
//  - Backoff 800 ms doubling to 30 s, jittered, reset after 2 min without a backoff, and (unlike
//    client-go) by every watch that delivered an event: only consecutive failures escalate, so
//    after a burst of faults that the watch survived in between, the cache catches up within
//    about a second instead of a wait grown to tens of seconds by unrelated earlier faults.
//  - Every event's RV (bookmarks and deletes too) becomes the last seen RV.
//  - A relist is diffed against the cache: deletes for objects gone, updates for changed RVs,
//    adds for new ones, so no change is lost across a relist.
//  - `transform` (optional) rewrites every object (list items and watch events, deletes too)
//    before it is stored or handed to handlers, e.g. to drop fields the controller never reads;
//    the objects handlers and store() return are the transformed ones.
// Handlers run on the informer's thread, in order, and must not block (enqueue keys instead).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "k8s/backoff.h"
#include "k8s/canceller.h"
#include "k8s/client.h"
#include "k8s/store.h"

namespace pylon::k8s {

struct EventHandlers {
  std::function<void(const Json& obj)> on_add;
  std::function<void(const Json& old_obj, const Json& new_obj)> on_update;
  std::function<void(const Json& last_state)> on_delete;
};

struct InformerOptions {
  Resource resource;
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  Duration min_watch_timeout = std::chrono::minutes(5);
  Duration short_watch = std::chrono::seconds(1);
  BackoffOptions backoff;
  // Applied on the informer thread to each object before it is stored (list items as each page
  // arrives); must keep metadata name, namespace and resourceVersion, be idempotent (it may run
  // twice on a list item) and not throw.
  std::function<void(Json& object)> transform;
  // Keep the cache as CBOR (see store.h): far less memory, a decode per read.
  bool compact = false;
};

struct InformerStats {
  int64_t lists = 0;    // successful lists (initial + relists)
  int64_t watches = 0;  // watch requests started
  int64_t events = 0;   // watch events applied (bookmarks included)
  int64_t expired = 0;  // 410s seen on watch or list
  int64_t errors = 0;   // ListAndWatch rounds that ended in an error
  Duration backoff{};   // un-jittered base of the next backoff wait
};

class Informer {
 public:
  Informer(Client& client, InformerOptions opts, const Clock& clock = SystemClock::Instance());
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Register before Start.
  void AddHandlers(EventHandlers handlers);
  void Start();
  // Cancels the watch and joins the thread; idempotent.
  void Stop();

  bool HasSynced() const { return synced_.load(); }
  // Polls HasSynced until true or `timeout` (real time) passes.
  bool WaitForSync(Duration timeout) const;
  const Store& store() const { return store_; }
  std::string LastSyncResourceVersion() const;
  InformerStats stats() const;

 private:
  void Run();
  Status ListAndWatch();
  Status RelistAndReplace();
  Status WatchLoop();
  void Apply(WatchEvent&& ev);
  void Replace(std::vector<Json> items);
  std::string RelistResourceVersion() const;
  void SetLastRv(const std::string& rv);
  // backoff_ is used on the informer's thread only; these also publish its base in stats_.
  Duration NextBackoff();
  void ResetBackoff();

  Client& client_;
  const InformerOptions opts_;
  const Clock& clock_;
  Backoff backoff_;
  // Informer thread only. A 410 on the watch: the next list comes at once, not after the backoff
  // (the server answered, and the cache is stale until that list); once, until a watch is served.
  bool expired_ = false;
  bool relisted_at_once_ = false;
  std::mt19937_64 rng_;
  Store store_;
  std::vector<EventHandlers> handlers_;
  Canceller cancel_;
  std::thread thread_;
  std::atomic<bool> synced_{false};

  mutable Mutex mu_;
  std::string last_rv_ PYLON_GUARDED_BY(mu_);
  bool rv_unavailable_ PYLON_GUARDED_BY(mu_) = false;
  InformerStats stats_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon::k8s
