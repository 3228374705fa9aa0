// A fixed set of worker threads that run jobs off the caller's thread (the agent's probes and
// wire checks): Submit queues a job; a free worker runs `run(job)` outside the lock, keeps its
// result for Take and then calls `on_done` (if any, also outside the lock: it typically wakes the
// caller's loop). The destructor stops the workers: queued jobs that no worker started are
// dropped, running ones finish first. Thread-safe; the lock is a checked pylon::Mutex.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace pylon {

template <typename Job, typename Out>
class JobPool {
 public:
  using RunFn = std::function<Out(const Job&)>;

  JobPool(RunFn run, std::function<void()> on_done, int workers)
      : run_(std::move(run)), on_done_(std::move(on_done)) {
    for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { Work(); });
  }
  ~JobPool() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  JobPool(const JobPool&) = delete;
  JobPool& operator=(const JobPool&) = delete;

  void Submit(Job job) {
    {
      MutexLock lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  // The results of the jobs finished since the last Take, in the order they finished.
  std::vector<Out> Take() {
    MutexLock lock(mu_);
    std::vector<Out> out;
    out.swap(results_);
    return out;
  }

 private:
  void Work() {
    MutexLock lock(mu_);
    while (true) {
      while (!stop_ && jobs_.empty()) lock.Wait(cv_);
      if (stop_) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.Unlock();
      Out out = run_(job);
      lock.Lock();
      results_.push_back(std::move(out));
      if (on_done_) {
        lock.Unlock();
        on_done_();
        lock.Lock();
      }
    }
  }

  const RunFn run_;
  const std::function<void()> on_done_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_ PYLON_GUARDED_BY(mu_);
  std::vector<Out> results_ PYLON_GUARDED_BY(mu_);
  bool stop_ PYLON_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace pylon
