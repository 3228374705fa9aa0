#include "k8s/backoff.h"

#include <algorithm>

namespace pylon::k8s {

Backoff::Backoff(BackoffOptions opts, const Clock& clock, uint64_t seed)
    : opts_(opts), clock_(clock), rng_(seed), current_(opts.initial) {}

Duration Backoff::Next() {
  SteadyTime now = clock_.Now();
  if (started_ && now - last_start_ > opts_.reset_after) current_ = opts_.initial;
  started_ = true;
  last_start_ = now;
  Duration base = current_;
  auto next = std::chrono::duration_cast<Duration>(current_ * opts_.factor);
  current_ = std::min(next, opts_.cap);
  if (opts_.jitter <= 0) return base;
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  return base + std::chrono::duration_cast<Duration>(base * (dist(rng_) * opts_.jitter));
}

void Backoff::Reset() {
  current_ = opts_.initial;
  started_ = false;
}

}  // namespace pylon::k8s
