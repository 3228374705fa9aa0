// How heartbeat liveness combines with lease liveness, and whether this node may announce.
// Pure functions; the rules are the contract documented in docs/failover.md.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "election/membership.h"
#include "heartbeat/detector.h"

namespace pylon::heartbeat {

// Liveness of a peer for elections, from its lease and the detector (what Membership computes
// once SyncOverrides has run; spelled out here as the reference):
//   heartbeat kAlive                 -> live, even if the lease looks expired (API outage);
//   heartbeat kDead or kUnhealthy    -> dead, even if the lease is valid (fast failover, NIC down);
//   heartbeat kNeverHeard or kSilent -> the lease decides (old agents, heartbeats off, or this
//                                       node cut off and unable to tell who is gone);
//   no lease (deleted, released)     -> dead whatever the heartbeat says: the lease is the
//                                       source of membership.
bool CombinedLiveness(bool lease_member, bool lease_live, std::optional<PeerState> heartbeat);

// Makes `membership`'s overrides match the detector: sets OverrideFor(peer) for every listed peer
// that has one, clears it for those that have none and for nodes in `previously_set` no longer
// listed. `previously_set` is the caller's record of the nodes it set overrides for; updated.
// Returns whether any override changed (re-run the election then).
bool SyncOverrides(const Detector& detector, election::Membership& membership,
                   std::set<election::NodeName>& previously_set);

struct SelfInputs {
  bool heartbeats_enabled = false;  // a key was configured and the service runs
  bool link_up = true;              // the announcing link is operational (netlink)
  bool leaving = false;             // graceful shutdown started
  bool lease_healthy = false;       // LeaseHealth::Healthy(now): renewed within RENEW_DEADLINE
  // Detector::AllPeersSettled(now): every heartbeat peer is heard or known dead, so none of them
  // judges this node by its lease.
  bool peers_settled = false;
  // Some member's lease lacks the heartbeat annotation (an older agent, heartbeats off there):
  // that node judges this one by its lease alone.
  bool lease_only_members = false;
};

enum class SelfHealth : std::uint8_t {
  kHealthy,
  kLinkDown,        // the announcing link lost carrier or was set down
  kLeaving,         // shutting down
  kLeaseUnhealthy,  // renewals failed for RENEW_DEADLINE and some peer may judge us by lease
};
const char* SelfHealthName(SelfHealth h);

// Whether this node may announce its local addresses ("am I healthy"):
//   1. announcing link down                      -> not healthy: withdraw at once;
//   2. leaving                                   -> not healthy;
//   3. lease renewed within RENEW_DEADLINE       -> healthy;
//   4. lease failing (API server unreachable): healthy only if heartbeats run, every heartbeat
//      peer is heard or known dead (AllPeersSettled), and no member is lease-only. Then no peer
//      judges this node by its stale lease: those hearing it keep it alive, so withdrawing would
//      only turn an API outage into an outage on the wire. Otherwise not healthy (the lease-only
//      rule: a peer will see the lease expire and take over, so step back first).
// A node with no peers at all and heartbeats on keeps announcing through an API outage (nobody
// can take over anyway).
SelfHealth JudgeSelf(const SelfInputs& in);

// This node's own entry in its Membership: the agent does not observe its own renewals during an
// API outage, so its own lease expires in its own view and it would elect others for its
// addresses -- while the peers, hearing it, still elect it: nobody would announce them. The agent
// therefore overrides its own liveness with its own health: healthy -> alive (until now + `ttl`,
// re-set every pass), anything else -> dead. Peers reach the same verdict from the kNotEligible
// flag of its heartbeats. Returns whether the override changed state.
bool SyncSelfOverride(election::Membership& membership, const election::NodeName& self,
                      SelfHealth health, SteadyTime now, Duration ttl);

}  // namespace pylon::heartbeat
