#include "support/k8s/fake_client.h"

#include "common/time.h"
#include "k8s/selector.h"

namespace pylon::k8s {
namespace {

std::string ResKey(const Resource& res) { return res.group + "/" + res.plural; }

std::string StoreKey(std::string_view ns, std::string_view name) {
  return ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
}

tl::unexpected<Error> NotFound(const Resource& res, std::string_view name) {
  return Fail(ErrorCode::kNotFound,
              res.plural + " \"" + std::string(name) + "\" not found (HTTP 404 NotFound)");
}

tl::unexpected<Error> Conflict(const Resource& res, std::string_view name) {
  return Fail(ErrorCode::kConflict,
              "Operation cannot be fulfilled on " + res.plural + " \"" + std::string(name) +
                  "\": the object has been modified; please apply your changes to the latest "
                  "version and try again (HTTP 409 Conflict)");
}

bool Matches(const Json& obj, std::string_view ns, const std::string& labels,
             const std::string& fields) {
  if (!ns.empty() && Namespace(obj) != ns) return false;
  if (!labels.empty()) {
    auto m = MatchesLabelSelector(obj, labels);
    if (!m || !*m) return false;
  }
  if (!fields.empty()) {
    auto m = MatchesFieldSelector(obj, fields);
    if (!m || !*m) return false;
  }
  return true;
}

}  // namespace

FakeClient::~FakeClient() = default;

std::optional<Error> FakeClient::TakeFailure(Verb verb) {
  ++calls_[verb];
  auto it = failures_.find(verb);
  if (it == failures_.end() || it->second.empty()) return std::nullopt;
  Error e = it->second.front();
  it->second.pop_front();
  return e;
}

FakeClient::Store& FakeClient::StoreFor(const Resource& res) { return stores_[ResKey(res)]; }

void FakeClient::Record(const Resource& res, EventType type, const Json& obj, const Json& old) {
  history_.push_back(HistoryEntry{ResKey(res), type, obj, old, rv_});
  cv_.notify_all();
}

Result<Json> FakeClient::Get(const Resource& res, std::string_view ns, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kGet)) return Fail(*e);
  Store& s = StoreFor(res);
  auto it = s.find(StoreKey(res.namespaced ? ns : "", name));
  if (it == s.end()) return NotFound(res, name);
  return it->second;
}

Result<ObjectList> FakeClient::List(const Resource& res, std::string_view ns,
                                    const ListOptions& opts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kList)) return Fail(*e);
  if (opts.resource_version && !opts.resource_version->empty() && *opts.resource_version != "0") {
    // An exact/not-older-than RV below the compaction point is too old (as with limit set).
    int64_t want = std::atoll(opts.resource_version->c_str());
    if (want < compacted_rv_) {
      return Fail(ErrorCode::kGone, "too old resource version: " + *opts.resource_version + " (" +
                                        std::to_string(compacted_rv_) + ") (HTTP 410 Expired)");
    }
  }
  ObjectList out;
  out.resource_version = std::to_string(rv_);
  for (const auto& [key, obj] : StoreFor(res)) {
    if (Matches(obj, ns, opts.label_selector, opts.field_selector)) {
      out.items.push_back(obj);
      if (opts.item_transform) opts.item_transform(out.items.back());
    }
  }
  return out;
}

Result<Json> FakeClient::Create(const Resource& res, const Json& obj) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kCreate)) return Fail(*e);
  if (auto m = ParseMeta(obj); !m) return Fail(m.error().Wrap("create"));
  Json o = obj;
  std::string name = Name(o);
  if (name.empty()) {
    auto gen = FindString(o, {"metadata", "generateName"});
    if (!gen) return Fail(ErrorCode::kInvalidArgument, "create: metadata.name: Required value");
    name = *gen + std::to_string(++uid_counter_);
    o["metadata"]["name"] = name;
  }
  std::string ns = res.namespaced ? Namespace(o) : "";
  if (res.namespaced && ns.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "create: metadata.namespace: Required value");
  }
  Store& s = StoreFor(res);
  std::string key = StoreKey(ns, name);
  if (s.count(key) != 0) {
    return Fail(ErrorCode::kAlreadyExists,
                res.plural + " \"" + name + "\" already exists (HTTP 409 AlreadyExists)");
  }
  Bump();
  o["kind"] = res.kind;
  o["apiVersion"] = res.ApiVersion();
  o["metadata"]["uid"] = "fake-uid-" + std::to_string(++uid_counter_);
  o["metadata"]["resourceVersion"] = std::to_string(rv_);
  o["metadata"]["creationTimestamp"] = FormatTime(std::chrono::system_clock::now());
  o["metadata"].erase("deletionTimestamp");
  s[key] = o;
  Record(res, EventType::kAdded, o, nullptr);
  return o;
}

