#include "k8s/canceller.h"

namespace pylon::k8s {

void Canceller::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  cv_.notify_all();
  for (auto& [id, fn] : wakers_) fn();
}

bool Canceller::Cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool Canceller::WaitFor(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return cancelled_; });
  return cancelled_;
}

uint64_t Canceller::AddWaker(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) fn();
  uint64_t id = next_id_++;
  wakers_.emplace(id, std::move(fn));
  return id;
}

void Canceller::RemoveWaker(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  wakers_.erase(id);
}

}  // namespace pylon::k8s
