// In-memory Client for controller tests: one global resourceVersion, optimistic concurrency
// (409 on a stale RV), AlreadyExists / NotFound, /status separation, merge and JSON patches
// (strategic merge is treated as a merge patch), finalizers, label/field selectors, pagination,
// and watches with a bounded history (Compact() makes older RVs answer 410). Test hooks inject
// errors per verb and cut open watches. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/client.h"

namespace pylon::k8s {

enum class Verb { kGet, kList, kCreate, kUpdate, kUpdateStatus, kPatch, kDelete, kWatch };

class FakeClient final : public Client {
 public:
  FakeClient() = default;
  ~FakeClient() override;

  Result<Json> Get(const Resource& res, std::string_view ns, std::string_view name) override;
  Result<ObjectList> List(const Resource& res, std::string_view ns,
                          const ListOptions& opts) override;
  Result<Json> Create(const Resource& res, const Json& obj) override;
  Result<Json> Update(const Resource& res, const Json& obj) override;
  Result<Json> UpdateStatus(const Resource& res, const Json& obj) override;
  Result<Json> Patch(const Resource& res, std::string_view ns, std::string_view name,
                     PatchType type, const Json& patch, std::string_view subresource) override;
  Status Delete(const Resource& res, std::string_view ns, std::string_view name,
                const DeleteOptions& opts) override;
  Status Watch(const Resource& res, std::string_view ns, const WatchOptions& opts,
               const WatchHandler& handler, Canceller* cancel) override;

  // --- test hooks ---
  // The next `times` calls of `verb` fail with `err` (before touching state).
  void FailNext(Verb verb, Error err, int times = 1);
  void ClearFailures();
  // Ends every open watch cleanly (as a server-side timeout would).
  void CloseWatches();
  // Forgets the watch history: a watch from an RV older than now gets 410 Expired.
  void Compact();
  // Emits a BOOKMARK with the current RV to every open watch that asked for bookmarks.
  void SendBookmarks();
  int64_t resource_version() const;
  int open_watches() const;
  // Number of calls per verb so far (including failed ones).
  int calls(Verb verb) const;

 private:
  struct HistoryEntry {
    std::string res_key;
    EventType type;
    Json object;  // state after the change (DELETED: last state with the delete's RV)
    Json old;     // state before (null for ADDED)
    int64_t rv;
  };
  using Store = std::map<std::string, Json>;  // "ns/name" → object

  std::optional<Error> TakeFailure(Verb verb);  // requires mu_
  Store& StoreFor(const Resource& res);         // requires mu_
  int64_t Bump() { return ++rv_; }              // requires mu_
  void Record(const Resource& res, EventType type, const Json& obj, const Json& old);
  Result<Json> Replace(const Resource& res, const Json& obj, bool status_only);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t rv_ = 1;
  int64_t uid_counter_ = 0;
  std::map<std::string, Store> stores_;  // resource key → objects
  std::deque<HistoryEntry> history_;
  int64_t compacted_rv_ = 0;  // watches from an RV below this get 410
  uint64_t close_generation_ = 0;
  uint64_t bookmark_generation_ = 0;
  int open_watches_ = 0;
  std::map<Verb, std::deque<Error>> failures_;
  std::map<Verb, int> calls_;
};

}  // namespace pylon::k8s
