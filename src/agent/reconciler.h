// One pass of the agent: plan (Planner), make the kernel match (AddressSync), announce newly
// taken local addresses (GarpScheduler + packet::Announcer), and hand the Kubernetes writes to the
// ClusterWriter, with an AnnouncingLocal event for each local address actually added.
// From the first time virtual addresses are in use it also checks the node's sysctls they need
// (node_sysctls.h: strict ARP on the LAN interfaces, promote_secondaries on kube-lb0): with
// Linux's defaults every node would answer ARP for kube-lb0's addresses on the LAN
// (docs/references.md). Where /proc/sys is writable it sets a missing value (once per change of
// what is missing; never flipped back as Services come and go); either way it reports each change
// of the verdict once: a log line, purelb_strict_arp_ok / purelb_promote_secondaries_ok, and
// PassResult::node_report for the Node event. Errors and deferred withdrawals of the address
// sync are logged when they first appear, not on every pass.
//
// Threading: one thread (the agent loop). All collaborators are borrowed.
//
// Implementation: reconciler.cc (the pass, announcements, metrics), reconciler_probes.cc
// (duplicate-address detection: probes, probe ahead, claims, the conflict annotation),
// reconciler_takeover.cc (holders, the successor's wire check, moves).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "agent/address_sync.h"
#include "agent/conflicts.h"
#include "agent/drain.h"
#include "agent/garp.h"
#include "agent/node_sysctls.h"
#include "agent/planner.h"
#include "agent/probe_ahead.h"
#include "agent/prober.h"
#include "agent/takeover.h"
#include "agent/wire_check.h"
#include "agent/writer.h"
#include "common/clock.h"
#include "metrics/registry.h"
#include "model/conflicts.h"
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
  // Duplicate-address detection (conflicts.h). Null prober: addresses are taken unprobed. Null
  // claims: foreign claims on held addresses are not watched.
  Prober* prober = nullptr;
  ClaimSource* claims = nullptr;
  packet::ProbeOptions probe{};  // its `ignore` is filled per probe from the membership
  ProbeGateOptions gate{};
  ClaimOptions claim{};
  // Probe ahead (probe_ahead.h): background probes of the addresses the allocator hands out next.
  // Null: off (every first announcement waits for the full probe). Needs `prober` too.
  Prober* background = nullptr;
  ProbeAheadOptions ahead{};
  // The short probe run in parallel with the announcement of a pre-probed address.
  packet::ProbeOptions verify{1, std::chrono::milliseconds(40), {}};
  // How often the node's sysctls are read again while the interfaces stay the same.
  Duration sysctl_recheck = std::chrono::seconds(30);
  // The successor's wire check before a takeover (takeover.h). Null: takeovers are immediate.
  WireChecker* wire = nullptr;
  TakeoverGateOptions takeover{};
  // The drain of planned moves (drain.h): how long established TCP flows through an address
  // taken from an excluded, live holder are forwarded to it (0: no drain), and what writes the
  // forwarding table (the agent's nftables; empty: no drain).
  Duration drain_timeout{0};
  std::function<Status(std::string_view)> apply_drain_ruleset{};
};

// Given the local addresses this pass elected for this node, the ones it must not announce
// (heartbeat split-brain resolution: HeartbeatService::AddressesToYield).
using YieldFn = std::function<std::vector<net::IpAddress>(std::span<const net::IpAddress>)>;

// An event for the Node object (the agent's adapter records it: kubectl describe node).
struct NodeReport {
  bool warning = true;
  std::string reason;
  std::string message;
};

struct PassResult {
  Plan plan;
  SyncReport sync;
  // Set when the node-sysctl verdict changed to missing something, or back to complete.
  std::optional<NodeReport> node_report;
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
  // Starts an announcement burst for every local address held now (after the last Run) and sends
  // what is due. For when this node was cut off (heartbeats: it heard no peer, e.g. frozen or
  // partitioned) and hears its peers again: another node may have taken and announced an address
  // meanwhile that this node still holds or keeps (split-brain resolved in its favour), so the
  // neighbours' caches may point at that node; an address held throughout is never "added" again,
  // so nothing else would announce it.
  void ReannounceHeld();
  // Takes the claims the ClaimSource saw on held addresses and reports the foreign ones (event
  // on the Services, log, metric) and defends the address with one announcement burst. Also
  // called by Run.
  void HandleClaims(const election::Membership& membership);
  // The last node-sysctl verdict; nullopt before virtual addresses were first in use.
  const std::optional<NodeSysctlVerdict>& NodeSysctls() const { return sysctls_.current(); }
  // Removes the drain's forwarding table, whatever it holds (at start: a predecessor's; at a
  // graceful stop: this agent's). No-op without a drain.
  void ClearDrains();
  // Probe ahead: the addresses the allocator will hand out next (every ServiceGroup's
  // status.probeAhead) and those another live member published as proven free
  // (model/probe_ahead.h). Used by the next Run.
  void SetProbeAhead(std::vector<net::IpAddress> candidates,
                     std::set<net::IpAddress> free_elsewhere);
  // What this node found probing ahead (for its lease annotation).
  std::vector<model::ProbedAddress> ProbeAheadFindings() const;
  // Addresses withheld because a foreign host answered their probe.
  std::vector<FoundConflict> ProbeConflicts() const { return gate_.Conflicts(); }
  // The earliest instant something time-driven is due: an announcement, an address renewal, a
  // member's lease expiry. nullopt when nothing is.
  std::optional<SteadyTime> NextWakeup(const election::Membership& membership) const;

