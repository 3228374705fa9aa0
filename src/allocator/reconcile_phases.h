// The phases of Reconcile (reconcile.h), in the order ReconcileService (reconcile.cc) runs them.
// Each phase either hands its result to the next or stops the reconcile with a refusal (or, for
// the owner, a release or a kept status):
//   1. ResolveOwner (reconcile.cc), pure: the group or class the Service allocates from.
//   2. ParseRequest (service_request.cc), pure: what the Service asks for (requested addresses,
//      ports, families, sharing, multi-pool).
//   3. ApplyServiceConflicts (reconcile.cc): the address conflicts in force, recorded in the book
//      and the pool.
//   4. AllocateSingle (reconcile.cc) or AllocateMultiPool (multi_pool.cc): the addresses, in the
//      pool state.
// Internal to pylon_allocator_core; declared here for the phases' own tests.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "allocator/conflict_book.h"
#include "allocator/decision.h"
#include "allocator/reconcile.h"
#include "config/validate.h"
#include "model/service.h"
#include "net/ip.h"
#include "pool/allocator.h"
#include "pool/requested.h"

namespace pylon::allocator {

// Phase 1: whom the Service belongs to.
struct Owner {
  enum class Status {
    kResolved,      // `group` is in force: allocate from it
    kNotPylons,     // being deleted, or not Pylon's type or class: release what it holds
    kDenied,        // group resolution refused the pairing (`refusal`)
    kUnconfigured,  // the group or class named is not in force (`refusal`): keep or refuse
  };
  Status status = Status::kNotPylons;
  model::Owner kind = model::Owner::kNone;
  std::string name;                      // the group or class name (all but kNotPylons)
  const config::Group* group = nullptr;  // kResolved
  std::string pool_key;                  // kResolved; kDenied when the group named is in force
  std::string group_word;  // kResolved: "ServiceGroup <name>" / "LoadBalancerClass <name>"
  std::optional<std::string> warning;  // kResolved: group resolution's warning, if any
  std::optional<Refusal> refusal;      // kDenied, kUnconfigured
};
// Contract: reads the Service, the config and (for the group it holds addresses in) the pool;
// changes nothing. A Service showing addresses from a group not in force keeps that group as its
// choice (so that it can keep them).
Owner ResolveOwner(const model::Service& svc, const pool::ServiceKey& key,
                   const config::InForceConfig& config, const pool::Allocator& pool,
                   const std::string& install_namespace);

// Phase 2: what the Service asks of its group or class.
struct ServiceRequest {
  pool::RequestedAddresses requested;
  std::vector<pool::PortKey> ports;
  std::vector<net::Family> families;  // the families it gets, in its ipFamilies order
  std::string sharing_key;            // purelb.io/allow-shared-ip, or empty
  bool purelb_branded = false;        // purelb.io/allocated-by: PureLB (adopted unchanged)
  bool multi = false;                 // multi-pool in effect and nothing requested
};
struct ParsedRequest {
  ServiceRequest request;  // when !refusal
  std::optional<Refusal> refusal;
  // The refusal names no pool (a requested address of a family the group lacks): no address the
  // pool frees can cure it.
  bool unpooled = false;
};
// Contract: pure. Refuses a malformed request (annotations, spec.loadBalancerIP, ipFamilyPolicy,
// ports), families the group cannot give, and multi-pool with balancePools or a sharing key. A
// PureLB-branded PreferDualStack Service keeps exactly the families its status shows.
ParsedRequest ParseRequest(const model::Service& svc, const Owner& owner);

// Requested addresses: the lace annotation or purelb.io/addresses (both present must agree),
// else spec.loadBalancerIP. Pure.
Result<pool::RequestedAddresses> RequestedOf(const model::Service& svc);
// spec.ports as pool port keys; a bad protocol or port number is an error. Pure.
Result<std::vector<pool::PortKey>> PortsOf(const model::Service& svc);

// Phase 3: the address conflicts in force for the Service.
struct ConflictPhase {
  ConflictState conflicts;
  bool changed = false;  // the Service's entry in the book changed
  std::optional<std::chrono::nanoseconds> recheck_after;
  std::optional<Refusal> refusal;  // a requested address is in conflict
};
// Contract: without a book (in.conflicts null) does nothing. Else records the Service's conflicts
// in the book; a requested address in conflict stops here (refusal, no reservation made). Else
// the Service lets go of what it holds in conflict (a multi-pool Service keeps the rest of
// `held`) and every other address in conflict is reserved in the pool.
ConflictPhase ApplyServiceConflicts(const ServiceInput& in, const pool::ServiceKey& key,
                                    const Owner& owner, const ServiceRequest& req,
                                    const std::vector<net::IpAddress>& held,
                                    const config::InForceConfig& config, pool::Allocator& pool,
                                    const ReconcileContext& ctx);

// Phase 4: what an allocation path produced, before the common decision is built from it.
struct Allocation {
  std::optional<Refusal> refusal;
  std::vector<net::IpAddress> ingress, acquired, released;
  std::string message;         // the condition's
  std::string assigned_event;  // the AddressAssigned event's, when addresses were added
};
// Contract: one address per family in the pool state (requested ones exactly; else what the
// status shows when nothing is held yet and it is still free, else fresh ones); on failure the
// refusal and the pool state as Assign leaves it.
Allocation AllocateSingle(const model::Service& svc, const pool::ServiceKey& key,
                          const Owner& owner, const ServiceRequest& req,
                          const ConflictState& conflicts, pool::Allocator& pool);
// Contract (multi-pool, PureLB v2 §9.4): keeps what the Service holds (`held`, and after a
// restart what its status shows) in the group, one address per range, and adds one address from
// every active range (ActiveEntry) of each family that has none yet. Exhausted ranges are
// skipped (named in the event); refused only when the Service would hold nothing.
Allocation AllocateMultiPool(const model::Service& svc, const pool::ServiceKey& key,
                             const Owner& owner, const ServiceRequest& req,
                             const std::vector<net::IpAddress>& held,
                             const NodeSubnets* node_subnets, const ConflictState& conflicts,
                             pool::Allocator& pool);

// "a, b": the addresses joined for messages.
std::string JoinIps(const std::vector<net::IpAddress>& ips);
// `a` minus `b`, keeping a's order.
std::vector<net::IpAddress> Minus(const std::vector<net::IpAddress>& a,
                                  const std::vector<net::IpAddress>& b);

}  // namespace pylon::allocator
