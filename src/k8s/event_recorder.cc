#include "k8s/event_recorder.h"

#include <cstdio>

#include "common/log.h"
#include "common/object_key.h"
#include "common/time.h"

namespace pylon::k8s {

ObjectReference ObjectReference::For(const Resource& res, const Json& object) {
  return ObjectReference{res.kind, Namespace(object), Name(object), Uid(object), res.ApiVersion()};
}

Result<ObjectReference> ObjectReference::FromObject(const Json& object) {
  auto kind = FindString(object, {"kind"});
  auto api = FindString(object, {"apiVersion"});
  if (!kind || !api || Name(object).empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "object reference: object needs kind, apiVersion and metadata.name");
  }
  return ObjectReference{*kind, Namespace(object), Name(object), Uid(object), *api};
}

Json MakeEvent(const ObjectReference& ref, EventLevel level, std::string_view reason,
               std::string_view message, const EventRecorderOptions& opts, WallTime now,
               int64_t unique_nanos) {
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".%llx", static_cast<unsigned long long>(unique_nanos));
  std::string ns = ref.ns.empty() ? "default" : ref.ns;
  Json involved = {{"kind", ref.kind}, {"name", ref.name}, {"apiVersion", ref.api_version}};
  if (!ref.ns.empty()) involved["namespace"] = ref.ns;
  if (!ref.uid.empty()) involved["uid"] = ref.uid;
  Json source = {{"component", opts.component}};
  if (!opts.host.empty()) source["host"] = opts.host;
  std::string ts = FormatTime(now);
  Json e = {{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata", {{"name", ref.name + suffix}, {"namespace", ns}}},
            {"involvedObject", involved},
            {"reason", std::string(reason)},
            {"message", std::string(message)},
            {"type", level == EventLevel::kWarning ? "Warning" : "Normal"},
            {"source", source},
            {"firstTimestamp", ts},
            {"lastTimestamp", ts},
            {"count", 1},
            {"reportingComponent", opts.component},
            {"reportingInstance", opts.host}};
  return e;
}

EventRecorderImpl::EventRecorderImpl(Client& client, EventRecorderOptions opts, const Clock& clock)
    : client_(client),
      opts_(std::move(opts)),
      clock_(clock),
      correlator_(opts_.correlator, clock) {}

EventRecorderImpl::~EventRecorderImpl() { Stop(Duration::zero()); }

void EventRecorderImpl::Event(const ObjectReference& object, EventLevel level,
                              std::string_view reason, std::string_view message) {
  WallTime now = clock_.WallNow();
  MutexLock lock(mu_);
  if (worker_.Stopping()) return;
  if (queue_.size() >= opts_.queue_capacity) {
    ++dropped_;
    log::Warn(
        "event dropped: recorder queue full",
        {{"object", ObjectKey{object.ns, object.name}.String()}, {"reason", std::string(reason)}});
    return;
  }
  int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  nanos = std::max(nanos, last_nanos_ + 1);  // unique names even on a coarse or fake clock
  last_nanos_ = nanos;
  queue_.push_back(Pending{object, level, std::string(reason), std::string(message), now, nanos});
  worker_.Wake();
}

void EventRecorderImpl::Start() {
  worker_.Start([this] { Run(); });
}

void EventRecorderImpl::Stop(Duration drain) {
  {
    MutexLock lock(mu_);
    if (worker_.Running()) {
      auto deadline = std::chrono::steady_clock::now() + drain;
      while (!queue_.empty() || busy_) {
        if (lock.WaitUntil(idle_cv_, deadline) == std::cv_status::timeout) break;
      }
    }
  }
  worker_.Stop();  // also ends a retry's wait
}

void EventRecorderImpl::Run() {
  do {
    while (auto next = TakeNext()) {
      Write(MakeEvent(next->object, next->level, next->reason, next->message, opts_, next->time,
                      next->unique_nanos));
      MutexLock lock(mu_);
      busy_ = false;
      idle_cv_.notify_all();
    }
  } while (worker_.WaitForWake());  // an Event since the queue was seen empty
}

std::optional<EventRecorderImpl::Pending> EventRecorderImpl::TakeNext() {
  MutexLock lock(mu_);
  if (worker_.Stopping() || queue_.empty()) return std::nullopt;
  Pending next = std::move(queue_.front());
  queue_.pop_front();
  busy_ = true;
  return next;
}

void EventRecorderImpl::Write(Json event) {
  EventCorrelator::Decision d = correlator_.Correlate(std::move(event));
  if (d.action == EventCorrelator::Action::kSkip) {
    MutexLock lock(mu_);
    ++skipped_;
    return;
  }
  const std::string ns = Namespace(d.event);
  const std::string name = Name(d.event);
  for (int attempt = 1; attempt <= opts_.max_tries; ++attempt) {
    Result<Json> reply = Fail(ErrorCode::kInternal, "not sent");
    bool create = d.action == EventCorrelator::Action::kCreate;
    if (!create) {
      reply = client_.Patch(resources::Events(), ns, name, PatchType::kStrategicMerge, d.patch);
      if (!reply && reply.error().code() == ErrorCode::kNotFound) create = true;  // expired
    }
    if (create) {
      Json fresh = d.event;
      if (fresh.contains("metadata")) fresh["metadata"].erase("resourceVersion");
      reply = client_.Create(resources::Events(), fresh);
    }
    if (reply) {
      correlator_.UpdateState(*reply);
      MutexLock lock(mu_);
      ++written_;
      return;
    }
    if (reply.error().code() != ErrorCode::kUnavailable) {
      log::Warn("event not recorded",
                {{"event", ObjectKey{ns, name}.String()}, {"error", reply.error().message()}});
      return;
    }
    if (attempt == opts_.max_tries) {
      log::Warn("event not recorded after retries",
                {{"event", ObjectKey{ns, name}.String()}, {"error", reply.error().message()}});
      return;
    }
    if (!worker_.SleepFor(opts_.retry_interval)) return;  // stopped
  }
}

int64_t EventRecorderImpl::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}
int64_t EventRecorderImpl::written() const {
  MutexLock lock(mu_);
  return written_;
}
int64_t EventRecorderImpl::skipped() const {
  MutexLock lock(mu_);
  return skipped_;
}

}  // namespace pylon::k8s
