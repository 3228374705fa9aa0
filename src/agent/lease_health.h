// Node-lease timing and this node's own health, judged on the local steady clock.
//  - The keeper renews every retry_period (loud; a quiet lease renews less often and writes a
//    longer duration: lease_pacing.h).
//  - Healthy while the last successful renewal is younger than the renew deadline that goes with
//    the duration it wrote (renew_deadline, or the quiet one). When renewals keep failing for that
//    long the node stops announcing local addresses; peers take them over once they see its lease
//    expire (the written duration after its last renewal, on their clocks). deadline < duration
//    makes this node withdraw before anyone else takes over, also across a quiet -> loud switch
//    whose first renewal fails (the quiet lease is still what peers see).
//  - Before the first successful renewal the node is not healthy.
// Pure; not thread-safe (the keeper owns it and publishes Healthy()).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/env.h"
#include "common/result.h"

namespace pylon::agent {

struct LeaseTiming {
  Duration lease_duration = std::chrono::seconds(10);  // PURELB_LEASE_DURATION
  Duration renew_deadline = std::chrono::seconds(7);   // PURELB_RENEW_DEADLINE
  Duration retry_period = std::chrono::seconds(2);     // PURELB_RETRY_PERIOD
};

// All positive, retry_period < renew_deadline < lease_duration, lease_duration whole seconds
// (leaseDurationSeconds is an integer), at least 1 s.
Status ValidateLeaseTiming(const LeaseTiming& t);

// Reads PURELB_LEASE_DURATION / PURELB_RENEW_DEADLINE / PURELB_RETRY_PERIOD (Go durations) over
// the defaults; an unparsable or inconsistent value is an error naming the variable.
Result<LeaseTiming> LeaseTimingFromEnv(const EnvLookup& env);

class LeaseHealth {
 public:
  explicit LeaseHealth(LeaseTiming timing) : timing_(timing) {}

  // A renewal that wrote timing().lease_duration.
  void RenewSucceeded(SteadyTime at) { RenewSucceeded(at, timing_.renew_deadline); }
  // A renewal that wrote a duration whose deadline is `deadline` (LeasePace::renew_deadline).
  void RenewSucceeded(SteadyTime at, Duration deadline) { healthy_until_ = at + deadline; }
  void RenewFailed(SteadyTime at) { last_failure_ = at; }
  bool Healthy(SteadyTime now) const { return healthy_until_ && now < *healthy_until_; }
  // When Healthy() turns false if no renewal succeeds before then; nullopt before the first
  // successful renewal.
  std::optional<SteadyTime> HealthyUntil() const { return healthy_until_; }
  const LeaseTiming& timing() const { return timing_; }

 private:
  LeaseTiming timing_;
  std::optional<SteadyTime> healthy_until_;  // last successful renewal + its deadline
  std::optional<SteadyTime> last_failure_;
};

}  // namespace pylon::agent
