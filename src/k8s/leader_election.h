// Lease-based leader election with client-go semantics (tools/leaderelection):
//  - one attempt = GET the Lease (404 → create it holding it) then PUT it with the RV read; any
//    error, including 409, fails the attempt;
//  - a lease held by someone else is expired when (local steady time at which its spec was last
//    seen to change) + leaseDurationSeconds < now. The remote renewTime is never compared with
//    the local clock, so clock skew between nodes does not matter;
//  - acquiring keeps leaseTransitions + 1 on a holder change; renewing keeps acquireTime and
//    leaseTransitions;
//  - Run: try every RetryPeriod (jittered ×1.2) until acquired → OnStartedLeading; then renew
//    every RetryPeriod, retrying a failed renewal until RenewDeadline → OnStoppedLeading; on
//    cancel, release (holderIdentity "", leaseDurationSeconds 1) if configured.
// Callbacks run on the thread calling Run and must return promptly. The HTTP client's request
// timeout should be below RenewDeadline; a renewal that succeeds after the deadline counts as lost.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "k8s/canceller.h"
#include "k8s/client.h"
#include "k8s/lease.h"

namespace pylon::k8s {

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;  // only after on_started_leading
  std::function<void(const std::string& identity)> on_new_leader;
};

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate (pod name)
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  bool release_on_cancel = false;
  LeaderCallbacks callbacks;
};

// lease_duration > renew_deadline > 1.2 × retry_period > 0, whole seconds for the lease duration
// (≥ 1 s), non-empty identity, namespace and name.
Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  static Result<std::unique_ptr<LeaderElector>> Create(
      Client& client, LeaderElectionConfig config, const Clock& clock = SystemClock::Instance());

  // One acquire-or-renew attempt; true when we hold the lease afterwards.
  bool TryAcquireOrRenew();
  // Reports OnNewLeader when the observed holder changed since the last report.
  void MaybeReportTransition();
  // Gives the lease up if we hold it (holderIdentity "", leaseDurationSeconds 1).
  bool Release();
  // Blocks until `cancel` fires or leadership is lost (see the header comment).
  void Run(Canceller& cancel);

  bool IsLeader() const;
  std::string GetLeader() const;

 private:
  LeaderElector(Client& client, LeaderElectionConfig config, const Clock& clock);
  bool IsLeaderLocked() const PYLON_REQUIRES(mu_) {
    return observed_.holder_identity == config_.identity;
  }
  // After our create or update of the lease: a failure is logged (not leading); on success what
  // was written is what is observed now.
  bool Wrote(const Result<Json>& written, std::string_view what, const std::string& desc,
             const LeaseSpec& desired, SteadyTime now);

  Client& client_;
  const LeaderElectionConfig config_;
  const Clock& clock_;
  std::mt19937_64 rng_;

  mutable Mutex mu_;
  bool have_observed_ PYLON_GUARDED_BY(mu_) = false;
  LeaseSpec observed_ PYLON_GUARDED_BY(mu_);
  SteadyTime observed_time_ PYLON_GUARDED_BY(mu_){};
  std::string reported_leader_ PYLON_GUARDED_BY(mu_);
  bool reported_any_ PYLON_GUARDED_BY(mu_) = false;
};

}  // namespace pylon::k8s
