#include "k8s/informer.h"

#include "common/log.h"

namespace pylon::k8s {

namespace {

// 410 Expired/Gone, or a 504 "Too large resource version" (the store is behind the RV we ask for,
// e.g. after the server lost its state): both mean "list again without an RV".
bool IsResourceVersionUnavailable(const Error& e) {
  return e.code() == ErrorCode::kGone ||
         e.message().find("Too large resource version") != std::string::npos;
}

}  // namespace

Informer::Informer(Client& client, InformerOptions opts, const Clock& clock)
    : client_(client),
      opts_(std::move(opts)),
      clock_(clock),
      backoff_(opts_.backoff, clock),
      rng_(std::random_device{}()),
      store_(StoreOptions{opts_.compact}) {
  stats_.backoff = opts_.backoff.initial;
}

Informer::~Informer() { Stop(); }

void Informer::AddHandlers(EventHandlers handlers) { handlers_.push_back(std::move(handlers)); }

void Informer::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
}

bool Informer::WaitForSync(Duration timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!HasSynced()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string Informer::LastSyncResourceVersion() const {
  MutexLock lock(mu_);
  return last_rv_;
}

Duration Informer::NextBackoff() {
  Duration wait = backoff_.Next();
  MutexLock lock(mu_);
  stats_.backoff = backoff_.current();
  return wait;
}

void Informer::ResetBackoff() {
  backoff_.Reset();
  MutexLock lock(mu_);
  stats_.backoff = backoff_.current();
}

InformerStats Informer::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void Informer::SetLastRv(const std::string& rv) {
  MutexLock lock(mu_);
  last_rv_ = rv;
}

std::string Informer::RelistResourceVersion() const {
  MutexLock lock(mu_);
  // "" is a consistent read from the store: after a 410, and for the first list too. Not RV "0":
  // kube-apiserver serves RV=0 lists from its watch cache and ignores `limit` there, so 10^4
  // Services would arrive as one response of tens of MB, parsed whole before the transform trims
  // it (a 321 MB peak measured in the allocator). A consistent list is paginated, and each page
  // is trimmed as it arrives.
  return rv_unavailable_ ? std::string() : last_rv_;
}

void Informer::Run() {
  while (!cancel_.Cancelled()) {
    Status st = ListAndWatch();
    if (cancel_.Cancelled()) break;
    if (st && expired_ && !relisted_at_once_) {
      expired_ = false;
      relisted_at_once_ = true;
      continue;
    }
    expired_ = false;
    if (!st) {
      {
        MutexLock lock(mu_);
        ++stats_.errors;
      }
      log::Warn("informer: list/watch failed",
                {{"resource", opts_.resource.plural}, {"error", st.error().message()}});
    }
    Duration wait = NextBackoff();
    if (!st && st.error().retry_after() > wait) wait = st.error().retry_after();
    if (cancel_.WaitFor(wait)) break;
  }
}

Status Informer::ListAndWatch() {
  if (auto st = RelistAndReplace(); !st) return st;
  return WatchLoop();
}

Status Informer::RelistAndReplace() {
  std::string rv = RelistResourceVersion();
  ListOptions lo;
  lo.label_selector = opts_.label_selector;
  lo.field_selector = opts_.field_selector;
  lo.page_size = opts_.page_size;
  lo.item_transform = opts_.transform;
  if (!rv.empty()) lo.resource_version = rv;
  auto list = client_.List(opts_.resource, opts_.ns, lo);
  if (!list && !rv.empty() && IsResourceVersionUnavailable(list.error())) {
    // The RV we listed at is no longer available (compacted, or from before a server restart):
    // retry at once with RV unset.
    {
      MutexLock lock(mu_);
      rv_unavailable_ = true;
      ++stats_.expired;
    }
    lo.resource_version.reset();
    list = client_.List(opts_.resource, opts_.ns, lo);
  }
  if (!list) return Fail(list.error());
  Replace(std::move(list->items));
  {
    MutexLock lock(mu_);
    rv_unavailable_ = false;
    last_rv_ = list->resource_version;
    ++stats_.lists;
  }
  synced_ = true;
  return Ok();
}

Status Informer::WatchLoop() {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  while (!cancel_.Cancelled()) {
    WatchOptions wo;
    wo.label_selector = opts_.label_selector;
    wo.field_selector = opts_.field_selector;
    wo.resource_version = LastSyncResourceVersion();
    wo.allow_bookmarks = true;
    auto timeout = std::chrono::duration_cast<std::chrono::seconds>(opts_.min_watch_timeout *
                                                                    (1.0 + unit(rng_)));
    wo.timeout_seconds = std::max<int64_t>(1, timeout.count());
    int64_t events = 0;
    SteadyTime start = clock_.Now();
    {
      MutexLock lock(mu_);
      ++stats_.watches;
    }
    Status st = client_.Watch(
        opts_.resource, opts_.ns, wo,
        [&](WatchEvent&& ev) {
          ++events;
          Apply(std::move(ev));
          return true;
        },
        &cancel_);
    if (cancel_.Cancelled()) return Ok();
    if (events > 0) ResetBackoff();  // the server served this watch: failures start over
    // A watch that delivered or lasted past `short_watch` was served: the next 410 relists at once
    // again (quiet resources see one 410 per compaction, with no event in between).
    if (events > 0 || clock_.Now() - start >= opts_.short_watch) relisted_at_once_ = false;
    if (st) {
      if (events == 0 && clock_.Now() - start < opts_.short_watch) {
        return Fail(ErrorCode::kUnavailable,
                    "very short watch: closed in under " +
                        std::to_string(
                            std::chrono::duration_cast<std::chrono::milliseconds>(opts_.short_watch)
                                .count()) +
                        " ms with no event");
      }
      continue;  // clean close: re-watch from the last RV, no relist
    }
    if (IsResourceVersionUnavailable(st.error())) {
      // As client-go: the next list is a consistent read (RV unset). Listing again at the RV
      // the watch refused can loop: kube-apiserver's watch cache may serve a list at an RV
      // older than the oldest its watch accepts ("too old resource version: 228 (229)").
      MutexLock lock(mu_);
      ++stats_.expired;
      rv_unavailable_ = true;
      expired_ = true;
      log::Info("informer: watch resource version unavailable, relisting",
                {{"resource", opts_.resource.plural}, {"error", st.error().message()}});
      return Ok();  // consistent relist (at once: Run)
    }
    switch (st.error().code()) {
      case ErrorCode::kGone: {
        MutexLock lock(mu_);
        ++stats_.expired;
        rv_unavailable_ = true;
        expired_ = true;
        log::Info("informer: watch expired, relisting",
                  {{"resource", opts_.resource.plural}, {"rv", last_rv_}});
        return Ok();  // consistent relist (at once: Run)
      }
      case ErrorCode::kUnavailable:
        if (events == 0) {
          Duration wait = NextBackoff();
          if (st.error().retry_after() > wait) wait = st.error().retry_after();
          if (cancel_.WaitFor(wait)) return Ok();
        }
        continue;
      default:
        return st;
    }
  }
  return Ok();
}

void Informer::Apply(WatchEvent&& ev) {
  SetLastRv(ev.resource_version);
  if (opts_.transform && ev.object.is_object() &&
      (ev.type == EventType::kAdded || ev.type == EventType::kModified ||
       ev.type == EventType::kDeleted)) {
    opts_.transform(ev.object);
  }
  {
    MutexLock lock(mu_);
    ++stats_.events;
  }
  switch (ev.type) {
    case EventType::kAdded:
    case EventType::kModified: {
      auto old = store_.Upsert(ev.object);
      for (const auto& h : handlers_) {
        if (old) {
          if (h.on_update) h.on_update(*old, ev.object);
        } else if (h.on_add) {
          h.on_add(ev.object);
        }
      }
      break;
    }
    case EventType::kDeleted: {
      auto old = store_.Remove(KeyOf(ev.object).String());
      if (!old) break;  // never known: nothing to tell
      for (const auto& h : handlers_) {
        if (h.on_delete) h.on_delete(ev.object);
      }
      break;
    }
    case EventType::kBookmark:
    case EventType::kError:
      break;
  }
}

void Informer::Replace(std::vector<Json> items) {
  std::map<std::string, Json> next;
  for (auto& item : items) {
    if (opts_.transform && item.is_object()) opts_.transform(item);
    std::string key = KeyOf(item).String();
    next.emplace(std::move(key), std::move(item));
  }
  items.clear();
  items.shrink_to_fit();
  std::map<std::string, Json> prev = store_.ReplaceAll(next);
  for (const auto& [key, old] : prev) {
    if (next.count(key) != 0) continue;
    for (const auto& h : handlers_) {
      if (h.on_delete) h.on_delete(old);
    }
  }
  for (const auto& [key, obj] : next) {
    auto it = prev.find(key);
    if (it == prev.end()) {
      for (const auto& h : handlers_) {
        if (h.on_add) h.on_add(obj);
      }
    } else if (ResourceVersion(it->second) != ResourceVersion(obj)) {
      for (const auto& h : handlers_) {
        if (h.on_update) h.on_update(it->second, obj);
      }
    }
  }
}

}  // namespace pylon::k8s
