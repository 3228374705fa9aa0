// A one-shot cancellation signal shared between a controller and its blocking calls (watches,
// backoff waits). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>

#include "common/clock.h"
#include "common/mutex.h"

namespace pylon::k8s {

class Canceller {
 public:
  // Idempotent. Wakes WaitFor callers and runs every registered waker (under the internal lock, so
  // a waker is never running after RemoveWaker returns).
  void Cancel();
  bool Cancelled() const;
  // Sleeps up to `d` of real time; returns true if cancelled.
  bool WaitFor(Duration d);
  // Registers `fn` to run on Cancel (at once if already cancelled). Returns an id for RemoveWaker.
  uint64_t AddWaker(std::function<void()> fn);
  void RemoveWaker(uint64_t id);

 private:
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ PYLON_GUARDED_BY(mu_) = false;
  uint64_t next_id_ PYLON_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::function<void()>> wakers_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon::k8s
