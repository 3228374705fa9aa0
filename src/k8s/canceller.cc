#include "k8s/canceller.h"

namespace pylon::k8s {

void Canceller::Cancel() {
  MutexLock lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  cv_.notify_all();
  for (auto& [id, fn] : wakers_) fn();
}

bool Canceller::Cancelled() const {
  MutexLock lock(mu_);
  return cancelled_;
}

bool Canceller::WaitFor(Duration d) {
  MutexLock lock(mu_);
  auto deadline = std::chrono::steady_clock::now() + d;
  while (!cancelled_) {
    if (lock.WaitUntil(cv_, deadline) == std::cv_status::timeout) break;
  }
  return cancelled_;
}

uint64_t Canceller::AddWaker(std::function<void()> fn) {
  MutexLock lock(mu_);
  if (cancelled_) fn();
  uint64_t id = next_id_++;
  wakers_.emplace(id, std::move(fn));
  return id;
}

void Canceller::RemoveWaker(uint64_t id) {
  MutexLock lock(mu_);
  wakers_.erase(id);
}

}  // namespace pylon::k8s
