#include "common/worker.h"

#include <utility>

namespace pylon {

void Worker::Start(std::function<void()> body) {
  if (thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stop_ = false;
    woken_ = false;
  }
  thread_ = std::thread(std::move(body));
}

void Worker::StartPeriodic(std::function<Duration()> step) {
  Start([this, step = std::move(step)] {
    while (true) {
      {
        MutexLock lock(mu_);
        if (stop_) return;
        woken_ = false;  // what a Wake asked for, this round does
      }
      const Duration wait = step();
      if (WaitUntil(clock_.Now() + wait) == Woke::kStop) return;
    }
  });
}

void Worker::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (waker_) waker_();
  if (thread_.joinable()) thread_.join();
}

void Worker::Wake() {
  {
    MutexLock lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
  if (waker_) waker_();
}

bool Worker::Stopping() const {
  MutexLock lock(mu_);
  return stop_;
}

Worker::Woke Worker::WaitUntil(SteadyTime deadline) {
  MutexLock lock(mu_);
  while (true) {
    if (stop_) return Woke::kStop;
    if (woken_) {
      woken_ = false;
      return Woke::kWake;
    }
    const SteadyTime now = clock_.Now();
    if (now >= deadline) return Woke::kDeadline;
    ++clock_reads_;
    lock.WaitFor(cv_, deadline - now);
  }
}

bool Worker::WaitForWake() {
  MutexLock lock(mu_);
  while (!stop_ && !woken_) lock.Wait(cv_);
  if (stop_) return false;
  woken_ = false;
  return true;
}

bool Worker::SleepFor(Duration d) {
  MutexLock lock(mu_);
  const SteadyTime deadline = clock_.Now() + d;
  while (!stop_) {
    const SteadyTime now = clock_.Now();
    if (now >= deadline) return true;
    ++clock_reads_;
    lock.WaitFor(cv_, deadline - now);
  }
  return false;
}

void Worker::ClockMoved() {
  { MutexLock lock(mu_); }
  cv_.notify_all();
}

std::uint64_t Worker::clock_reads() const {
  MutexLock lock(mu_);
  return clock_reads_;
}

}  // namespace pylon
