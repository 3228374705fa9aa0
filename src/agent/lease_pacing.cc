#include "agent/lease_pacing.h"

#include <algorithm>
#include <cmath>

namespace pylon::agent {

LeasePace LoudPace(const LeaseTiming& loud) {
  return LeasePace{LeaseMode::kLoud, loud.retry_period, loud.lease_duration, loud.renew_deadline};
}

LeasePace QuietPace(const LeaseTiming& loud, const QuietLeaseOptions& quiet) {
  LeasePace p;
  p.mode = LeaseMode::kQuiet;
  p.renew_period = std::max(quiet.renew_period, loud.retry_period);
  p.lease_duration =
      std::chrono::ceil<std::chrono::seconds>(std::max(quiet.lease_duration, loud.lease_duration));
  // In floating-point milliseconds (nanoseconds times nanoseconds overflows 64 bits).
  using Ms = std::chrono::duration<double, std::milli>;
  const double factor = Ms(p.lease_duration) / Ms(loud.lease_duration);
  const Duration scaled =
      std::chrono::milliseconds(std::llround(Ms(loud.renew_deadline).count() * factor));
  const Duration halfway = p.renew_period + (p.lease_duration - p.renew_period) / 2;
  p.renew_deadline = std::min(std::max(scaled, halfway), p.lease_duration - Duration(1));
  return p;
}

bool HeartbeatsCarryLiveness(const HeartbeatLivenessFacts& f) {
  return f.heartbeats_running && !f.lease_only_members && !f.legacy_peers && f.peers_settled &&
         f.hears_any_peer;
}

HeartbeatLivenessFacts LivenessFacts(std::span<const heartbeat::PeerStatus> peers,
                                     const std::set<election::NodeName>& heartbeat_annotated,
                                     const election::Membership& membership,
                                     const election::NodeName& self, SteadyTime now) {
  HeartbeatLivenessFacts f;
  f.heartbeats_running = true;
  f.peers_settled = true;
  for (const auto& p : peers) {
    const bool heard = p.last_heard && now < *p.last_heard + p.bound;
    f.hears_any_peer |= heard;
    switch (p.state) {
      case heartbeat::PeerState::kDead:
        break;
      case heartbeat::PeerState::kAlive:
      case heartbeat::PeerState::kUnhealthy:
      case heartbeat::PeerState::kStarting:
        f.peers_settled &= heard;
        break;
      case heartbeat::PeerState::kNeverHeard:
      case heartbeat::PeerState::kSilent:
        f.peers_settled &= !membership.IsLive(p.node, now);
        break;
    }
  }
  for (const auto& [name, member] : membership.members()) {
    if (name == self || member.released() || heartbeat_annotated.count(name) != 0) continue;
    if (membership.IsLive(member, now)) f.lease_only_members = true;
  }
  return f;
}

LeasePacing::LeasePacing(const LeaseTiming& loud, const QuietLeaseOptions& quiet)
    : loud_(LoudPace(loud)),
      quiet_(QuietPace(loud, quiet)),
      enabled_(quiet.enabled),
      hold_down_(quiet.hold_down) {}

bool LeasePacing::Observe(bool heartbeats_carry_liveness, SteadyTime now) {
  if (!heartbeats_carry_liveness || !enabled_) {
    held_since_.reset();
    if (mode_ == LeaseMode::kLoud) return false;
    mode_ = LeaseMode::kLoud;
    return true;
  }
  if (!held_since_) held_since_ = now;
  if (mode_ == LeaseMode::kQuiet || now < *held_since_ + hold_down_) return false;
  mode_ = LeaseMode::kQuiet;
  return true;
}

std::optional<SteadyTime> LeasePacing::QuietAt() const {
  if (mode_ == LeaseMode::kQuiet || !held_since_) return std::nullopt;
  return *held_since_ + hold_down_;
}

}  // namespace pylon::agent