 private:
  // The steps of Run, in order.
  // Withholds from `plan` the local addresses `yield` gives up (heartbeat split-brain
  // resolution); logs those newly yielded. Returns them.
  std::set<net::IpAddress> ApplyYield(Plan& plan, const YieldFn& yield);
  // Logs what the sync added and withdrew; schedules (cancels) the announcements of local
  // addresses and records an AnnouncingLocal event for each of their Services.
  void ReportSyncChanges(const SyncReport& sync, SteadyTime now);
  // Logs and records a node event for each conflict the previous pass did not report.
  void ReportConflicts(const SyncReport& sync);
  // Hands the plan's writes to the ClusterWriter, then ends its pass.
  void WritePlan(const Plan& plan);
  // Rebuilds held_local_; every --reannounce-interval schedules a burst for each held address
  // not added in this pass.
  void UpdateHeld(const Plan& plan, const SyncReport& sync, SteadyTime now);
  void CheckNodeSysctls(const NodeNetwork& network, PassResult& r);
  // Logs the sync's errors and deferred withdrawals that the previous pass did not report.
  void ReportSyncProblems(const SyncReport& sync);
  void UpdateMetrics(const PassResult& r);
  // Probes before first announcement: removes from the plan what must wait or is in conflict.
  void GateProbes(const PlanInputs& in, const election::Membership& membership, Plan& plan,
                  SteadyTime now);
  // Probe ahead: elects, schedules and collects the background probes.
  void RunProbeAhead(const PlanInputs& in, const election::Membership& membership, const Plan& plan,
                     SteadyTime now);
  packet::ProbeOptions WithMemberMacs(packet::ProbeOptions opts,
                                      const election::Membership& membership) const;
  // Starts a probe of each target with `opts` (logged as `what`); a target whose interface has
  // no MAC fails at once. Returns how many started.
  int StartProbes(const std::vector<ProbeTarget>& targets, const packet::ProbeOptions& opts,
                  SteadyTime now, std::string_view what);
  // Makes the conflict annotation of `address` on `services` show `entry` (nullopt: absent).
  void SetConflictAnnotation(const PlanInputs& in, const std::vector<std::string>& services,
                             const net::IpAddress& address,
                             const std::optional<model::AddressConflict>& entry);
  std::optional<net::MacAddress> InterfaceMac(const std::string& interface) const;
  // What is known of every other member (Membership + PlanInputs::peer_signs).
  std::map<NodeName, HolderSigns> Holders(const PlanInputs& in,
                                          const election::Membership& membership,
                                          SteadyTime now) const;
  // The successor's wire check: withholds takeovers from holders that still answer; records
  // the reason of each takeover allowed (move_reasons_).
  void GateTakeovers(const std::map<NodeName, HolderSigns>& holders, Plan& plan, SteadyTime now);
  // The drain (drain.h): starts forwarding for the planned moves this pass takes, ends what is due
  // or no longer held, and writes the table when that changed. Before the sync adds the
  // addresses: the table is in place before the first announcement.
  void UpdateDrains(const std::map<NodeName, HolderSigns>& holders, const Plan& plan,
                    SteadyTime now);
  // Counts and reports (event AddressMoved) the takeovers the sync just made.
  void ReportMoves(const SyncReport& sync, const std::map<NodeName, HolderSigns>& holders);

  ReconcilerDeps d_;
  NodeSysctlCheck sysctls_;
  bool virtual_seen_ = false;  // virtual addresses were in use once: check the sysctls from then
  std::set<std::string> reported_errors_;    // sync errors of the last pass (logged on entry)
  std::set<std::string> reported_deferred_;  // deferred withdrawals of the last pass
  std::set<std::string> reported_conflicts_;
  std::vector<DesiredAddress> held_local_;  // local addresses of the last plan that are owned
  std::optional<SteadyTime> next_reannounce_;
  std::set<net::IpAddress> yielded_;  // yielded by the last pass (logged on entry only)
  ProbeGate gate_;
  TakeoverGate takeover_;
  std::map<net::IpAddress, MoveReason> move_reasons_;  // allowed by the last GateTakeovers
  ClaimTracker claim_tracker_;
  ProbeAhead ahead_;
  DrainBook drains_;
  bool drain_write_failed_ = false;  // the last table write failed: write again next pass
  std::optional<election::Elector> ahead_elector_;  // own instance: candidates are not Services
  std::set<net::IpAddress> ahead_elected_;          // addresses set in ahead_elector_
  std::vector<net::IpAddress> ahead_candidates_;
  std::set<net::IpAddress> ahead_free_elsewhere_;
  std::uint64_t ahead_probes_reported_ = 0;
  std::uint64_t ahead_conflicts_reported_ = 0;
  // The annotation entry of each address withheld for a conflict (kept while it lasts).
  std::map<net::IpAddress, model::AddressConflict> conflict_entries_;
};

// Removes `addresses` from the plan together with what announcing them implies: their
// announcing-annotation values and L2Advertisement upserts (a withheld address must not be
// recorded as announced: that would make its next attempt look like a takeover).
void WithholdFromPlan(Plan& plan, const std::set<net::IpAddress>& addresses);

// The MACs of every member node (lower case), from their `purelb.io/macs` lease annotations.
std::set<std::string> MemberMacs(const election::Membership& membership);

}  // namespace pylon::agent
