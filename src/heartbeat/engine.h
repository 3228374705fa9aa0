// Engine: the logic of one agent's failure detector, without I/O. It builds this node's heartbeat
// (the announced list split in windows, the flags), decides when a round is due and to which peer
// endpoints it goes, decodes, authenticates and replay-checks the peers' heartbeats, runs the
// Detector, and answers the agent's questions: overrides for its Membership, its own health, the
// addresses to yield in a split.
//
// Single-threaded and pure: no socket, thread, netlink or lock, and every time is passed in (`now`
// must not go backwards between calls). HeartbeatService (service.h) wraps it with a lock, the UDP
// socket, the thread and the link events; the segment simulation (a benchmark program)
// drives many engines in virtual time.
//
// Driving it (what the service thread does):
//   loop: out = Poll(now): send each datagram to out[i].to, RecordSendErrors(refused ones);
//         wait until NextWake() or a datagram or an input;
//         OnDatagram(bytes, from, now) for each received datagram;
//         Evaluate(now): the detector's state changes.
//   The agent must re-run its pass when OnDatagram returned true, Evaluate returned transitions,
//   or SetLinkUp returned true.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "election/hash.h"
#include "election/membership.h"
#include "election/node_name.h"
#include "heartbeat/config.h"
#include "heartbeat/detector.h"
#include "heartbeat/endpoints.h"
#include "heartbeat/gossip.h"
#include "heartbeat/keyring.h"
#include "heartbeat/policy.h"
#include "heartbeat/replay.h"
#include "heartbeat/ring.h"
#include "heartbeat/wire.h"
#include "net/ip.h"

namespace pylon::heartbeat {

// How long past its detection bound a kAlive override may outlive the detector's last word: a
// safety net (the service thread stuck) that never shortens failover, since the detector moves a
// quiet peer out of kAlive exactly at its bound and the re-sync follows at once.
inline constexpr Duration kAliveOverrideSlack = std::chrono::seconds(5);
// How long a node keeps sending heartbeats to a former ring neighbour after a join or leave
// changed its neighbours (see Engine::lingering_). Views of the ring differ only by how late each
// agent's informer sees the lease; this covers that with a wide margin.
inline constexpr Duration kLingerAfterRingChange = std::chrono::seconds(5);

// The node leases an engine takes its peers from: every node that publishes heartbeat endpoints,
// which of them speak the ring, and the ring they make (with `ring_self`, the owning engine's node,
// when it speaks the ring). An engine owns one alone, fed by ObservePeerLease and changed in
// place; engines that see the same leases may share one (UsePeers: the segment simulation, where
// thousands of engines would otherwise each hold every lease). A shared table is copied before
// any change (copy on write), so sharing never changes what an engine does.
struct PeerTable {
  std::map<election::NodeName, std::vector<Endpoint>> endpoints;
  std::map<election::NodeName, std::string> annotations;
  std::set<election::NodeName> ring_capable;  // of the nodes in endpoints (after Rebuild)
  std::optional<election::NodeName> ring_self;
  // Ring::Key of each ring member, kept (one SHA-256 per node, not per rebuild).
  std::map<election::NodeName, election::Digest> ring_keys;
  Ring ring;           // ring_capable and ring_self, as of the last Rebuild
  bool stale = false;  // changed since the last Rebuild

  struct Change {
    bool peers_changed = false;       // endpoints or ring capability
    bool endpoints_gone = false;      // the node has no endpoints now
    std::vector<std::string> issues;  // problems with the annotation, only when its value changed
  };
  // One node lease (its purelb.io/heartbeat annotation, empty: none; its ring capability) or its
  // deletion.
  Change Observe(const election::NodeName& node, std::string_view annotation, bool deleted,
                 bool ring_capable_now);
  // Drops the ring capability of nodes without endpoints and rebuilds the ring.
  void Rebuild(election::ElectionHasher& hasher);
};

struct EngineOptions {
  election::NodeName node;  // this node
  HeartbeatConfig config;   // interval, miss count, datagram limit (the port is the adapter's)
  std::uint64_t boot_id = 0;
  // This node speaks the ring (ring.h): it heartbeats with its ring neighbours and the legacy
  // peers only, and floods reports. Off: every listed peer, as before the ring (tests of the
  // all-to-all behaviour, and SetPeers, which carries no ring capability).
  bool ring = true;
};

struct HeartbeatStats {
  std::uint64_t rounds = 0;       // send rounds (one datagram per peer endpoint each)
  std::uint64_t sent = 0;         // datagrams sent
  std::uint64_t send_errors = 0;  // datagrams the kernel refused
  std::uint64_t received = 0;     // datagrams read from the socket
  std::uint64_t accepted = 0;     // authenticated, fresh heartbeats of listed peers
  // Peers heard again after a silence (kSilent -> kAlive): this node heard nobody for a while
  // (stopped, cut off) and hears again.
  std::uint64_t rejoined = 0;
  std::array<std::uint64_t, kDropReasonCount> dropped{};  // by DropReason
  std::uint64_t reports_made = 0;  // reports this node made (its monitor's verdicts, refutations)
  std::uint64_t reports_sent = 0;  // report datagrams sent (made or forwarded; also in `sent`)
  std::uint64_t reports_received = 0;  // new reports accepted (duplicates are in `dropped`)
  // New reports not forwarded: they changed no verdict here (Gossip::IsNews), or they end a
  // suspicion that was never flooded (see Engine::held_).
  std::uint64_t reports_not_forwarded = 0;
  std::uint64_t dropped_total() const;
};

// One datagram to send: the encoded heartbeat for one endpoint of one peer.
struct Outgoing {
  election::NodeName peer;
  Endpoint to;
  std::vector<std::uint8_t> bytes;
};

class Engine {
 public:
  // Validates the options (a node name that can be sent, a datagram limit that fits it, the
  // configuration).
  static Result<Engine> Create(EngineOptions options, KeyRing keys);

  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  ~Engine();

  // --- inputs --------------------------------------------------------------------------------
  // The annotations of a node lease, by key (absent: empty).
  using Annotations = std::function<std::string_view(std::string_view key)>;
  struct LeaseUpdate {
    bool peers_changed = false;
    std::vector<std::string> issues;  // problems with the annotation, only when its value changed
  };
  // A node lease seen by the informer, or its deletion. Reads its purelb.io/heartbeat annotation
  // (kHeartbeatAnnotation) and its ring capability (kRingAnnotation = kRingVersion).
  LeaseUpdate ObservePeerLease(const election::NodeName& node, const Annotations& annotations,
                               bool deleted);
  // The same with the purelb.io/heartbeat annotation's value (empty: none) and the capability.
  LeaseUpdate ObservePeerLease(const election::NodeName& node, std::string_view annotation,
                               bool deleted, bool ring = false);
  // Replaces every peer and its endpoints at once (alternative to ObservePeerLease).
  void SetPeers(std::map<election::NodeName, std::vector<Endpoint>> peers);
  // Takes its peers from `table`, shared with other engines that see the same leases (see
  // PeerTable): it may hold this node's own lease too, which the engine skips. Rebuild it first,
  // or each engine rebuilds its own copy. A later ObservePeerLease or SetPeers copies it.
  void UsePeers(std::shared_ptr<PeerTable> table);
  // The addresses this node announces now (after yielding). A change is sent at once (the next
  // Poll). Returns whether it changed.
  bool SetAnnounced(std::vector<net::IpAddress> addresses);
  // Whether this node is fit to announce (Sync sets it: healthy and ready). Sent as the inverse
  // of kNotEligible; a change is sent at once. Returns whether it changed.
  bool SetEligible(bool eligible);
  // From construction until the first Sync with the informers synced (`ready`) and either the
  // lease renewed or this node judged healthy: heartbeats carry kStarting (its peers take no
  // verdict from them, its lease decides), so an agent that has not judged itself yet is not
  // read as "not eligible" and does not lose the addresses it is about to adopt.
  bool starting() const { return starting_; }
  // This node's announcing link. Down: no heartbeats are sent and the detector's rule (b) does
  // not apply; up again: a round is sent at once. Returns whether it changed.
  bool SetLinkUp(bool up);
  // Graceful shutdown: every heartbeat from now on carries `leaving`; one is sent at once.
  void StartLeaving();

  // --- the wire ------------------------------------------------------------------------------
  // The reports waiting to go (made or forwarded, to every endpoint of each finger), then the
  // heartbeat round, when due at `now` (the interval passed, 0.9..1.0 x interval with a jitter
  // seeded by the boot id, or what the heartbeat says changed): one datagram per endpoint of every
  // heartbeat peer (HeartbeatPeers). Nothing while the link is down. Counts the datagrams as sent:
  // report the ones the kernel refused with RecordSendErrors.
  std::vector<Outgoing> Poll(SteadyTime now);
  // `failed` datagrams of the last Poll were refused: counted as send errors, not as sent.
  void RecordSendErrors(std::uint64_t failed);
  // One received datagram (`from`: its source, for logs): a heartbeat or a report. Returns whether
  // a peer's address list, flags or boot id changed, or a new report came (the agent must re-run
  // its pass). A new report is forwarded to this node's fingers if it is news here
  // (Gossip::IsNews), except a fellow monitor's dead report this node does not confirm yet (kept,
  // see held_); a dead report about this node is refuted with an alive report.
  bool OnDatagram(std::span<const std::uint8_t> datagram, const Endpoint& from, SteadyTime now);
  // The detector's state changes up to `now` (Detector::Evaluate); counts rejoined peers. A ring
  // neighbour's change to dead, unhealthy or leaving, or back to alive from those, becomes a
  // report flooded to the fingers (sent by the next Poll); a dead report no other monitor has
  // confirmed yet goes to the neighbour's other monitors only (see held_), and so does the alive
  // report that ends it.
  std::vector<Transition> Evaluate(SteadyTime now);
  // When Poll or Evaluate next has something to do by time alone: the next round or the
  // detector's next deadline. A time not after any `now` (SteadyTime{}) when a round or a report
  // is due now, or the peers changed (the ring and the detector's peers are rebuilt once, by the
  // next Poll, OnDatagram, Evaluate, Sync or AddressesToYield, however many leases came).
  SteadyTime NextWake() const;

  // --- outputs -------------------------------------------------------------------------------
  // What the agent knows that the engine does not, for one pass.
  struct PassInputs {
    bool lease_healthy = false;  // LeaseHealth::Healthy(now)
    // Some member judges this node by its lease alone. Sync also derives it: any member of
    // `membership` (other than this node, lease not released) that is not a heartbeat peer.
    bool lease_only_members = false;
    bool ready = true;  // the agent has synced its informers (it may announce)
  };
  struct PassResult {
    SelfHealth health = SelfHealth::kHealthy;  // announce local addresses only when kHealthy
    bool overrides_changed = false;            // a liveness override changed state
  };
  // Once per agent pass, before the election: judges this node's health (policy.h JudgeSelf),
  // publishes it to peers (kNotEligible unless healthy and ready), and makes `membership`'s
  // overrides match the detector (SyncOverrides) and this node's health (SyncSelfOverride, ttl
  // kAliveOverrideSlack).
  PassResult Sync(election::Membership& membership, const PassInputs& in, SteadyTime now);
  // This node's health (policy.h JudgeSelf) with the lease inputs the agent knows.
  SelfHealth JudgeSelf(bool lease_healthy, bool lease_only_members, SteadyTime now) const;
  // Addresses of `mine` this node must stop announcing now (split_brain.h).
  std::vector<net::IpAddress> AddressesToYield(std::span<const net::IpAddress> mine,
                                               SteadyTime now);
  // The endpoints to publish in this node's lease annotation, for the given node addresses
  // (e.g. its primary IPv4 and IPv6 on the announcing interface) and the bound port.
  static std::vector<Endpoint> LocalEndpoints(std::span<const net::IpAddress> node_addresses,
                                              std::uint16_t port);

  const EngineOptions& options() const { return options_; }
  std::uint64_t boot_id() const { return options_.boot_id; }
  bool link_up() const { return link_up_; }
  bool leaving() const { return leaving_; }
  // Rounds sent since StartLeaving.
  std::uint64_t leaving_rounds() const { return leaving_rounds_; }
  const HeartbeatStats& stats() const { return stats_; }
  const Detector& detector() const { return detector_; }
  // Every node that publishes heartbeat endpoints, and its endpoints (this node too when a shared
  // table holds its lease, see UsePeers).
  const std::map<election::NodeName, std::vector<Endpoint>>& endpoints() const {
    return peers_->endpoints;
  }
  // The nodes whose liveness the last Sync overrides in the Membership (this node excluded).
  const std::set<election::NodeName>& overridden() const { return overridden_; }
  // The nodes this node exchanges heartbeats with: its ring neighbours and every legacy peer (a
  // node with endpoints that does not speak the ring: an older agent), or every node with
  // endpoints when this node does not speak the ring.
  std::vector<election::NodeName> HeartbeatPeers() const;
  // Nodes with endpoints that do not speak the ring.
  std::size_t legacy_peers() const;
  // The ring (ring.h) this node is on; empty when it does not speak the ring.
  const Ring& ring() const;
  const Gossip& gossip() const { return gossip_; }
  std::vector<PeerStatus> Peers() const;
  std::optional<PeerStatus> Peer(const election::NodeName& node) const;

 private:
  Engine(EngineOptions options, KeyRing keys, std::unique_ptr<election::Sha256Hasher> hasher);
  void PeersChanged() { peers_dirty_ = true; }
  void Refresh();             // rebuilds the ring and the detector's peers if the peers changed
  PeerTable& MutablePeers();  // peers_, copied first if shared
  Heartbeat MakeHeartbeat(SteadyTime now);
  void SplitWindows();
  void Drop(DropReason r, const Endpoint& from, const std::string& detail, SteadyTime now);
  bool OnReport(std::span<const std::uint8_t> datagram, const Endpoint& from, SteadyTime now);
  void MakeReport(const PeerStatus& subject, ReportKind kind);
  void Flood(const std::vector<std::uint8_t>& bytes);
  void FloodHeld(const election::NodeName& subject);  // and forgets them
  void SendToMonitors(const election::NodeName& subject,
                      std::span<const election::NodeName> monitors,
                      const std::vector<std::uint8_t>& bytes);
  // The override of a ring member without a detector verdict, from the gossip: dead on a standing
  // verdict (gossip.h), else live while `keep_alive` (this node's lease is failing: an API outage,
  // and the member is not a heartbeat peer), else none (its lease decides).
  std::optional<election::LivenessOverride> GossipOverride(const election::NodeName& node,
                                                           bool keep_alive, SteadyTime now) const;

  EngineOptions options_;
  KeyRing keys_;
  std::unique_ptr<election::Sha256Hasher> hasher_;
  Detector detector_;
  ReplayGuard replay_;
  // Never null; the ring holds this node if options_.ring (ring_self, or its own lease when
  // shared), rebuilt by Refresh.
  std::shared_ptr<PeerTable> peers_;
  // The peers changed since the ring and the detector's peers were last made to match: a lease
  // informer delivering N leases at start costs one rebuild, not N.
  bool peers_dirty_ = false;
  Gossip gossip_;
  std::vector<Outgoing> pending_reports_;  // sent by the next Poll
  // Dead reports about a subject, by subject, that this node (one of its monitors) made or
  // received from a fellow monitor but did not flood: one monitor's suspicion condemns nobody
  // (gossip.h), so it goes to the other monitors only. When a second monitor's report makes the
  // verdict here, all of them are flooded; an alive report ends them. A lone monitor losing three
  // heartbeats in a row (a few times a second on a 5,000-node segment at 1 % loss) then costs 3
  // datagrams, not a flood over the whole segment.
  struct Held {
    std::vector<std::vector<std::uint8_t>> reports;
    bool own = false;  // this node's own report is among them
  };
  std::map<election::NodeName, Held> held_;
  // Heartbeat peers this node dropped when its view of the ring changed, with the time until
  // which it still sends them heartbeats (kLingerAfterRingChange): their own view may change a
  // moment later, and until then they expect to hear this node.
  std::map<election::NodeName, SteadyTime> lingering_;
  SteadyTime last_now_{};  // of the last Poll: when a ring change happened, near enough
  std::set<election::NodeName> overridden_;
  std::vector<net::IpAddress> announced_;  // ascending
  // announced_ split in windows that fit in one datagram each (wire.h); sent in turn.
  std::vector<std::vector<net::IpAddress>> windows_{1};
  std::size_t next_window_ = 0;
  std::uint64_t sequence_ = 0;
  bool eligible_ = true;
  bool starting_ = true;  // see starting()
  bool link_up_ = true;
  bool leaving_ = false;
  bool send_now_ = true;
  std::optional<SteadyTime> next_send_;
  std::mt19937_64 jitter_;
  std::uint64_t leaving_rounds_ = 0;
  HeartbeatStats stats_;
  SteadyTime last_bad_mac_log_{};
  std::uint64_t bad_mac_logged_ = 0;
};

}  // namespace pylon::heartbeat
