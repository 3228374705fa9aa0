#include "heartbeat/policy.h"

namespace pylon::heartbeat {

bool CombinedLiveness(bool lease_member, bool lease_live, std::optional<PeerState> heartbeat) {
  if (!lease_member) return false;
  if (!heartbeat) return lease_live;
  switch (*heartbeat) {
    case PeerState::kAlive:
      return true;
    case PeerState::kDead:
    case PeerState::kUnhealthy:
      return false;
    case PeerState::kNeverHeard:
    case PeerState::kStarting:
    case PeerState::kSilent:
      return lease_live;
  }
  return lease_live;
}

bool SyncOverrides(const Detector& detector, election::Membership& membership,
                   std::set<election::NodeName>& previously_set) {
  bool changed = false;
  std::set<election::NodeName> now_set;
  for (const auto& [name, peer] : detector.peers()) {
    auto want = OverrideFor(peer);
    if (!want) continue;
    now_set.insert(name);
    // At SteadyTime::min() every stored override is active, so this reads the stored value.
    auto existing = membership.OverrideFor(name, SteadyTime::min());
    if (!existing || existing->state != want->state || existing->until != want->until) {
      membership.SetOverride(name, *want);
      changed = true;
    }
  }
  for (const auto& name : previously_set) {
    if (now_set.count(name) == 0) {
      membership.ClearOverride(name);
      changed = true;
    }
  }
  previously_set = std::move(now_set);
  return changed;
}

bool SyncSelfOverride(election::Membership& membership, const election::NodeName& self,
                      SelfHealth health, SteadyTime now, Duration ttl) {
  const auto before = membership.OverrideFor(self, now);
  election::LivenessOverride want;
  if (health == SelfHealth::kHealthy) {
    want = {election::Liveness::kAlive, now + ttl};
  } else {
    want = {election::Liveness::kDead, std::nullopt};
  }
  membership.SetOverride(self, want);
  return !before || before->state != want.state;
}

const char* SelfHealthName(SelfHealth h) {
  switch (h) {
    case SelfHealth::kHealthy:
      return "healthy";
    case SelfHealth::kLinkDown:
      return "link_down";
    case SelfHealth::kLeaving:
      return "leaving";
    case SelfHealth::kLeaseUnhealthy:
      return "lease_unhealthy";
  }
  return "unknown";
}

SelfHealth JudgeSelf(const SelfInputs& in) {
  if (!in.link_up) return SelfHealth::kLinkDown;
  if (in.leaving) return SelfHealth::kLeaving;
  if (in.lease_healthy) return SelfHealth::kHealthy;
  if (in.heartbeats_enabled && in.peers_settled && !in.lease_only_members) {
    return SelfHealth::kHealthy;
  }
  return SelfHealth::kLeaseUnhealthy;
}

}  // namespace pylon::heartbeat
