// HeartbeatService: the running failure detector of one agent: the Engine (engine.h, the logic)
// behind a lock, with the UDP socket, the thread that sends and receives, and the announcing
// link followed through netlink. The agent's loop reads the results: overrides for its
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

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/worker.h"
#include "election/membership.h"
#include "election/node_name.h"
#include "heartbeat/config.h"
#include "heartbeat/detector.h"
#include "heartbeat/endpoints.h"
#include "heartbeat/engine.h"
#include "heartbeat/keyring.h"
#include "heartbeat/policy.h"
#include "heartbeat/udp_socket.h"
#include "netlink/netlink.h"

namespace pylon::heartbeat {

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
  // A node lease seen by the informer: its purelb.io/heartbeat annotation (empty: none), whether
  // it speaks the ring (ring.h kRingAnnotation), or its deletion. Returns problems with the
  // annotation, reported only when the value changes (Engine::ObservePeerLease).
  std::vector<std::string> ObservePeerLease(const election::NodeName& node,
                                            std::string_view annotation, bool deleted,
                                            bool ring = false);
  // Replaces every peer and its endpoints at once (alternative to ObservePeerLease).
  void SetPeers(std::map<election::NodeName, std::vector<Endpoint>> peers);
  // The addresses this node announces now (after yielding). A change is sent at once.
  void SetAnnounced(std::vector<net::IpAddress> addresses);
  // Whether this node is fit to announce (Sync sets it: healthy and ready). Sent as the inverse
  // of kNotEligible; a change is sent at once.
  void SetEligible(bool eligible);
  // Overrides the link state (used when no Netlink was given, or by tests; Engine::SetLinkUp).
  void SetLinkUp(bool up);
  // Graceful shutdown: every heartbeat from now on carries `leaving`; returns once one such round
  // has been sent (or after `timeout`). Call after withdrawing the addresses.
  void Leave(Duration timeout = std::chrono::seconds(1));

  // --- outputs -------------------------------------------------------------------------------
  // What the agent knows that the service does not, for one pass (engine.h).
  using PassInputs = Engine::PassInputs;
  using PassResult = Engine::PassResult;
  // Once per agent pass, before the election, with the Membership lock held: Engine::Sync at the
  // clock's now.
  PassResult Sync(election::Membership& membership, const PassInputs& in);
  // Engine::JudgeSelf and Engine::AddressesToYield at the clock's now.
  SelfHealth JudgeSelf(bool lease_healthy, bool lease_only_members) const;
  std::vector<net::IpAddress> AddressesToYield(std::span<const net::IpAddress> mine);
  // Engine::LocalEndpoints with the bound port.
  std::vector<Endpoint> LocalEndpoints(std::span<const net::IpAddress> node_addresses) const;

  bool link_up() const;
  std::uint64_t boot_id() const { return boot_id_; }
  std::uint16_t port() const;
  HeartbeatStats stats() const;
  std::vector<PeerStatus> Peers() const;
  std::optional<PeerStatus> Peer(const election::NodeName& node) const;
  // Nodes with heartbeat endpoints that do not speak the ring (Engine::legacy_peers).
  std::size_t LegacyPeers() const;

 private:
  HeartbeatService(ServiceOptions options, ServiceDeps deps, OnChange on_change, Engine engine);
  void Run();
  void Wake();
  void SendRound(SteadyTime now) PYLON_REQUIRES(mu_);
  bool DrainSocket(SteadyTime now) PYLON_REQUIRES(mu_);  // returns whether to notify
  bool DrainLinkEvents() PYLON_REQUIRES(mu_);
  bool ApplyLink(bool up, std::string why) PYLON_REQUIRES(mu_);
  void LogTransitions(const std::vector<Transition>& t) const;

  const ServiceOptions options_;
  const Clock& clock_;
  std::unique_ptr<netlink::Netlink> netlink_;
  OnChange on_change_;
  const std::uint64_t boot_id_;

  mutable Mutex mu_;
  std::condition_variable sent_cv_;
  Engine engine_ PYLON_GUARDED_BY(mu_);

  std::vector<std::uint8_t> rx_buffer_;  // service thread only
  std::optional<UdpSocket> socket_;
  std::unique_ptr<netlink::EventSource> link_events_;
  int ifindex_ = 0;
  UniqueFd wake_fd_;
  Worker worker_;  // Run; its waker writes wake_fd_ (last: stops first)
};

}  // namespace pylon::heartbeat