Result<Json> FakeClient::Replace(const Resource& res, const Json& obj, bool status_only) {
  if (auto m = ParseMeta(obj); !m) return Fail(m.error().Wrap("update"));
  std::string name = Name(obj);
  std::string ns = res.namespaced ? Namespace(obj) : "";
  Store& s = StoreFor(res);
  auto it = s.find(StoreKey(ns, name));
  if (it == s.end()) return NotFound(res, name);
  std::string rv = ResourceVersion(obj);
  if (!rv.empty() && rv != ResourceVersion(it->second)) return Conflict(res, name);
  Json old = it->second;
  Json next = old;
  if (status_only) {
    if (obj.contains("status")) {
      next["status"] = obj["status"];
    } else {
      next.erase("status");
    }
  } else {
    next = obj;
    next["metadata"]["uid"] = old["metadata"]["uid"];
    next["metadata"]["creationTimestamp"] = old["metadata"]["creationTimestamp"];
    if (old.contains("status")) {
      next["status"] = old["status"];
    } else {
      next.erase("status");
    }
  }
  next["kind"] = res.kind;
  next["apiVersion"] = res.ApiVersion();
  next["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
  if (next == old) return old;  // no-op: same RV, no event
  Bump();
  next["metadata"]["resourceVersion"] = std::to_string(rv_);
  // Removing the last finalizer of an object being deleted deletes it.
  const Json* fin = Find(next, {"metadata", "finalizers"});
  if (IsBeingDeleted(next) && (fin == nullptr || !fin->is_array() || fin->empty())) {
    s.erase(it);
    Record(res, EventType::kDeleted, next, old);
    return next;
  }
  it->second = next;
  Record(res, EventType::kModified, next, old);
  return next;
}

Result<Json> FakeClient::Update(const Resource& res, const Json& obj) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kUpdate)) return Fail(*e);
  return Replace(res, obj, false);
}

Result<Json> FakeClient::UpdateStatus(const Resource& res, const Json& obj) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kUpdateStatus)) return Fail(*e);
  return Replace(res, obj, true);
}

Result<Json> FakeClient::Patch(const Resource& res, std::string_view ns, std::string_view name,
                               PatchType type, const Json& patch, std::string_view subresource) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kPatch)) return Fail(*e);
  Store& s = StoreFor(res);
  auto it = s.find(StoreKey(res.namespaced ? ns : "", name));
  if (it == s.end()) return NotFound(res, name);
  Json patched = it->second;
  try {
    if (type == PatchType::kJson) {
      patched = patched.patch(patch);
    } else {
      patched.merge_patch(patch);
    }
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kInvalidArgument, std::string("patch: ") + e.what());
  }
  // An RV inside the patch is a precondition; otherwise the patch applies to the current version.
  std::string want = ResourceVersion(patched);
  if (want != ResourceVersion(it->second)) return Conflict(res, name);
  return Replace(res, patched, subresource == "status");
}

Status FakeClient::Delete(const Resource& res, std::string_view ns, std::string_view name,
                          const DeleteOptions& opts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto e = TakeFailure(Verb::kDelete)) return Fail(*e);
  Store& s = StoreFor(res);
  auto it = s.find(StoreKey(res.namespaced ? ns : "", name));
  if (it == s.end()) return NotFound(res, name);
  if ((!opts.precondition_uid.empty() && opts.precondition_uid != Uid(it->second)) ||
      (!opts.precondition_resource_version.empty() &&
       opts.precondition_resource_version != ResourceVersion(it->second))) {
    return Fail(ErrorCode::kConflict, "Precondition failed for " + res.plural + " \"" +
                                          std::string(name) + "\" (HTTP 409 Conflict)");
  }
  Json old = it->second;
  Bump();
  const Json* fin = Find(old, {"metadata", "finalizers"});
  if (fin != nullptr && fin->is_array() && !fin->empty()) {
    if (IsBeingDeleted(old)) return Ok();
    it->second["metadata"]["deletionTimestamp"] = FormatTime(std::chrono::system_clock::now());
    it->second["metadata"]["resourceVersion"] = std::to_string(rv_);
    Record(res, EventType::kModified, it->second, old);
    return Ok();
  }
  Json last = old;
  last["metadata"]["resourceVersion"] = std::to_string(rv_);
  s.erase(it);
  Record(res, EventType::kDeleted, last, old);
  return Ok();
}

