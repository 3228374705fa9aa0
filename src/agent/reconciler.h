// One pass of the agent: plan (Planner), make the kernel match (AddressSync), announce newly
// taken local addresses (GarpScheduler + packet::Announcer), and hand the Kubernetes writes to the
// ClusterWriter, with an AnnouncingLocal event for each local address actually added.
// Also applies strict ARP (arp_ignore=1, arp_announce=2) on the LAN interfaces the first time
// virtual addresses are in use: with Linux's defaults every node would answer ARP for kube-lb0's
// addresses on the LAN (reference/linux-l2.md). The sysctls are left set afterwards (flipping them
// back and forth as Services come and go would be worse than keeping the strict setting).
//
// Threading: one thread (the agent loop). All collaborators are borrowed.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "agent/address_sync.h"
#include "agent/garp.h"
#include "agent/planner.h"
#include "agent/writer.h"
#include "common/clock.h"
#include "metrics/registry.h"
#include "netlink/netlink.h"
#include "packet/announcer.h"

namespace pylon::agent {

struct ReconcilerDeps {
  Planner* planner = nullptr;
  AddressSync* sync = nullptr;
  GarpScheduler* garp = nullptr;
  packet::Announcer* announcer = nullptr;
  netlink::Netlink* netlink = nullptr;
  ClusterWriter* writer = nullptr;
  metrics::Registry* metrics = nullptr;  // optional
  const Clock* clock = nullptr;
  // Re-send the announcement burst of every held local address this often (0 = never).
  Duration reannounce_interval{0};
};

// Given the local addresses this pass elected for this node, the ones it must not announce
// (heartbeat split-brain resolution: HeartbeatService::AddressesToYield).
using YieldFn = std::function<std::vector<net::IpAddress>(std::span<const net::IpAddress>)>;

struct PassResult {
  Plan plan;
  SyncReport sync;
};

class Reconciler {
 public:
  explicit Reconciler(ReconcilerDeps deps);

  // `yield` (optional) removes local addresses from the plan before it is applied.
  PassResult Run(const PlanInputs& in, const election::Membership& membership,
                 const YieldFn& yield = {});
  // The local addresses this node holds on the kernel now (after the last Run).
  std::vector<net::IpAddress> HeldLocal() const;
  // Sends the announcements due now (bursts started by earlier passes).
  void SendDueAnnouncements();
  // The earliest instant something time-driven is due: an announcement, an address renewal, a
  // member's lease expiry. nullopt when nothing is.
  std::optional<SteadyTime> NextWakeup(const election::Membership& membership) const;

 private:
  void ApplyStrictArp(const NodeNetwork& network);
  void UpdateMetrics(const PassResult& r);

  ReconcilerDeps d_;
  std::set<std::string> strict_arp_done_;
  std::set<std::string> reported_conflicts_;
  std::vector<DesiredAddress> held_local_;  // local addresses of the last plan that are owned
  std::optional<SteadyTime> next_reannounce_;
  std::set<net::IpAddress> yielded_;  // yielded by the last pass (logged on entry only)
};

}  // namespace pylon::agent
