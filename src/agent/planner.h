// The agent's decision core: from this node's network, the in-force config, the Services (with
// ingress addresses and EndpointSlices), the L2Advertisements, membership and the election,
// computes which addresses this node holds and which Kubernetes writes it owes.
//
// Rules (docs/design.md "Announcement"):
//  - An address is local when some known member's lease subnets (or this node's own subnets)
//    contain it: one winner among live members on that subnet (election::Elector, sticky on the
//    announcer recorded in the L2Advertisement or the Service's announcing annotation). Only the
//    winner holds it, on the interface whose subnet contains it, with the subnet's prefix length.
//  - Otherwise it is virtual (ServiceGroups only): held on kube-lb0 on every node with the pool
//    entry's aggregation length, or, with externalTrafficPolicy Local (and the address not shared),
//    only while this node has a ready local endpoint. A lace-class address is never virtual: that
//    is an error on the Service.
//  - externalTrafficPolicy Local on a local address: EtpLocalMode::kReset makes the winner reset
//    the Service to Cluster; kElect restricts the candidates to nodes with a usable local endpoint
//    (for every Local Service sharing the address).
//  - `purelb.io/node-affinity: service-endpoints` (PureLB 0.17) on a Service that alone holds a
//    local address (not shared): the election runs among the live candidates on its subnet that
//    host a ready or serving endpoint of the address's family; with none, the plain election
//    (counted in Plan::affinity_fallbacks). An ETP Local restriction (kElect) takes precedence.
//  - Unhealthy (lease renewals failing for the renew deadline): no local address and no writes;
//    virtual addresses stay (they never conflict between nodes). Shutting down: nothing at all.
//  - Writes are level-based and only where the observed value differs: the announcing annotation
//    on every Service of an address this node wins ("<node>,<interface>", or for a purelb.io/v2
//    group its "<node>,<interface>,<ip>" entry, model/announcing.h); L2Advertisement upserts
//    for won lace addresses; deletion of L2Advertisements whose address left every lace Service.
//  - During the start-up hold-off (PlanInputs::hold_off) no new local address is taken.
//  - Problems (no live node on a subnet, lace address off every subnet) are reported once per
//    distinct message by one reporter (the live member with the lowest name), not on every pass.
//
// One Compute runs these phases in order (planner.cc; the pure steps in planner_steps.h):
//  1. Start: count the live members, pick the problem reporter, group the Services by address.
//  2. Classify each address. Local (on a member's or this node's subnet): hand the elector its
//     spec (the recorded announcer for stickiness; the ETP Local or node-affinity candidates).
//     Virtual: decide its kube-lb0 address now. A local-only address on no subnet: report it.
//  3. Elect: drop the addresses that left, apply the excluded nodes, evaluate, count moves.
//  4. Decide each local address: kept through a restart, no live node (report), another node's,
//     held back (hold-off, unseen announcer), or won: the address and the writes it owes
//     (announcing annotations, ETP reset, L2Advertisement).
//  5. Clean up (healthy only): announcing annotations naming this node for a family the Service
//     lost, and L2Advertisements whose address left every lace Service.
//  6. Finish: collect the patches, sort the addresses, forget the problems that went away.
//
// Not thread-safe; pure (no clock, no I/O).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/takeover.h"
#include "agent/types.h"
#include "common/clock.h"
#include "common/result.h"
#include "config/validate.h"
#include "election/elector.h"
#include "election/membership.h"
#include "model/announcing.h"

