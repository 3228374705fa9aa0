// Exponential backoff with jitter and a reset after a healthy period, as client-go's
// ExponentialBackoffManager used by the reflector: initial 800 ms, factor 2, cap 30 s, jitter 1.0
// (each wait is d + rand[0,1)·jitter·d), reset to the initial value when more than 2 minutes passed
// since the previous backoff started. Not thread-safe; the clock is injected.
#pragma once

#include <random>

#include "common/clock.h"

namespace pylon::k8s {

struct BackoffOptions {
  Duration initial = std::chrono::milliseconds(800);
  Duration cap = std::chrono::seconds(30);
  Duration reset_after = std::chrono::minutes(2);
  double factor = 2.0;
  double jitter = 1.0;
};

class Backoff {
 public:
  Backoff(BackoffOptions opts, const Clock& clock, uint64_t seed = std::random_device{}());
  // The next wait; advances the exponent.
  Duration Next();
  // Back to the initial wait (the peer proved healthy).
  void Reset();
  // Un-jittered base of the next wait (for tests and logs).
  Duration current() const { return current_; }

 private:
  BackoffOptions opts_;
  const Clock& clock_;
  std::mt19937_64 rng_;
  Duration current_;
  bool started_ = false;
  SteadyTime last_start_{};
};

}  // namespace pylon::k8s
