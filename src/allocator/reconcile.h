// The reconcile core of the allocator, MetalLB style: a pure function from (Service view,
// in-force config, pool state) to a Decision. It drives the pool state machine (Assign/Release)
// and decides status, annotations, condition and events; it does no I/O. The controller calls it
// from its single worker thread and turns the Decision into writes (service_writes.h).
//
// Rules (DESIGN.md "Which Services are Pylon's", "Allocation"):
//   - type LoadBalancer, class lace-cni.io/<name> -> LoadBalancerClass <name>; class
//     purelb.io/purelb or none -> the ServiceGroup of purelb.io/service-group (else "default") in
//     the install namespace; any other class, or another type -> not Pylon's (its addresses, if
//     it held any, are released; a foreign-class Service is never written to).
//   - families from ipFamilies/ipFamilyPolicy limited to the families the pools offer; requested
//     addresses (lace annotation, purelb.io/addresses, else spec.loadBalancerIP) claimed exactly;
//     sharing by purelb.io/allow-shared-ip with disjoint (protocol, port) sets.
//   - a Service that holds nothing yet but shows addresses in its status keeps them when they are
//     still valid and free (restart, adoption of PureLB-branded Services).
//   - any refusal releases everything the Service held: no half-allocation.
//   - events are decided against what the Service shows (status, condition), so re-running the
//     reconcile on an unchanged Service decides no event and no write.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "allocator/decision.h"
#include "config/validate.h"
#include "model/service.h"
#include "pool/allocator.h"

namespace pylon::allocator {

struct ReconcileContext {
  std::string install_namespace = "purelb-system";  // where ServiceGroups are read
};

struct ServiceInput {
  const model::Service* service = nullptr;  // required
  // Pylon's condition as the Service currently shows it, if any.
  std::optional<Condition> current_condition;
};

// Reconciles one existing Service. Mutates `pool` (the caller's single pool state).
Decision Reconcile(const ServiceInput& in, const config::InForceConfig& config,
                   pool::Allocator& pool, const ReconcileContext& ctx);

// The Service no longer exists: frees what it held. Never decides writes or events.
Decision ReconcileGone(const pool::ServiceKey& key, pool::Allocator& pool);

// The pool key of a group or class in pool::Allocator: its ObjectKey text, e.g.
// "ServiceGroup purelb-system/localdual", "LoadBalancerClass public".
std::string PoolKey(const config::ObjectKey& key);

// The pool definitions of every group and class in force.
std::vector<pool::PoolDefinition> PoolDefinitions(const config::InForceConfig& config);

// True if the Service is Pylon's to allocate for (type LoadBalancer, Pylon's class, not being
// deleted).
bool IsPylons(const model::Service& svc);

// Startup order: Services that show addresses first, then the others; each part oldest first
// (creationTimestamp, then namespace/name).
std::vector<const model::Service*> StartupOrder(std::vector<const model::Service*> services);

// The records to rebuild the pool state from, in `ordered` order: for every Pylon Service, the
// first status ingress IP of each family that lies in a group or class in force (under that
// group's pool, whichever the Service now selects, so that the address stays held until the
// Service's own reconcile moves it). The status is the source of truth; annotations are not read.
std::vector<pool::ExistingRecord> RebuildRecords(const std::vector<const model::Service*>& ordered,
                                                 const config::InForceConfig& config);

// Go's %+v of a LoadBalancerStatus, as the seed shows in AddressAssigned:
// "{Ingress:[{IP:192.168.10.226 Hostname: Ports:[]} {IP:fc00:270:154:0:8000::5 Hostname:
// Ports:[]}]}".
std::string FormatIngressGo(const std::vector<net::IpAddress>& ips);

}  // namespace pylon::allocator