namespace pylon::agent {

namespace planner_steps {
struct AddressGroup;
}

struct PlannerOptions {
  NodeName self;
  EtpLocalMode etp_mode = EtpLocalMode::kReset;
  election::Stickiness stickiness = election::Stickiness::kSticky;
};

struct PlanInputs {
  const NodeNetwork* network = nullptr;
  const config::InForceConfig* config = nullptr;
  const std::vector<ServiceInput>* services = nullptr;
  const std::vector<L2Advertisement>* l2advertisements = nullptr;
  bool healthy = true;
  bool shutting_down = false;
  // Start-up hold-off: keep local addresses this node already holds and wins, but take no new
  // ones (and write nothing for them) yet. Agents starting together would otherwise each win
  // everything for the moment before they see each other's leases.
  bool hold_off = false;
  // Local addresses this node holds now (read when hold_off is set); null = none.
  const std::set<net::IpAddress>* held = nullptr;
  // Start-up: a local address whose recorded announcer (annotation, L2Advertisement) is another
  // node of which this agent has seen no lease at all is not taken (unless held): that node's
  // agent may simply not have written its lease yet (agents starting together, a migration from
  // PureLB). The agent sets this for a lease duration after it first became healthy; after that an
  // announcer never seen is dead, as before.
  bool defer_to_unseen_announcers = false;
  // Start-up of an agent that found addresses of its predecessor on the node (an agent restart):
  // until this node is healthy and elected (its lease renewed, its kube-proxy check passed), these
  // local addresses (recorded as ours and present on the NIC at start) stay and are renewed
  // whatever health and the election say, with no writes for them, so a restart does not
  // withdraw what the node still serves. Peers defer to the node meanwhile (takeover.h). The agent
  // sets it for a bounded time after start (agent.cc). Null = none.
  const std::set<net::IpAddress>* keep = nullptr;
  // Nodes that may not win anything: leaving load balancing (LeavingLoadBalancing in
  // lifecycle.h: deleted, the exclude label, the out-of-service or autoscaler taint, shutting
  // down). Null = none.
  const std::vector<NodeName>* excluded_nodes = nullptr;
  // What the agent knows of other nodes beyond their leases, for the successor's wire check
  // (takeover.h): per node `leaving`, `restarting`, `kube_proxy_url` and `last_alive` (its last
  // heartbeat); the Reconciler adds what the Membership says. Null = nothing more known.
  const std::map<NodeName, HolderSigns>* peer_signs = nullptr;
};

struct Plan {
  std::vector<DesiredAddress> addresses;  // ascending by address
  std::vector<AnnotationPatch> annotation_patches;
  std::vector<ServiceRef> etp_resets;
  std::vector<L2Advertisement> l2_upserts;
  std::vector<std::string> l2_deletes;
  std::vector<ServiceEvent> events;  // newly found problems (warnings)
  bool virtual_in_use = false;       // some address on the virtual interface
  std::size_t live_members = 0;
  std::uint64_t winner_changes = 0;  // winners that moved from one node to another this pass
  // Addresses whose node-affinity found no live candidate with an endpoint and fell back to the
  // plain election, counted when they enter that state.
  std::uint64_t affinity_fallbacks = 0;
};

class Planner {
 public:
  static Result<Planner> Create(PlannerOptions options);
  Planner(PlannerOptions options, election::Elector elector);

  Plan Compute(const PlanInputs& in, const election::Membership& membership, SteadyTime now);

  const election::Elector& elector() const { return elector_; }
  const PlannerOptions& options() const { return options_; }

 private:
  struct Pass;  // one Compute: its inputs and what it has decided so far (planner.cc)

  // The phases, in the order Compute runs them (the numbered list above).
  Pass Start(const PlanInputs& in, const election::Membership& membership, SteadyTime now) const;
  void ClassifyAddresses(Pass& pass);
  void Elect(Pass& pass);
  void DecideLocal(Pass& pass, const net::IpAddress& address);
  void CleanUp(Pass& pass) const;
  Plan Finish(Pass& pass);

  // Parts of phases 2 and 4.
  using Group = planner_steps::AddressGroup;
  void ElectLocal(Pass& pass, const net::IpAddress& address, const Group& group);
  void ReportOffSubnet(Pass& pass, const net::IpAddress& address, const Group& group,
                       bool lace_class);
  void AddVirtual(Pass& pass, const net::IpAddress& address, const Group& group,
                  const config::AddressMatch* match);
  void ClaimWon(Pass& pass, const net::IpAddress& address, const Group& group,
                const std::string& interface) const;

  bool IsLocalClass(const net::IpAddress& address, const NodeNetwork& network,
                    const election::Membership& membership);
  // Records the problem as seen this pass; adds a warning event when this node is the reporter
  // and the problem is new.
  void Report(Pass& pass, const model::Service& service, const std::string& reason,
              const std::string& message);

  PlannerOptions options_;
  election::Elector elector_;
  std::set<net::IpAddress> elected_;  // addresses currently given to the elector
  std::set<std::string> reported_;    // problems already reported ("ns/name|message")
  // Subnets of every member, rebuilt when the membership generation changes.
  std::uint64_t subnets_generation_ = ~std::uint64_t{0};
  std::vector<net::Prefix> member_subnets_;
  std::set<net::IpAddress> affinity_fallback_;  // node-affinity addresses in fallback last pass
};

}  // namespace pylon::agent
