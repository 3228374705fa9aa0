// The reconcile core of the allocator, MetalLB style: a pure function from (Service view,
// in-force config, pool state) to a Decision. It drives the pool state machine (Assign/Release)
// and decides status, annotations, condition and events; it does no I/O. The controller calls it
// from its single worker thread and turns the Decision into writes (service_writes.h).
//
// Rules (docs/design.md "Which Services are Pylon's", "Allocation"):
//   - type LoadBalancer, class lace-cni.io/<name> -> LoadBalancerClass <name>; class
//     purelb.io/purelb, purelb.io/purelbv2 or none -> the ServiceGroup ResolveServiceGroup picks
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
#include <map>
#include <optional>
#include <string>
#include <vector>

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

// One address conflict in force, as the group/class status shows it.
struct ConflictReport {
  net::IpAddress address;
  std::string mac;
  std::string node;       // the node whose probe was answered
  std::string interface;  // on that node
  std::string service;    // "ns/name" that reported it
  WallTime since{};
  WallTime until{};        // since + hold
  bool requested = false;  // the Service asked for exactly this address (refused)
  // Found taken ahead of any Service by a node's background probe (probe_ahead.h): no Service,
  // no interface; kept out of the pool while a live node lists it.
  bool skipped = false;
  friend bool operator==(const ConflictReport&, const ConflictReport&) = default;
};

// The address conflicts in force per Service, and which addresses are kept out of the pool for
// them (each under the synthetic pool key ReservationKey(address)). Owned by the caller next to
// the pool state; mutated by Reconcile / ReconcileGone only. Not thread-safe.
class ConflictBook {
 public:
  // Conflicts shown in the status of the group/class with this pool key, by address.
  std::vector<ConflictReport> ForPool(const std::string& pool_key) const;
  std::size_t size() const { return by_service_.size(); }

  // The reconcile core's side (see reconcile.cc).
  struct Entry {
    std::string pool_key;
    std::vector<ConflictReport> reports;
  };
  // Replaces the Service's entry (empty reports: removes it). Returns the addresses it reserved
  // before that no Service's entry keeps reserved now; whether anything changed in *changed.
  std::vector<net::IpAddress> Set(const std::string& service, Entry entry, bool* changed);
  // Whether some Service's entry holds `address` out of the pool (a non-requested report).
  bool Reserves(const net::IpAddress& address) const;
  // The report that keeps `address` out of the pool, if any.
  std::optional<ConflictReport> ReservationOf(const net::IpAddress& address) const;

 private:
  std::map<std::string, Entry> by_service_;
};

// The pool key under which a conflicted address is kept out of the pool.
pool::ServiceKey ReservationKey(const net::IpAddress& address);

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

// Whether multi-pool is in effect for the Service in `group`: purelb.io/v2 ServiceGroups only;
// the purelb.io/multi-pool annotation ("true" on, any other value off), absent the group's
// multiPool. Requested addresses (purelb.io/addresses, spec.loadBalancerIP) are then still
// claimed the ordinary way.
bool MultiPoolInEffect(const model::Service& svc, const config::Group& group);

// Whether multi-pool allocates from the pool entry (a `v4pools[i]` / `v6pool` item): every entry
// of a remote group; for a local group one whose subnet a live node advertises (masked
// prefixes compared, so a subnet written with host bits matches too).
bool ActiveEntry(const config::Group& group, const config::PoolEntry& entry,
                 const NodeSubnets* node_subnets);

// Reconciles one existing Service. Mutates `pool` (the caller's single pool state).
Decision Reconcile(const ServiceInput& in, const config::InForceConfig& config,
                   pool::Allocator& pool, const ReconcileContext& ctx);

// The ServiceGroup of a Service of Owner::kServiceGroup (purelb.io/v2 namespaces; PureLB 0.17's
// rules, docs/purelb-v2.md):
//   1. the purelb.io/service-group annotation;
//   2. else the purelb.io/v2 group containing a requested address (purelb.io/addresses,
//      spec.loadBalancerIP), as PureLB v2 finds it;
//   3. else the group the Service holds addresses in now (`held`): never retroactive;
//   4. else the one in-force group listing the Service's namespace in spec.namespaces, or of
//      several the one with namespaceDefault; if zero or several are marked: refused
//      (kAmbiguousNamespaceDefault) when the namespace is enforced, else "default";
//   5. else "default".
// Boundary (skipped when the Service already holds addresses in that group): a namespace listed
// by a group with enforceNamespaces is enforced and may use only groups that list it; a group
// listing an enforced namespace is confined and serves only the namespaces it lists. A breach is
// refused (kNamespaceDenied). Groups without namespaces (all v1 groups) serve every namespace that
// is not enforced.
struct GroupResolution {
  std::string name;
  Reason reason = Reason::kNone;
  std::optional<std::string> denied;  // the refusal message, when refused
  // Allowed but worth a Warning event when addresses are assigned: several groups list the
  // namespace and not exactly one is its default, so "default" was used.
  std::optional<std::string> warning;
};
GroupResolution ResolveServiceGroup(const model::Service& svc, const config::InForceConfig& config,
                                    const std::string& install_namespace,
                                    const std::optional<std::string>& held);
// The in-force ServiceGroup (in the install namespace) whose pool holds the Service's addresses.
std::optional<std::string> HeldServiceGroup(const pool::ServiceKey& key,
                                            const pool::Allocator& pool,
                                            const config::InForceConfig& config,
                                            const std::string& install_namespace);

// The Service no longer exists: frees what it held (and the conflict reservations only it kept).
// Never decides writes or events.
Decision ReconcileGone(const pool::ServiceKey& key, pool::Allocator& pool,
                       ConflictBook* conflicts = nullptr);

// The pool key of a group or class in pool::Allocator: its ConfigKey text, e.g.
// "ServiceGroup purelb-system/localdual", "LoadBalancerClass public".
std::string PoolKey(const config::ConfigKey& key);

// The pool definitions of every group and class in force.
std::vector<pool::PoolDefinition> PoolDefinitions(const config::InForceConfig& config);

// True if the Service is Pylon's to allocate for (type LoadBalancer, Pylon's class, not being
// deleted).
bool IsPylons(const model::Service& svc);

// Startup order: Services that show addresses first, then the others; each part oldest first
// (creationTimestamp, then namespace/name).
std::vector<const model::Service*> StartupOrder(std::vector<const model::Service*> services);

// The records to rebuild the pool state from, in `ordered` order: for every Pylon Service, the
// first status ingress IP of each family (a multi-pool Service: every one in the group of its
// first) that lies in a group or class in force (under that
// group's pool, whichever the Service now selects, so that the address stays held until the
// Service's own reconcile moves it). The status is the source of truth; annotations are not read.
std::vector<pool::ExistingRecord> RebuildRecords(const std::vector<const model::Service*>& ordered,
                                                 const config::InForceConfig& config);

// Go's %+v of a LoadBalancerStatus, as PureLB's AddressAssigned event shows it (docs/seeds.md):
// "{Ingress:[{IP:192.168.10.226 Hostname: Ports:[]} {IP:fc00:270:154:0:8000::5 Hostname:
// Ports:[]}]}".
std::string FormatIngressGo(const std::vector<net::IpAddress>& ips);

}  // namespace pylon::allocator
