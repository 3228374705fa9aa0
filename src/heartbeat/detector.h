// Detector: per-peer liveness from authenticated heartbeats, judged on the LOCAL steady clock.
// Pure and single-threaded (the caller passes every time); FakeClock-testable.
//
// Definitions, for a listed peer P (a member whose lease carries the purelb.io/heartbeat
// annotation; see endpoints.h):
//   I(P)     = max(own interval, P's advertised interval)
//   bound(P) = miss_count x I(P)                       (default 3 x 100 ms = 300 ms)
//   last(P)  = local steady time of the last valid heartbeat from P
//   latest   = max last(Q) over all listed peers Q      ("when did I last hear anyone")
//
// States (PeerState) and the rule, evaluated at `now`:
//   kNeverHeard  no valid heartbeat from P since it was listed (or since this agent started).
//   kAlive       now < last(P) + bound(P), and P's last heartbeat says it is eligible
//                (link up, not "not eligible") and not leaving.
//   kUnhealthy   now < last(P) + bound(P), but P says its announcing link is down or that it is
//                not eligible: P is reachable but must not win anything.
//   kStarting    now < last(P) + bound(P), and P says its agent has just started and not judged
//                itself yet (flags::kStarting): P is heard, but its lease decides. A starting
//                agent is not eligible yet, and treating that as "unhealthy" would move every
//                address it is about to adopt to a peer on its first heartbeat.
//   kDead        P's last heartbeat carried "leaving" (at once, no waiting); or
//                now >= last(P) + bound(P) and EITHER
//                  (a) latest > last(P) + 1.5 x I(P): this node has heard some other peer well
//                      after P went quiet, so it can still hear the segment: P is the one gone;
//                  (b) no other peer is kAlive, kUnhealthy, kStarting or kSilent (P was the last
//                  one this
//                      node could hear; two-node segments) and this node's own link is up.
//                A dead peer stays dead until its next valid heartbeat, which revives it at once.
//   kSilent      now >= last(P) + bound(P) without (a) or (b): every peer went quiet together,
//                which is what being cut off looks like from the inside. No verdict: the lease
//                decides. When (a) or (b) later holds for a silent peer (this node hears someone
//                again, or its own link comes back), the peer gets one more bound to speak --
//                grace(P) = that instant + bound(P) -- since it was this node, not P, that could
//                not hear; P is dead at grace(P) if (a) or (b) still holds then, alive at once if
//                heard before. So reconnecting never flaps the peers that are fine.
// The 1.5 x I margin in (a): heartbeats are sent every 0.9..1.0 x interval, so when this node is
// cut off at t, every peer was last heard within one interval before t; no peer's last heartbeat
// can lie 1.5 intervals after another's. When one peer crashes, the others keep talking and one
// of their heartbeats lands in (last(P) + 1.5 I, last(P) + 3 I] well before P's bound expires.
//
// How the states map to election liveness (Membership overrides, see OverrideFor / policy.h):
//   kAlive -> alive until last(P) + bound(P); kUnhealthy, kDead -> dead;
//   kNeverHeard, kStarting, kSilent -> no override: lease liveness.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "election/membership.h"
#include "election/node_name.h"
#include "heartbeat/wire.h"
#include "net/ip.h"

