// The quiet node lease: how often this node renews its Lease, which leaseDurationSeconds it writes
// and how long its own renewals may fail before it is "lease unhealthy", depending on whether its
// heartbeats carry its liveness (docs/failover.md, "Quiet lease").
//
//  - Loud: PureLB's timing exactly (the PURELB_* variables, LeaseTiming): renew every retry
//    period, write the lease duration, healthy while renewed within the renew deadline. Every
//    node then costs 1 / retry period writes per second (0.5 by default), and every other agent
//    a watch event per write.
//  - Quiet: kubelet's node lease numbers: renew every kQuietRenewPeriod (10 s), write
//    kQuietLeaseDuration (40 s): 0.1 writes per second per node. Never louder than loud: each is
//    at least its loud value. The renew deadline is the loud one scaled by the same factor as the
//    duration (7 s -> 28 s by default), and at least halfway between the quiet renew period and
//    the quiet duration, so renew period < deadline < duration holds whatever PURELB_* say.
//
// Quiet only while heartbeats carry liveness (HeartbeatsCarryLiveness): then every live peer judges
// this node by its heartbeats and the lease is a slow backstop. Loud at once when that stops
// holding (the caller renews at once, writing the short duration, so that a peer that judges by
// lease never keeps a 40 s lease for a node whose heartbeats stopped arriving); quiet only after it
// has held for kQuietHoldDown without a break (a flapping condition stays loud).
//
// Pure and single-threaded: the caller passes every time (the keeper's injected clock).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <span>

#include "agent/lease_health.h"
#include "common/clock.h"
#include "election/membership.h"
#include "election/node_name.h"
#include "heartbeat/detector.h"

namespace pylon::agent {

// kubelet's node lease: renewed every 10 s, 40 s long.
inline constexpr Duration kQuietRenewPeriod = std::chrono::seconds(10);
inline constexpr Duration kQuietLeaseDuration = std::chrono::seconds(40);
// How long heartbeats must carry liveness without a break before the lease turns quiet.
inline constexpr Duration kQuietHoldDown = std::chrono::seconds(30);

enum class LeaseMode : std::uint8_t { kLoud, kQuiet };

// --quiet-lease on|off (PYLON_QUIET_LEASE); the periods are the constants above.
struct QuietLeaseOptions {
  bool enabled = true;
  Duration renew_period = kQuietRenewPeriod;
  Duration lease_duration = kQuietLeaseDuration;  // whole seconds
  Duration hold_down = kQuietHoldDown;
};

// One mode's timing.
struct LeasePace {
  LeaseMode mode = LeaseMode::kLoud;
  Duration renew_period{};    // between successful renewals
  Duration lease_duration{};  // leaseDurationSeconds to write (whole seconds)
  Duration renew_deadline{};  // healthy while the last successful renewal is younger than this
  friend bool operator==(const LeasePace&, const LeasePace&) = default;
};

// PureLB's timing, as configured.
LeasePace LoudPace(const LeaseTiming& loud);
// The quiet timing derived from `loud` (a valid LeaseTiming) and `quiet` (see the file comment).
LeasePace QuietPace(const LeaseTiming& loud, const QuietLeaseOptions& quiet);

// What the agent knows each pass about its heartbeats (LivenessFacts).
struct HeartbeatLivenessFacts {
  bool heartbeats_running = false;  // heartbeats are on and the service runs
  // Some live member other than this node (lease not released) has no purelb.io/heartbeat
  // annotation on its lease (an older agent, heartbeats off there): it judges this node by its
  // lease alone.
  bool lease_only_members = false;
  // Some node publishes heartbeat endpoints but does not speak the ring (an older agent during a
  // rolling upgrade: HeartbeatService::LegacyPeers).
  bool legacy_peers = false;
  // Every heartbeat peer is heard within its bound (alive, unhealthy) or known dead
  // (Detector::AllPeersSettled), or, never heard or silent, not live here (below).
  bool peers_settled = false;
  bool hears_any_peer = false;  // Detector::HearsAnyPeer: some peer heard within its bound
};
// Whether heartbeats carry this node's liveness: heartbeats run, no lease-only member, no legacy
// peer, settled, and some peer heard. A node with no heartbeat peer at all stays loud.
bool HeartbeatsCarryLiveness(const HeartbeatLivenessFacts& f);

// The facts from the heartbeat service's peers (HeartbeatService::Peers: the detector's, i.e.
// ring neighbours and legacy peers), the nodes whose lease has a purelb.io/heartbeat annotation,
// and this node's Membership at `now` (legacy_peers is the caller's). A member or never-heard peer
// whose lease is not live in this node's view (expired here: a dead node whose lease nobody
// deleted, e.g. one that died before this agent started) does not count against the quiet lease: it
// renews nothing, so it is down or cut off from the API server, and then it sees no lease either.
// Once it renews again it is live here and, unheard, makes this node loud at once. Without this,
// one dead node would keep every agent started after its death loud for good.
HeartbeatLivenessFacts LivenessFacts(std::span<const heartbeat::PeerStatus> peers,
                                     const std::set<election::NodeName>& heartbeat_annotated,
                                     const election::Membership& membership,
                                     const election::NodeName& self, SteadyTime now);

class LeasePacing {
 public:
  // `loud` must be valid (ValidateLeaseTiming). Starts loud.
  LeasePacing(const LeaseTiming& loud, const QuietLeaseOptions& quiet);

  // Whether heartbeats carry liveness at `now` (times must not go backwards). Returns true when
  // the mode changed: renew at once with the new pace. A true call is needed at or after
  // QuietAt() for the switch to quiet to happen.
  bool Observe(bool heartbeats_carry_liveness, SteadyTime now);

  LeaseMode mode() const { return mode_; }
  const LeasePace& pace() const { return mode_ == LeaseMode::kQuiet ? quiet_ : loud_; }
  // The wait before the next renewal after one that succeeded (`ok`) or failed: a failed renewal
  // is retried after the loud retry period in either mode (a quiet lease has a long deadline, not
  // a slow retry).
  Duration WaitAfter(bool ok) const { return ok ? pace().renew_period : loud_.renew_period; }
  // When a still-holding condition turns the lease quiet; nullopt when loud with the condition not
  // holding, when quiet already, or when quiet leases are off.
  std::optional<SteadyTime> QuietAt() const;

 private:
  const LeasePace loud_;
  const LeasePace quiet_;
  const bool enabled_;
  const Duration hold_down_;
  LeaseMode mode_ = LeaseMode::kLoud;
  std::optional<SteadyTime> held_since_;  // the condition has held without a break since
};

}  // namespace pylon::agent