Status FakeClient::Watch(const Resource& res, std::string_view ns, const WatchOptions& opts,
                         const WatchHandler& handler, Canceller* cancel) {
  const std::string key = ResKey(res);
  std::atomic<bool> cancelled{false};
  uint64_t waker = 0;
  if (cancel != nullptr) {
    waker = cancel->AddWaker([&] {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled = true;
      cv_.notify_all();
    });
  }
  struct Cleanup {
    Canceller* c;
    uint64_t id;
    ~Cleanup() {
      if (c != nullptr) c->RemoveWaker(id);
    }
  } cleanup{cancel, waker};

  std::vector<WatchEvent> batch;
  int64_t pos = 0;
  uint64_t close_gen = 0;
  uint64_t bookmark_gen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto e = TakeFailure(Verb::kWatch)) return Fail(*e);
    if (opts.resource_version.empty() || opts.resource_version == "0") {
      for (const auto& [k, obj] : StoreFor(res)) {
        if (Matches(obj, ns, opts.label_selector, opts.field_selector)) {
          batch.push_back(WatchEvent{EventType::kAdded, obj, ResourceVersion(obj)});
        }
      }
      pos = rv_;
    } else {
      pos = std::atoll(opts.resource_version.c_str());
      if (pos < compacted_rv_) {
        return Fail(ErrorCode::kGone,
                    "watch " + res.plural + ": too old resource version: " + opts.resource_version +
                        " (" + std::to_string(compacted_rv_) + ") (HTTP 410 Expired)");
      }
    }
    close_gen = close_generation_;
    bookmark_gen = bookmark_generation_;
    ++open_watches_;
  }
  struct OpenCount {
    FakeClient* f;
    ~OpenCount() {
      std::lock_guard<std::mutex> lock(f->mu_);
      --f->open_watches_;
    }
  } open_count{this};

  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(opts.timeout_seconds.value_or(3600));
  while (true) {
    for (auto& ev : batch) {
      if (!handler(std::move(ev))) return Ok();
    }
    batch.clear();
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] {
      if (cancelled || close_generation_ != close_gen || bookmark_generation_ != bookmark_gen) {
        return true;
      }
      return !history_.empty() && history_.back().rv > pos;
    };
    if (!cv_.wait_until(lock, deadline, ready)) return Ok();  // server-side timeout
    if (cancelled || close_generation_ != close_gen) return Ok();
    if (pos < compacted_rv_) {
      return Fail(ErrorCode::kGone,
                  "watch " + res.plural + ": too old resource version (HTTP 410 Expired)");
    }
    for (const auto& h : history_) {
      if (h.rv <= pos || h.res_key != key) continue;
      bool now_matches = h.type != EventType::kDeleted &&
                         Matches(h.object, ns, opts.label_selector, opts.field_selector);
      bool was_matching =
          !h.old.is_null() && Matches(h.old, ns, opts.label_selector, opts.field_selector);
      if (h.type == EventType::kDeleted) {
        if (was_matching)
          batch.push_back(WatchEvent{EventType::kDeleted, h.object, std::to_string(h.rv)});
      } else if (now_matches) {
        batch.push_back(WatchEvent{was_matching ? EventType::kModified : EventType::kAdded,
                                   h.object, std::to_string(h.rv)});
      } else if (was_matching) {  // stopped matching: DELETED with the new RV
        Json last = h.old;
        last["metadata"]["resourceVersion"] = std::to_string(h.rv);
        batch.push_back(WatchEvent{EventType::kDeleted, last, std::to_string(h.rv)});
      }
    }
    if (!history_.empty()) pos = std::max(pos, history_.back().rv);
    if (bookmark_generation_ != bookmark_gen) {
      bookmark_gen = bookmark_generation_;
      pos = std::max(pos, rv_);
      if (opts.allow_bookmarks) {
        Json bm = {{"kind", res.kind},
                   {"apiVersion", res.ApiVersion()},
                   {"metadata", {{"resourceVersion", std::to_string(pos)}}}};
        batch.push_back(WatchEvent{EventType::kBookmark, bm, std::to_string(pos)});
      }
    }
  }
}

void FakeClient::FailNext(Verb verb, Error err, int times) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < times; ++i) failures_[verb].push_back(err);
}

void FakeClient::ClearFailures() {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.clear();
}

void FakeClient::CloseWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++close_generation_;
  cv_.notify_all();
}

void FakeClient::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
  cv_.notify_all();
}

void FakeClient::SendBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  ++bookmark_generation_;
  cv_.notify_all();
}

int64_t FakeClient::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

int FakeClient::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_watches_;
}

int FakeClient::calls(Verb verb) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = calls_.find(verb);
  return it == calls_.end() ? 0 : it->second;
}

}  // namespace pylon::k8s