namespace pylon::heartbeat {

struct DetectorOptions {
  election::NodeName self;
  Duration interval = std::chrono::milliseconds(100);
  int miss_count = 3;
};

enum class PeerState : std::uint8_t { kNeverHeard, kAlive, kUnhealthy, kStarting, kSilent, kDead };
inline constexpr PeerState kPeerStates[] = {PeerState::kNeverHeard, PeerState::kAlive,
                                            PeerState::kUnhealthy,  PeerState::kStarting,
                                            PeerState::kSilent,     PeerState::kDead};
// Heard within its bound: kAlive, kUnhealthy or kStarting (the states with a deadline).
bool Heard(PeerState s);
const char* PeerStateName(PeerState s);

// What this node knows of one peer.
struct PeerStatus {
  election::NodeName node;
  PeerState state = PeerState::kNeverHeard;
  std::optional<SteadyTime> last_heard;  // local steady time of the last valid heartbeat
  Duration interval{};                   // I(P) as of the last heartbeat
  Duration bound{};                      // miss_count x I(P)
  std::uint64_t boot_id = 0;
  std::uint64_t sequence = 0;  // of the last heartbeat (what a report about P quotes)
  std::uint8_t flags = 0;      // of the last heartbeat
  // The addresses P announces: its last heartbeat's list, or, when P splits a long list in
  // windows, the union of the latest copy of every window (reset when the window count or the
  // boot id changes). Ascending when windowed; as sent otherwise.
  std::vector<net::IpAddress> addresses;
  std::vector<std::vector<net::IpAddress>> windows;  // by window index
  std::string reason;                                // why the current state (for logs and events)
  std::optional<SteadyTime> grace;                   // kSilent only: grace(P) once (a) or (b) held
};

struct Transition {
  election::NodeName node;
  PeerState from = PeerState::kNeverHeard;
  PeerState to = PeerState::kNeverHeard;
  std::string reason;
  friend bool operator==(const Transition&, const Transition&) = default;
};

// The Membership override for a peer's status at `now` (see the file comment), or nullopt when
// the lease alone decides.
std::optional<election::LivenessOverride> OverrideFor(const PeerStatus& peer);

class Detector {
 public:
  explicit Detector(DetectorOptions options);

  const DetectorOptions& options() const { return options_; }

  // Replaces the list of peers (this node's own name is ignored). New peers start kNeverHeard;
  // peers no longer listed are forgotten (their override must be cleared: see SyncOverrides).
  void SetPeers(std::span<const election::NodeName> peers);
  bool IsPeer(const election::NodeName& node) const { return peers_.count(node) != 0; }

  // Records one authenticated, non-replayed heartbeat received at `now`. Returns false (and
  // changes nothing) if the sender is not a listed peer or is this node. The state change it
  // causes is returned by the next Evaluate.
  bool OnHeartbeat(const Heartbeat& hb, SteadyTime now);

  // This node's announcing link (netlink). Down: (b) never applies.
  void SetSelfLinkUp(bool up) { self_link_up_ = up; }
  bool self_link_up() const { return self_link_up_; }

  // Applies the passage of time up to `now` and re-checks silent peers; returns every state
  // change since the previous call (including those caused by OnHeartbeat), in order.
  // `now` must not go backwards.
  std::vector<Transition> Evaluate(SteadyTime now);

  // The earliest instant at which Evaluate may change a state by time alone (a bound expiring),
  // or nullopt. Silent peers change on heartbeats, not on time.
  std::optional<SteadyTime> NextDeadline() const;

  // Whether this node heard any listed peer within that peer's bound at `now`: it can hear the
  // segment. False with no peers. Sent as the inverse of the kDeaf flag.
  bool HearsAnyPeer(SteadyTime now) const;
  // Whether every listed peer's state is settled by heartbeats at `now`: each is heard within its
  // bound (kAlive, kUnhealthy, kStarting) or kDead. A kNeverHeard or kSilent peer may be judging
  // this node by its lease, so this node's own lease health matters again (see policy.h JudgeSelf).
  // True with no peers.
  bool AllPeersSettled(SteadyTime now) const;

  const PeerStatus* Find(const election::NodeName& node) const;
  // Ordered by name.
  const std::map<election::NodeName, PeerStatus>& peers() const { return peers_; }
  std::size_t CountIn(PeerState s) const;

 private:
  Duration IntervalOf(std::uint32_t advertised_ms) const;
  void SetState(PeerStatus& p, PeerState s, std::string reason);
  bool LastStanding(const PeerStatus& p) const;  // rule (b) without the link condition
  bool HeardSince(const PeerStatus& p) const;    // rule (a)
  bool Condemned(const PeerStatus& p) const;     // (a) or (b), link condition included
  void Forget(PeerStatus& p);                    // removes p's timer entries

  DetectorOptions options_;
  std::map<election::NodeName, PeerStatus> peers_;
  // (last(P) + bound(P), P) for peers heard within their bound (Heard).
  std::set<std::pair<SteadyTime, election::NodeName>> deadlines_;
  // (grace(P), P) for silent peers given a grace period.
  std::set<std::pair<SteadyTime, election::NodeName>> graces_;
  std::set<election::NodeName> silent_;
  std::optional<SteadyTime> latest_;
  std::size_t live_ish_ = 0;  // peers Heard or kSilent
  bool self_link_up_ = true;
  std::vector<Transition> pending_;
};

}  // namespace pylon::heartbeat
