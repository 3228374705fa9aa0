// Time is injected everywhere a timeout or lease is judged, so tests never sleep on a wall clock.
// Steady time (monotonic) decides expiry; wall time is only for what is written out (timestamps).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

#include "common/mutex.h"

namespace pylon {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

// The earlier of two times, either of which may be absent (nullopt: nothing due): how a set of
// timers makes its next wake-up, `next = Earliest(next, t)`.
inline std::optional<SteadyTime> Earliest(std::optional<SteadyTime> a,
                                          std::optional<SteadyTime> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime Now() const = 0;
  virtual WallTime WallNow() const = 0;
};

class SystemClock final : public Clock {
 public:
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  static SystemClock& Instance() {
    static SystemClock clock;
    return clock;
  }
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  FakeClock() : steady_(std::chrono::hours(1)), wall_(std::chrono::hours(24 * 365 * 50)) {}
  SteadyTime Now() const override {
    MutexLock lock(mu_);
    return steady_;
  }
  WallTime WallNow() const override {
    MutexLock lock(mu_);
    return wall_;
  }
  void Advance(Duration d) {
    MutexLock lock(mu_);
    steady_ += d;
    wall_ += std::chrono::duration_cast<WallTime::duration>(d);
  }

 private:
  mutable Mutex mu_;
  SteadyTime steady_ PYLON_GUARDED_BY(mu_);
  WallTime wall_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon
