// HeartbeatService: the running failure detector of one agent. One thread sends this node's
// heartbeat to every peer endpoint each interval (and at once when what it says changes),
// receives, authenticates and replay-checks the peers' heartbeats, runs the Detector, and follows
// the announcing link through netlink. The agent's loop reads the results: overrides for its
// Membership, its own health, the addresses to yield in a split.
//
// Threading: every public method is thread-safe. `on_change` runs with no service lock held, on
// the service thread (a peer changed state, a peer's address list, flags or boot id changed, the
// link changed) or on the caller of SetLinkUp; it should only wake the agent's loop, which then
// calls the outputs below.
//
// Wiring recipe (see docs/failover.md, "Wiring in the agent"):
//   start:   Create(...) then Start(); publish FormatEndpoints(service.LocalEndpoints(...)) in
//            the node lease annotation purelb.io/heartbeat.
//   lease informer event: ObservePeerLease(node, annotation, deleted).
//   each pass (with the Membership lock held): r = Sync(membership, {lease_healthy, false,
//            ready}); healthy = r.health == kHealthy; elect; local = election result minus
//            AddressesToYield(local); after applying: SetAnnounced(actual).
//   wake-ups: on_change, and NextExpiry of the Membership as before.
//   shutdown: withdraw addresses, Leave(), delete the lease, Stop().
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/mutex.h"
#include "common/result.h"
#include "election/hash.h"
#include "election/membership.h"
#include "election/node_name.h"
#include "heartbeat/config.h"
#include "heartbeat/detector.h"
#include "heartbeat/endpoints.h"
#include "heartbeat/keyring.h"
#include "heartbeat/policy.h"
#include "heartbeat/replay.h"
#include "heartbeat/split_brain.h"
#include "heartbeat/udp_socket.h"
#include "heartbeat/wire.h"
#include "netlink/netlink.h"

namespace pylon::heartbeat {

// How long past its detection bound a kAlive override may outlive the detector's last word: a
// safety net (the service thread stuck) that never shortens failover, since the detector moves a
// quiet peer out of kAlive exactly at its bound and `on_change` triggers the re-sync.
inline constexpr Duration kAliveOverrideSlack = std::chrono::seconds(5);

struct ServiceOptions {
  election::NodeName node;  // this node
  HeartbeatConfig config;   // interval, miss count, port (0: ephemeral), datagram limit
  // The device the socket binds to and whose link state is followed (config.interface if set,
  // else the announcing interface). Empty: no binding, link assumed up (tests on loopback).
  std::string interface;
  std::optional<std::uint64_t> boot_id;  // random (RAND_bytes) when unset
};

struct ServiceDeps {
  const Clock* clock = nullptr;  // required; the system clock in production
  // Optional and owned: a Netlink instance for the service thread alone (Netlink is one thread
  // at a time), opened in the node's network namespace. Without it, SetLinkUp drives link state.
  std::unique_ptr<netlink::Netlink> netlink;
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
  std::uint64_t dropped_total() const;
};

class HeartbeatService {
 public:
  using OnChange = std::function<void()>;

  // Validates the options; opens nothing yet.
  static Result<std::unique_ptr<HeartbeatService>> Create(ServiceOptions options, KeyRing keys,
                                                          ServiceDeps deps, OnChange on_change);
  ~HeartbeatService();
  HeartbeatService(const HeartbeatService&) = delete;
  HeartbeatService& operator=(const HeartbeatService&) = delete;

  // Opens the socket (in the calling thread's network namespace), reads the link state,
  // subscribes to link events, starts the thread. Fails if the port is taken or the device
  // cannot be bound.
  Status Start();
  // Stops the thread and closes the socket. Idempotent. (Start once per instance: to change the
  // interface, create a new service; peers see a new boot id.)
  void Stop();

  // --- inputs --------------------------------------------------------------------------------
  // A node lease seen by the informer: its purelb.io/heartbeat annotation (empty: none) or its
  // deletion. Returns problems with the annotation, reported only when the value changes.
  std::vector<std::string> ObservePeerLease(const election::NodeName& node,
                                            std::string_view annotation, bool deleted);
  // Replaces every peer and its endpoints at once (alternative to ObservePeerLease).
  void SetPeers(std::map<election::NodeName, std::vector<Endpoint>> peers);
  // The addresses this node announces now (after yielding). A change is sent at once.
  void SetAnnounced(std::vector<net::IpAddress> addresses);
  // Whether this node is fit to announce (Sync sets it: healthy and ready). Sent as the inverse
  // of kNotEligible; a change is sent at once.
  void SetEligible(bool eligible);
  // Overrides the link state (used when no Netlink was given, or by tests).
  void SetLinkUp(bool up);
  // Graceful shutdown: every heartbeat from now on carries `leaving`; returns once one such round
  // has been sent (or after `timeout`). Call after withdrawing the addresses.
  void Leave(Duration timeout = std::chrono::seconds(1));

  // --- outputs -------------------------------------------------------------------------------
  // What the agent knows that the service does not, for one pass.
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
  // Once per agent pass, before the election, with the Membership lock held: judges this node's
  // health (policy.h JudgeSelf), publishes it to peers (kNotEligible unless healthy and ready),
  // and makes `membership`'s overrides match the detector (SyncOverrides) and this node's health
  // (SyncSelfOverride, ttl kAliveOverrideSlack).
  PassResult Sync(election::Membership& membership, const PassInputs& in);
  // This node's health (policy.h JudgeSelf) with the lease inputs the agent knows.
  SelfHealth JudgeSelf(bool lease_healthy, bool lease_only_members) const;
  // Addresses of `mine` this node must stop announcing now (split_brain.h).
  std::vector<net::IpAddress> AddressesToYield(std::span<const net::IpAddress> mine);
  // The endpoints to publish in this node's lease annotation, for the given node addresses
  // (e.g. its primary IPv4 and IPv6 on the announcing interface), with the bound port.
  std::vector<Endpoint> LocalEndpoints(std::span<const net::IpAddress> node_addresses) const;

  bool link_up() const;
  std::uint64_t boot_id() const { return boot_id_; }
  std::uint16_t port() const;
  HeartbeatStats stats() const;
  std::vector<PeerStatus> Peers() const;
  std::optional<PeerStatus> Peer(const election::NodeName& node) const;

 private:
  HeartbeatService(ServiceOptions options, KeyRing keys, ServiceDeps deps, OnChange on_change,
                   std::unique_ptr<election::Sha256Hasher> hasher);
  void Run();
  void Wake();
  bool SendRound(SteadyTime now) PYLON_REQUIRES(mu_);
  bool DrainSocket(SteadyTime now) PYLON_REQUIRES(mu_);  // returns whether to notify
  bool DrainLinkEvents() PYLON_REQUIRES(mu_);
  bool ApplyLink(bool up, std::string why) PYLON_REQUIRES(mu_);
  void PeersChanged() PYLON_REQUIRES(mu_);
  void LogTransitions(const std::vector<Transition>& t) const;
  Heartbeat MakeHeartbeat(SteadyTime now) PYLON_REQUIRES(mu_);
  void SplitWindows() PYLON_REQUIRES(mu_);

  const ServiceOptions options_;
  const KeyRing keys_;
  const Clock& clock_;
  std::unique_ptr<netlink::Netlink> netlink_;
  OnChange on_change_;
  std::unique_ptr<election::Sha256Hasher> hasher_;
  const std::uint64_t boot_id_;

  mutable Mutex mu_;
  std::condition_variable sent_cv_;
  Detector detector_ PYLON_GUARDED_BY(mu_);
  ReplayGuard replay_ PYLON_GUARDED_BY(mu_);
  std::map<election::NodeName, std::vector<Endpoint>> endpoints_ PYLON_GUARDED_BY(mu_);
  std::map<election::NodeName, std::string> annotations_ PYLON_GUARDED_BY(mu_);
  std::set<election::NodeName> overridden_ PYLON_GUARDED_BY(mu_);
  std::vector<net::IpAddress> announced_ PYLON_GUARDED_BY(mu_);  // ascending
  // announced_ split in windows that fit in one datagram each (wire.h); sent in turn.
  std::vector<std::vector<net::IpAddress>> windows_ PYLON_GUARDED_BY(mu_){1};
  std::size_t next_window_ PYLON_GUARDED_BY(mu_) = 0;
  std::uint64_t sequence_ PYLON_GUARDED_BY(mu_) = 0;
  bool eligible_ PYLON_GUARDED_BY(mu_) = true;
  bool link_up_ PYLON_GUARDED_BY(mu_) = true;
  bool leaving_ PYLON_GUARDED_BY(mu_) = false;
  bool send_now_ PYLON_GUARDED_BY(mu_) = true;
  std::uint64_t leaving_rounds_ PYLON_GUARDED_BY(mu_) = 0;
  HeartbeatStats stats_ PYLON_GUARDED_BY(mu_);
  SteadyTime last_bad_mac_log_ PYLON_GUARDED_BY(mu_){};
  std::uint64_t bad_mac_logged_ PYLON_GUARDED_BY(mu_) = 0;

  std::vector<std::uint8_t> rx_buffer_;  // service thread only
  std::optional<UdpSocket> socket_;
  std::unique_ptr<netlink::EventSource> link_events_;
  int ifindex_ = 0;
  UniqueFd wake_fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pylon::heartbeat
