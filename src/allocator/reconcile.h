// The reconcile core of the allocator, MetalLB style: a pure function from (Service view,
// in-force config, pool state) to a Decision. It drives the pool state machine (Assign/Release)
// and decides status, annotations, condition and events; it does no I/O. The controller calls it
// from its single worker thread and turns the Decision into writes (service_writes.h).
// It runs in named phases (reconcile_phases.h: owner, request, conflicts, allocation); the concepts
// it uses have their own headers: group_resolution.h, conflict_book.h, multi_pool.h, and rebuild.h
// (the pool state at a start).
//
// Rules (docs/design.md "Which Services are Pylon's", "Allocation"):
//   - type LoadBalancer, class lace-cni.io/<name> -> LoadBalancerClass <name>; class
//     purelb.io/purelb, purelb.io/purelbv2 or none -> the ServiceGroup ResolveServiceGroup picks
//     (group_resolution.h)
//     (purelb.io/service-group, else by namespace, else "default") in the install namespace; any
//     other class, or another type -> not Pylon's (its addresses, if it held any, are released; a
//     foreign-class Service is never written to).
//   - families from ipFamilies/ipFamilyPolicy limited to the families the pools offer; requested
//     addresses (lace annotation, purelb.io/addresses, else spec.loadBalancerIP) claimed exactly;
//     sharing by purelb.io/allow-shared-ip with disjoint (protocol, port) sets.
//   - a Service that holds nothing yet but shows addresses in its status keeps them when they are
//     still valid and free (restart, adoption of PureLB-branded Services).
//   - any refusal releases everything the Service held: no half-allocation. Except that a group or
//     class not in force (deleted, invalid, not served) never takes addresses away: a Service that
//     shows addresses from it keeps them (Outcome::kKept) until it asks otherwise itself.
//   - events are decided against what the Service shows (status, condition), so re-running the
//     reconcile on an unchanged Service decides no event and no write.
//   - multi-pool (PureLB v2, MultiPoolInEffect): one address per active range of each family
//     (ActiveEntry); held addresses are kept, newly active ranges add one on a later reconcile.
//   - an address the agents report in conflict (annotations conflict.purelb.io/<address>, a
//     foreign host answered the duplicate-address probe) is kept out of the pool for
//     ReconcileContext::conflict_hold and the Service gets another one; a Service that requested
//     that very address is refused (AddressConflict) for as long, and gets nothing else.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "allocator/conflict_book.h"
#include "allocator/decision.h"
#include "allocator/node_subnets.h"
#include "common/clock.h"
#include "config/validate.h"
#include "model/service.h"
#include "pool/allocator.h"

namespace pylon::allocator {

struct ReconcileContext {
  std::string install_namespace = "purelb-system";  // where ServiceGroups are read
  // How long an address reported in conflict (conflict.purelb.io/<address>, written by the agent
  // whose duplicate-address probe a foreign host answered) stays out of the pool, counted from
  // the time in the report. A Service that requested it stays refused as long; then the address
  // is tried again (and probed again by the agent).
  std::chrono::nanoseconds conflict_hold = std::chrono::minutes(5);
};

struct ServiceInput {
  const model::Service* service = nullptr;  // required
  // Pylon's condition as the Service currently shows it, if any.
  std::optional<Condition> current_condition;
  // Address conflicts: null = the annotation is ignored. `now` judges their hold.
  ConflictBook* conflicts = nullptr;
  WallTime now{};
  // The live node subnets, for multi-pool on local ServiceGroups; null = none live.
  const NodeSubnets* node_subnets = nullptr;
};

// Reconciles one existing Service. Mutates `pool` (the caller's single pool state).
Decision Reconcile(const ServiceInput& in, const config::InForceConfig& config,
                   pool::Allocator& pool, const ReconcileContext& ctx);

// The Service no longer exists: frees what it held (and the conflict reservations only it kept).
// Never decides writes or events.
Decision ReconcileGone(const pool::ServiceKey& key, pool::Allocator& pool,
                       ConflictBook* conflicts = nullptr);

// True if the Service is Pylon's to allocate for (type LoadBalancer, Pylon's class, not being
// deleted).
bool IsPylons(const model::Service& svc);

// Go's %+v of a LoadBalancerStatus, as PureLB's AddressAssigned event shows it (docs/seeds.md):
// "{Ingress:[{IP:192.168.10.226 Hostname: Ports:[]} {IP:fc00:270:154:0:8000::5 Hostname:
// Ports:[]}]}".
std::string FormatIngressGo(const std::vector<net::IpAddress>& ips);

}  // namespace pylon::allocator
