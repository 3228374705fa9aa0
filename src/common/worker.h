// One background thread with a stop flag and a wake-up, for the classes that run a loop off their
// caller's thread (the lease keeper, the kube-proxy checker, the API writer, the event recorder,
// the heartbeat service, the allocator's workers...). Each keeps only its own logic: what one
// round does and how long to wait; the thread, the lock, the condition variable, the stop flag
// and the "poked" flag live here.
//
//   Start(body)          the thread runs `body` until it returns; `body` loops on the waits below
//                        (or on Stopping()) and returns once they say stop.
//   StartPeriodic(step)  "every period or when poked": runs `step` at once, then again when the
//                        Duration it returned has passed, or as soon as Wake() is called (a Wake
//                        while `step` runs makes the next round start at once), until Stop().
//   Wake()               the current or next wait returns. Sticky: a Wake is never lost, and
//                        several before a wait count as one.
//   Stop()               sets Stopping(), makes every wait return, runs the waker, joins. What a
//                        class drains before stopping it drains first, then calls Stop().
//
// Deadlines are on the Clock given at construction (the system clock by default). A body that
// blocks on something else than these waits (poll on sockets) sets a waker, which Wake and Stop
// call to interrupt it. With a FakeClock, ClockMoved() after Advance() makes a wait read the
// clock again.
//
// Thread-safe, except Start/Stop, which belong to the owner (and Stop never from the thread
// itself). The destructor stops and joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"

namespace pylon {

class Worker {
 public:
  enum class Woke : std::uint8_t { kStop, kWake, kDeadline };

  explicit Worker(const Clock& clock = SystemClock::Instance()) : clock_(clock) {}
  ~Worker() { Stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts the thread; a no-op while it runs. Clears the stop and any Wake of an earlier run.
  void Start(std::function<void()> body);
  void StartPeriodic(std::function<Duration()> step);
  // Idempotent; joins the thread.
  void Stop();
  void Wake();
  // Called by Wake() and Stop() (not under any lock of the worker's): for a body that blocks in
  // a poll, e.g. a write to the eventfd it polls. Set before Start.
  void SetWaker(std::function<void()> waker) { waker_ = std::move(waker); }
  bool Stopping() const;
  bool Running() const { return thread_.joinable(); }

  // For the body, on the worker thread. Each returns kStop once Stop() was called, else kWake for
  // a Wake since the last wait returned (consuming it), else kDeadline when `deadline` (on the
  // clock) has come.
  Woke WaitUntil(SteadyTime deadline);
  Woke WaitFor(Duration d) { return WaitUntil(clock_.Now() + d); }
  // Until Stop (false) or a Wake (true).
  bool WaitForWake();
  // Until `d` has passed (true) or Stop (false); a Wake meanwhile stays for the next wait.
  bool SleepFor(Duration d);

  // Tests with a FakeClock: after moving it, makes a wait read it again.
  void ClockMoved();
  // How many times a wait has read the clock and found its deadline not come (tests: to know a
  // ClockMoved() was seen before asserting that nothing ran).
  std::uint64_t clock_reads() const;

 private:
  const Clock& clock_;
  std::function<void()> waker_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stop_ PYLON_GUARDED_BY(mu_) = false;
  bool woken_ PYLON_GUARDED_BY(mu_) = false;
  std::uint64_t clock_reads_ PYLON_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace pylon
