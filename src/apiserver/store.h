// The in-memory object store of the API server: every kind, one global monotonic
// resourceVersion, a bounded history of changes for watches, and the write rules of
// kube-apiserver (preconditions, no-op updates, status separation, finalizers, generation).
// No HTTP here: handlers translate requests into these calls.
//
// Threading: all public methods are thread-safe (one mutex). Watchers receive events through
// their own bounded queues, so a slow watcher never blocks writers; a watcher whose queue
// overflows is closed (the client re-watches from its last RV).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "apiserver/api_error.h"
#include "apiserver/json_util.h"
#include "apiserver/patch.h"
#include "apiserver/resource.h"
#include "apiserver/selector.h"
#include "apiserver/service_alloc.h"
#include "apiserver/strategy.h"
#include "common/clock.h"

namespace pylon::apiserver {

using ObjectPtr = std::shared_ptr<const Json>;

struct StoreOptions {
  std::size_t history = 5000;       // watch history length in events (--history)
  std::size_t watch_queue = 10000;  // per-watcher queue bound
  ServiceNetwork service_network;
  std::vector<std::string> initial_namespaces = {"default", "kube-system", "purelb-system"};
};

struct ListOptions {
  std::string ns;  // "" = all namespaces (or cluster-scoped)
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "", "0" or a number
  long long limit = 0;           // 0 = no limit
  std::string continue_token;
};

struct ListResult {
  std::vector<ObjectPtr> items;
  std::uint64_t resource_version = 0;
  std::string continue_token;
  long long remaining = -1;  // remainingItemCount when paginating, else -1
};

struct WatchOptions {
  std::string ns;
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" / "0": synthetic ADDED for current objects first
};

struct WatchEvent {
  const char* type;  // "ADDED", "MODIFIED", "DELETED"
  ObjectPtr object;  // carries kind and apiVersion (storage version)
};

class Watcher {
 public:
  // Waits up to `timeout` for events. Returns the queued events (moved out), whether the watcher
  // was closed by the store, and the progress RV: every event with RV <= progress has been
  // returned by this or an earlier call (the bookmark RV).
  struct Batch {
    std::vector<WatchEvent> events;
    bool closed = false;
    std::uint64_t progress = 0;
  };
  Batch Wait(std::chrono::milliseconds timeout);

 private:
  friend class Store;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchEvent> queue_;
  bool closed_ = false;
  std::uint64_t progress_ = 0;
  // Filter; immutable after registration.
  std::string key_;
  std::string ns_;
  LabelSelector labels_;
  FieldSelector fields_;
  std::shared_ptr<Strategy> strategy_;
};

class Store {
 public:
  Store(const Clock& clock, StoreOptions options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Type lookup by group ("" = core), version and plural resource.
  TypePtr Lookup(const std::string& group, const std::string& version,
                 const std::string& resource) const;
  std::vector<TypePtr> Types() const;
  std::uint64_t CurrentRv() const;
  // Whether a field selector field is supported for the type.
  bool SupportsField(const ResourceType& type, std::string_view field) const;

  ApiResult<ObjectPtr> Get(const ResourceType& type, const std::string& ns,
                           const std::string& name);
  ApiResult<ListResult> List(const ResourceType& type, const ListOptions& options);
  ApiResult<ObjectPtr> Create(const ResourceType& type, const std::string& ns, Json body,
                              bool dry_run = false);
  ApiResult<ObjectPtr> Update(const ResourceType& type, const std::string& ns,
                              const std::string& name, Json body, bool status,
                              bool dry_run = false);
  ApiResult<ObjectPtr> Patch(const ResourceType& type, const std::string& ns,
                             const std::string& name, PatchType patch_type, std::string_view body,
                             bool status, bool dry_run = false);
  // Returns the deleted (or now-deleting) object, or a Status "Success" body for kinds that do not
  // return the deleted object. `options` is a DeleteOptions body (may be null).
  ApiResult<ObjectPtr> Delete(const ResourceType& type, const std::string& ns,
                              const std::string& name, const Json& options, bool dry_run = false);
  // Deletes every object the selectors match; returns the deleted objects.
  ApiResult<std::vector<ObjectPtr>> DeleteCollection(const ResourceType& type,
                                                     const ListOptions& options);

  // Registers a watcher. Too-old RV → 410 Expired; future RV → 504.
  ApiResult<std::shared_ptr<Watcher>> Watch(const ResourceType& type, const WatchOptions& options);
  void StopWatch(const std::shared_ptr<Watcher>& w);

  // Fault injection: closes every open watch now.
  void CloseAllWatches();
  // Fault injection: drops the watch history; resuming watchers (and continue tokens) get 410.
  void CompactHistory();
  std::size_t WatcherCount() const;

 private:
  struct HistoryEvent {
    std::uint64_t rv;
    const char* type;
    std::string key;
    ObjectPtr object;
    ObjectPtr prev;  // MODIFIED: the previous state
  };
  using Bucket = std::map<std::string, ObjectPtr>;  // "ns/name" → object

  Strategy& StrategyFor(const ResourceType& type);
  std::shared_ptr<Strategy> StrategyPtr(const ResourceType& type);
  ApiResult<ObjectPtr> CreateLocked(const ResourceType& type, const std::string& ns, Json body,
                                    bool dry_run);
  ApiResult<ObjectPtr> UpdateLocked(const ResourceType& type, const std::string& ns,
                                    const std::string& name, Json body, bool status, bool dry_run);
  ApiResult<ObjectPtr> DeleteLocked(const ResourceType& type, const std::string& ns,
                                    const std::string& name, const Json& options, bool dry_run);
  ObjectPtr RemoveLocked(const ResourceType& type, const std::string& key, const Json& last);
  void Commit(const char* type, const std::string& key, ObjectPtr obj, ObjectPtr prev);
  void Deliver(Watcher& w, const HistoryEvent& ev);
  bool Matches(const Watcher& w, const Json& obj) const;
  void OnCrdChange(const Json* crd, const Json* old);
  void RemoveTypesOf(const std::string& store_key);
  std::string NewUid();
  ApiResult<ObjectPtr> StatusSuccess(const ResourceType& type, const Json& obj);

  const Clock& clock_;
  StoreOptions opts_;
  mutable std::mutex mu_;
  std::uint64_t rv_ = 0;
  std::uint64_t compacted_rv_ = 0;  // events with rv <= this are no longer in history_
  std::deque<HistoryEvent> history_;
  std::map<std::string, Bucket> data_;                           // StoreKey → bucket
  std::map<std::string, TypePtr> types_;                         // "group/version/resource"
  std::map<std::string, std::shared_ptr<Strategy>> strategies_;  // StoreKey → strategy
  std::vector<std::shared_ptr<Watcher>> watchers_;
  ServiceAllocator services_;
  std::mt19937_64 rng_;
};

}  // namespace pylon::apiserver
