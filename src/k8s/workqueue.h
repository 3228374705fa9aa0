// A controller work queue with client-go semantics (util/workqueue):
//  - a key queued several times is handed out once (dedup of queued keys);
//  - a key being processed (between Get and Done) is never handed to a second worker; re-added
//    while processing, it is queued again when Done is called;
//  - AddAfter delays a key (an earlier deadline for an already waiting key wins);
//  - AddRateLimited delays by the key's own exponential backoff: base·2^failures capped at max
//    (5 ms doubling to 1000 s by default); Forget resets the key's failure count;
//  - ShutDown: further adds are ignored, workers drain what is queued, then Get returns nullopt.
// Thread-safe. Time comes from the injected clock; TryGet never blocks, for fake-clock tests.
// Keys are any ordered, copyable type (BasicWorkQueue<Key>): a controller names its work with a
// type of its own (the allocator's WorkItem) instead of prefixed strings parsed back.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"

namespace pylon::k8s {

struct RateLimitOptions {
  Duration base = std::chrono::milliseconds(5);
  Duration max = std::chrono::seconds(1000);
};

// The delay of a key's next AddRateLimited after `failures` earlier ones: base x 2^failures,
// capped at max.
Duration RateLimitDelay(const RateLimitOptions& rl, int failures);

template <typename Key>
class BasicWorkQueue {
 public:
  explicit BasicWorkQueue(const Clock& clock = SystemClock::Instance(), RateLimitOptions rl = {})
      : clock_(clock), rl_(rl) {}

  void Add(const Key& key) {
    MutexLock lock(mu_);
    AddLocked(key);
  }
  void AddAfter(const Key& key, Duration delay) {
    MutexLock lock(mu_);
    if (shutting_down_) return;
    if (delay <= Duration::zero()) {
      AddLocked(key);
      return;
    }
    const SteadyTime ready = clock_.Now() + delay;
    auto it = waiting_.find(key);
    if (it == waiting_.end()) {
      waiting_.emplace(key, ready);
    } else if (ready < it->second) {
      it->second = ready;
    }
    cv_.notify_all();  // a sleeping Get may need to wake earlier
  }
  void AddRateLimited(const Key& key) { AddAfter(key, When(key)); }
  // The delay AddRateLimited would use next, advancing the key's failure count.
  Duration When(const Key& key) {
    int failures;
    {
      MutexLock lock(mu_);
      failures = failures_[key]++;
    }
    return RateLimitDelay(rl_, failures);
  }
  void Forget(const Key& key) {
    MutexLock lock(mu_);
    failures_.erase(key);
  }
  int NumRequeues(const Key& key) const {
    MutexLock lock(mu_);
    auto it = failures_.find(key);
    return it == failures_.end() ? 0 : it->second;
  }

  // Blocks until a key is ready or the queue is shut down and drained (then nullopt).
  std::optional<Key> Get() {
    MutexLock lock(mu_);
    while (true) {
      PromoteLocked(clock_.Now());
      if (!queue_.empty()) return PopLocked();
      if (shutting_down_) return std::nullopt;
      if (waiting_.empty()) {
        lock.Wait(cv_);
      } else {
        SteadyTime next = SteadyTime::max();
        for (const auto& [k, t] : waiting_) next = std::min(next, t);
        // Sleep until the earliest deadline by the injected clock; capped so a fake clock that
        // is advanced without notification is still noticed.
        const Duration d = std::clamp<Duration>(next - clock_.Now(), Duration::zero(),
                                                std::chrono::milliseconds(50));
        lock.WaitFor(cv_, d);
      }
    }
  }
  // Non-blocking: a ready key (delayed keys whose time has come are promoted first) or nullopt.
  std::optional<Key> TryGet() {
    MutexLock lock(mu_);
    PromoteLocked(clock_.Now());
    return PopLocked();
  }
  void Done(const Key& key) {
    MutexLock lock(mu_);
    processing_.erase(key);
    if (dirty_.count(key) != 0) {
      queue_.push_back(key);
      cv_.notify_one();
    } else if (processing_.empty()) {
      cv_.notify_all();
    }
  }

  void ShutDown() {
    MutexLock lock(mu_);
    shutting_down_ = true;
    waiting_.clear();
    cv_.notify_all();
  }
  bool ShuttingDown() const {
    MutexLock lock(mu_);
    return shutting_down_;
  }
  // Keys ready to be handed out (not counting delayed or in-process ones).
  size_t Len() const {
    MutexLock lock(mu_);
    return queue_.size();
  }
  size_t WaitingLen() const {
    MutexLock lock(mu_);
    return waiting_.size();
  }

 private:
  void AddLocked(const Key& key) PYLON_REQUIRES(mu_) {
    if (shutting_down_) return;
    if (dirty_.count(key) != 0) return;
    dirty_.insert(key);
    if (processing_.count(key) != 0) return;  // requeued by Done
    queue_.push_back(key);
    cv_.notify_one();
  }
  void PromoteLocked(SteadyTime now) PYLON_REQUIRES(mu_) {
    // Promote in deadline order so that equal deadlines keep a stable, predictable order.
    std::vector<std::pair<SteadyTime, Key>> ready;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second <= now) {
        ready.emplace_back(it->second, it->first);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    std::sort(ready.begin(), ready.end());
    for (auto& [t, key] : ready) AddLocked(key);
  }
  std::optional<Key> PopLocked() PYLON_REQUIRES(mu_) {
    if (queue_.empty()) return std::nullopt;
    Key key = std::move(queue_.front());
    queue_.pop_front();
    processing_.insert(key);
    dirty_.erase(key);
    return key;
  }

  const Clock& clock_;
  const RateLimitOptions rl_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Key> queue_ PYLON_GUARDED_BY(mu_);
  std::set<Key> dirty_ PYLON_GUARDED_BY(mu_);       // queued or re-added while processing
  std::set<Key> processing_ PYLON_GUARDED_BY(mu_);  // handed out, not yet Done
  // Delayed keys and when they become ready.
  std::map<Key, SteadyTime> waiting_ PYLON_GUARDED_BY(mu_);
  std::map<Key, int> failures_ PYLON_GUARDED_BY(mu_);
  bool shutting_down_ PYLON_GUARDED_BY(mu_) = false;
};

using WorkQueue = BasicWorkQueue<std::string>;

}  // namespace pylon::k8s
