// A controller work queue with client-go semantics (util/workqueue):
//  - a key queued several times is handed out once (dedup of queued keys);
//  - a key being processed (between Get and Done) is never handed to a second worker; re-added
//    while processing, it is queued again when Done is called;
//  - AddAfter delays a key (an earlier deadline for an already waiting key wins);
//  - AddRateLimited delays by the key's own exponential backoff: base·2^failures capped at max
//    (5 ms doubling to 1000 s by default); Forget resets the key's failure count;
//  - ShutDown: further adds are ignored, workers drain what is queued, then Get returns nullopt.
// Thread-safe. Time comes from the injected clock; TryGet never blocks, for fake-clock tests.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"

namespace pylon::k8s {

struct RateLimitOptions {
  Duration base = std::chrono::milliseconds(5);
  Duration max = std::chrono::seconds(1000);
};

class WorkQueue {
 public:
  explicit WorkQueue(const Clock& clock = SystemClock::Instance(), RateLimitOptions rl = {});

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  void AddRateLimited(const std::string& key);
  // The delay AddRateLimited would use next, advancing the key's failure count.
  Duration When(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready or the queue is shut down and drained (then nullopt).
  std::optional<std::string> Get();
  // Non-blocking: a ready key (delayed keys whose time has come are promoted first) or nullopt.
  std::optional<std::string> TryGet();
  void Done(const std::string& key);

  void ShutDown();
  bool ShuttingDown() const;
  // Keys ready to be handed out (not counting delayed or in-process ones).
  size_t Len() const;
  size_t WaitingLen() const;

 private:
  void AddLocked(const std::string& key) PYLON_REQUIRES(mu_);
  void PromoteLocked(SteadyTime now) PYLON_REQUIRES(mu_);
  std::optional<std::string> PopLocked() PYLON_REQUIRES(mu_);

  const Clock& clock_;
  const RateLimitOptions rl_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_ PYLON_GUARDED_BY(mu_);
  std::set<std::string> dirty_ PYLON_GUARDED_BY(mu_);       // queued or re-added while processing
  std::set<std::string> processing_ PYLON_GUARDED_BY(mu_);  // handed out, not yet Done
  // Delayed keys and when they become ready.
  std::map<std::string, SteadyTime> waiting_ PYLON_GUARDED_BY(mu_);
  std::map<std::string, int> failures_ PYLON_GUARDED_BY(mu_);
  bool shutting_down_ PYLON_GUARDED_BY(mu_) = false;
};

}  // namespace pylon::k8s
