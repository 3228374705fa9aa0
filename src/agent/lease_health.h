// Node-lease timing and this node's own health, judged on the local steady clock.
//  - The keeper renews every retry_period.
//  - Healthy while the last successful renewal is younger than renew_deadline. When renewals keep
//    failing for renew_deadline the node stops announcing local addresses; peers take them over
//    once they see its lease expire (lease_duration after its last renewal, on their clocks).
//    renew_deadline < lease_duration makes this node withdraw before anyone else takes over.
//  - Before the first successful renewal the node is not healthy.
// Pure; not thread-safe (the keeper owns it and publishes Healthy()).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
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
Result<LeaseTiming> LeaseTimingFromEnv(
    const std::function<std::optional<std::string>(const std::string&)>& env);

class LeaseHealth {
 public:
  explicit LeaseHealth(LeaseTiming timing) : timing_(timing) {}

  void RenewSucceeded(SteadyTime at) { last_success_ = at; }
  void RenewFailed(SteadyTime at) { last_failure_ = at; }
  bool Healthy(SteadyTime now) const {
    return last_success_ && now < *last_success_ + timing_.renew_deadline;
  }
  // When Healthy() turns false if no renewal succeeds before then; nullopt when not healthy.
  std::optional<SteadyTime> HealthyUntil() const {
    if (!last_success_) return std::nullopt;
    return *last_success_ + timing_.renew_deadline;
  }
  const LeaseTiming& timing() const { return timing_; }

 private:
  LeaseTiming timing_;
  std::optional<SteadyTime> last_success_;
  std::optional<SteadyTime> last_failure_;
};

}  // namespace pylon::agent
