#include "k8s/workqueue.h"

#include <algorithm>
#include <vector>

namespace pylon::k8s {

WorkQueue::WorkQueue(const Clock& clock, RateLimitOptions rl) : clock_(clock), rl_(rl) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return;
  if (dirty_.count(key) != 0) return;
  dirty_.insert(key);
  if (processing_.count(key) != 0) return;  // requeued by Done
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  MutexLock lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  MutexLock lock(mu_);
  if (shutting_down_) return;
  if (delay <= Duration::zero()) {
    AddLocked(key);
    return;
  }
  SteadyTime ready = clock_.Now() + delay;
  auto it = waiting_.find(key);
  if (it == waiting_.end()) {
    waiting_.emplace(key, ready);
  } else if (ready < it->second) {
    it->second = ready;
  }
  cv_.notify_all();  // a sleeping Get may need to wake earlier
}

Duration WorkQueue::When(const std::string& key) {
  int exp;
  {
    MutexLock lock(mu_);
    exp = failures_[key]++;
  }
  if (exp >= 62) return rl_.max;
  double factor = static_cast<double>(uint64_t{1} << std::min(exp, 62));
  auto d = std::chrono::duration<double, std::nano>(rl_.base) * factor;
  if (d >= std::chrono::duration<double, std::nano>(rl_.max)) return rl_.max;
  return std::chrono::duration_cast<Duration>(d);
}

void WorkQueue::AddRateLimited(const std::string& key) { AddAfter(key, When(key)); }

void WorkQueue::Forget(const std::string& key) {
  MutexLock lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteLocked(SteadyTime now) {
  // Promote in deadline order so that equal keys keep a stable, predictable order.
  std::vector<std::pair<SteadyTime, std::string>> ready;
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

std::optional<std::string> WorkQueue::PopLocked() {
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

std::optional<std::string> WorkQueue::TryGet() {
  MutexLock lock(mu_);
  PromoteLocked(clock_.Now());
  return PopLocked();
}

std::optional<std::string> WorkQueue::Get() {
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
      // Sleep until the earliest deadline by the injected clock; capped so a fake clock that is
      // advanced without notification is still noticed.
      Duration d = std::clamp<Duration>(next - clock_.Now(), Duration::zero(),
                                        std::chrono::milliseconds(50));
      lock.WaitFor(cv_, d);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  MutexLock lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    cv_.notify_one();
  } else if (processing_.empty()) {
    cv_.notify_all();
  }
}

void WorkQueue::ShutDown() {
  MutexLock lock(mu_);
  shutting_down_ = true;
  waiting_.clear();
  cv_.notify_all();
}

bool WorkQueue::ShuttingDown() const {
  MutexLock lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  MutexLock lock(mu_);
  return queue_.size();
}

size_t WorkQueue::WaitingLen() const {
  MutexLock lock(mu_);
  return waiting_.size();
}

}  // namespace pylon::k8s
