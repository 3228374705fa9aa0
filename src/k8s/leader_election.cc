#include "k8s/leader_election.h"

#include "common/log.h"
#include "common/object_key.h"

namespace pylon::k8s {
namespace {

WallTime TruncateToMicros(WallTime t) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch())));
}

}  // namespace

Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.identity.empty() || c.lease_name.empty() || c.lease_namespace.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "leader election: identity, lease name and namespace are required");
  }
  if (c.retry_period <= Duration::zero()) {
    return Fail(ErrorCode::kInvalidArgument, "leader election: retry period must be positive");
  }
  if (c.lease_duration < std::chrono::seconds(1)) {
    return Fail(ErrorCode::kInvalidArgument, "leader election: lease duration must be >= 1 s");
  }
  if (c.lease_duration <= c.renew_deadline) {
    return Fail(ErrorCode::kInvalidArgument,
                "leader election: lease duration must be greater than the renew deadline");
  }
  if (c.renew_deadline <= std::chrono::duration_cast<Duration>(c.retry_period * 1.2)) {
    return Fail(ErrorCode::kInvalidArgument,
                "leader election: renew deadline must be greater than 1.2 x retry period");
  }
  return Ok();
}

Result<std::unique_ptr<LeaderElector>> LeaderElector::Create(Client& client,
                                                             LeaderElectionConfig config,
                                                             const Clock& clock) {
  if (auto s = ValidateLeaderElectionConfig(config); !s) return Fail(s.error());
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(config), clock));
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig config, const Clock& clock)
    : client_(client), config_(std::move(config)), clock_(clock), rng_(std::random_device{}()) {}

bool LeaderElector::IsLeader() const {
  MutexLock lock(mu_);
  return IsLeaderLocked();
}

std::string LeaderElector::GetLeader() const {
  MutexLock lock(mu_);
  return observed_.holder_identity;
}

bool LeaderElector::TryAcquireOrRenew() {
  const SteadyTime now = clock_.Now();
  const WallTime wall = TruncateToMicros(clock_.WallNow());
  LeaseSpec desired;
  desired.holder_identity = config_.identity;
  desired.lease_duration_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count();
  desired.acquire_time = wall;
  desired.renew_time = wall;
  const auto& leases = resources::Leases();
  const std::string desc = ObjectKey{config_.lease_namespace, config_.lease_name}.String();

  auto got = client_.Get(leases, config_.lease_namespace, config_.lease_name);
  if (!got) {
    if (got.error().code() != ErrorCode::kNotFound) {
      log::Warn("leader election: get lease failed",
                {{"lease", desc}, {"error", got.error().message()}});
      return false;
    }
    return Wrote(
        client_.Create(leases, MakeLease(config_.lease_namespace, config_.lease_name, desired)),
        "create", desc, desired, now);
  }
  auto spec = ParseLeaseSpec(*got);
  if (!spec) {
    log::Warn("leader election: unreadable lease",
              {{"lease", desc}, {"error", spec.error().message()}});
    return false;
  }
  {
    MutexLock lock(mu_);
    if (!have_observed_ || !(*spec == observed_)) {
      observed_ = *spec;
      observed_time_ = now;  // the local moment we saw this record change
      have_observed_ = true;
    }
    const Duration duration = std::chrono::seconds(observed_.lease_duration_seconds.value_or(0));
    const bool valid = observed_time_ + duration > now;
    if (!observed_.holder_identity.empty() && valid && !IsLeaderLocked()) {
      log::Debug("leader election: lease held by another candidate",
                 {{"lease", desc}, {"holder", observed_.holder_identity}});
      return false;
    }
    if (IsLeaderLocked()) {
      desired.acquire_time = observed_.acquire_time;
      desired.lease_transitions = observed_.lease_transitions;
    } else {
      desired.lease_transitions = observed_.lease_transitions + 1;
    }
  }
  return Wrote(client_.Update(leases, WithLeaseSpec(*got, desired)), "update", desc, desired, now);
}

bool LeaderElector::Wrote(const Result<Json>& written, std::string_view what,
                          const std::string& desc, const LeaseSpec& desired, SteadyTime now) {
  if (!written) {
    log::Warn("leader election: " + std::string(what) + " lease failed",
              {{"lease", desc}, {"error", written.error().message()}});
    return false;
  }
  MutexLock lock(mu_);
  observed_ = desired;
  observed_time_ = now;
  have_observed_ = true;
  return true;
}

void LeaderElector::MaybeReportTransition() {
  std::string leader;
  {
    MutexLock lock(mu_);
    if (reported_any_ && observed_.holder_identity == reported_leader_) return;
    if (!have_observed_) return;
    reported_leader_ = observed_.holder_identity;
    reported_any_ = true;
    leader = reported_leader_;
  }
  if (config_.callbacks.on_new_leader) config_.callbacks.on_new_leader(leader);
}

bool LeaderElector::Release() {
  Json lease;
  LeaseSpec spec;
  {
    MutexLock lock(mu_);
    if (!IsLeaderLocked()) return true;
    spec.lease_transitions = observed_.lease_transitions;
  }
  auto got = client_.Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
  if (!got) {
    log::Warn("leader election: release: get lease failed", {{"error", got.error().message()}});
    return false;
  }
  auto current = ParseLeaseSpec(*got);
  if (!current || current->holder_identity != config_.identity) return true;  // not ours anymore
  const WallTime wall = TruncateToMicros(clock_.WallNow());
  spec.holder_identity = "";
  spec.lease_duration_seconds = 1;
  spec.acquire_time = wall;
  spec.renew_time = wall;
  auto updated = client_.Update(resources::Leases(), WithLeaseSpec(*got, spec));
  if (!updated) {
    log::Warn("leader election: release failed", {{"error", updated.error().message()}});
    return false;
  }
  MutexLock lock(mu_);
  observed_ = spec;
  observed_time_ = clock_.Now();
  return true;
}

void LeaderElector::Run(Canceller& cancel) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::string desc = ObjectKey{config_.lease_namespace, config_.lease_name}.String();
  bool acquired = false;
  while (!cancel.Cancelled()) {
    acquired = TryAcquireOrRenew();
    MaybeReportTransition();
    if (acquired) break;
    auto wait = config_.retry_period +
                std::chrono::duration_cast<Duration>(config_.retry_period * (1.2 * unit(rng_)));
    if (cancel.WaitFor(wait)) break;
  }
  if (!acquired) return;
  log::Info("leader election: acquired lease", {{"lease", desc}, {"identity", config_.identity}});
  if (config_.callbacks.on_started_leading) config_.callbacks.on_started_leading();

  while (!cancel.Cancelled()) {
    const SteadyTime round_start = clock_.Now();
    bool renewed = false;
    while (!cancel.Cancelled()) {
      renewed = TryAcquireOrRenew() && clock_.Now() - round_start < config_.renew_deadline;
      if (renewed || clock_.Now() - round_start >= config_.renew_deadline) break;
      if (cancel.WaitFor(config_.retry_period)) break;
      if (clock_.Now() - round_start >= config_.renew_deadline) break;
    }
    MaybeReportTransition();
    if (!renewed) {
      if (!cancel.Cancelled()) log::Warn("leader election: lost lease", {{"lease", desc}});
      break;
    }
    if (cancel.WaitFor(config_.retry_period)) break;
  }
  if (config_.release_on_cancel) Release();
  if (config_.callbacks.on_stopped_leading) config_.callbacks.on_stopped_leading();
}

}  // namespace pylon::k8s
