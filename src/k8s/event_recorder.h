// Records core/v1 Events about objects so they show in `kubectl describe`. Event() never blocks
// the caller: events go to a bounded queue (dropped with a log line when full) and a worker thread
// correlates them (see event_correlator.h) and creates or PATCHes them, retrying transient
// failures a bounded number of times.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/worker.h"
#include "k8s/client.h"
#include "k8s/event_correlator.h"

namespace pylon::k8s {

struct ObjectReference {
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
  std::string api_version;

  // From an object of `res` (list items carry no kind/apiVersion, so they come from `res`).
  static ObjectReference For(const Resource& res, const Json& object);
  // From an object that carries kind and apiVersion itself.
  static Result<ObjectReference> FromObject(const Json& object);
};

enum class EventLevel { kNormal, kWarning };

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  // Thread-safe and non-blocking.
  virtual void Event(const ObjectReference& object, EventLevel level, std::string_view reason,
                     std::string_view message) = 0;
};

struct EventRecorderOptions {
  std::string component;  // source.component and reportingComponent, e.g. "pylon-allocator"
  std::string host;       // source.host and reportingInstance (node name); optional
  size_t queue_capacity = 1000;
  int max_tries = 12;  // per event, for transient (kUnavailable) failures
  Duration retry_interval = std::chrono::seconds(10);
  CorrelatorOptions correlator;
};

// Builds the Event object for a first occurrence (count 1). Namespace: the object's, or "default"
// for cluster-scoped objects. `unique_nanos` makes the name "<object>.<hex>". Pure.
Json MakeEvent(const ObjectReference& object, EventLevel level, std::string_view reason,
               std::string_view message, const EventRecorderOptions& opts, WallTime now,
               int64_t unique_nanos);

class EventRecorderImpl final : public EventRecorder {
 public:
  EventRecorderImpl(Client& client, EventRecorderOptions opts,
                    const Clock& clock = SystemClock::Instance());
  ~EventRecorderImpl() override;  // Stop()

  void Event(const ObjectReference& object, EventLevel level, std::string_view reason,
             std::string_view message) override;

  void Start();
  // Gives queued events up to `drain` (real time) to be written, then stops the worker.
  void Stop(Duration drain = std::chrono::seconds(2));

  int64_t dropped() const;  // queue full
  int64_t written() const;  // created or patched
  int64_t skipped() const;  // spam-filtered

 private:
  // An event as queued: the Event object is built by the worker (a JSON tree is ~10x larger).
  struct Pending {
    ObjectReference object;
    EventLevel level = EventLevel::kNormal;
    std::string reason;
    std::string message;
    WallTime time;
    int64_t unique_nanos = 0;
  };

  // The worker: writes what is queued, then waits for the next Event.
  void Run();
  // Pops the next event, marking the recorder busy; nullopt once empty or stopping.
  std::optional<Pending> TakeNext();
  void Write(Json event);

  Client& client_;
  const EventRecorderOptions opts_;
  const Clock& clock_;
  EventCorrelator correlator_;  // worker thread only

  mutable Mutex mu_;
  std::condition_variable idle_cv_;  // an event written (Stop's drain waits on it)
  std::deque<Pending> queue_ PYLON_GUARDED_BY(mu_);
  int64_t last_nanos_ PYLON_GUARDED_BY(mu_) = 0;
  int64_t dropped_ PYLON_GUARDED_BY(mu_) = 0;
  int64_t written_ PYLON_GUARDED_BY(mu_) = 0;
  int64_t skipped_ PYLON_GUARDED_BY(mu_) = 0;
  bool busy_ PYLON_GUARDED_BY(mu_) = false;
  // Run: serves the queue, woken by Event; retries wait in real time (last: stops first).
  Worker worker_;
};

}  // namespace pylon::k8s
