// What the allocator wants for one Service: the outcome of a reconcile as plain values (no JSON,
// no client). The controller turns a Decision into writes (service_writes.h) and events. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/ip.h"

namespace pylon::allocator {

// The outcome of reconciling one Service; an explicit enum, never a bool.
enum class Outcome {
  kIgnored,    // not Pylon's and held nothing here: never touched (no write, no event)
  kAllocated,  // holds one address per selected family: status, annotations, condition True
  kRefused,    // cannot be allocated: holds nothing, condition False + a Warning event
  kReleased,   // was Pylon's, no longer is (deleted, left LoadBalancer, other class): freed
  // Its group or class is not in force (missing, invalid, not yet served): it keeps exactly the
  // addresses its status shows (never released for configuration Pylon cannot read), condition
  // False says why nothing new can be allocated; annotations and status.loadBalancer untouched.
  kKept,
};
std::string_view OutcomeName(Outcome o);

// Why a Service was refused. The names are the `reason` of the Service condition.
enum class Reason {
  kNone,
  kAddressInUse,       // a requested address is held by another Service that cannot share it
  kOutsidePools,       // a requested address lies in no range of the group/class
  kNoSuchClass,        // lace-cni.io/<name> names no valid LoadBalancerClass
  kNoSuchGroup,        // purelb.io/service-group names no valid ServiceGroup
  kFamilyUnavailable,  // the ipFamilyPolicy cannot be met by the families the pools offer
  kPoolExhausted,      // no free address left in a needed family
  kSharingConflict,    // shares a key with the holder of the address but a port overlaps
  kInvalidAnnotation,  // requested-address annotation or spec.loadBalancerIP malformed
  kInvalidService,     // a Service field Pylon needs is malformed (e.g. a port protocol)
  kAddressConflict,    // a requested address is used on the network by a foreign host
  kNamespaceDenied,    // purelb.io/v2 namespaces: the group or the namespace forbids the pairing
  kAmbiguousNamespaceDefault,  // several v2 groups list an enforced namespace, none the default
  kMultiPoolRefused,  // multi-pool with balancePools or allow-shared-ip (mutually exclusive)
};
std::string_view ReasonName(Reason r);

// A refusal: its reason and the condition's message.
struct Refusal {
  Reason reason = Reason::kNone;
  std::string message;
  friend bool operator==(const Refusal&, const Refusal&) = default;
};

// The Service condition Pylon owns (status.conditions, metav1.Condition).
inline constexpr const char* kConditionType = "purelb.io/AddressAllocated";
inline constexpr const char* kConditionReasonAllocated = "Allocated";

struct Condition {
  bool status = false;  // True / False
  std::string reason;
  std::string message;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// Event reasons and source component (visible in `kubectl describe service`).
inline constexpr const char* kEventAssigned = "AddressAssigned";
inline constexpr const char* kEventFailed = "AllocationFailed";
inline constexpr const char* kEventReleased = "AddressReleased";
inline constexpr const char* kEventConflict = "AddressConflict";
inline constexpr const char* kEventConfigWarning = "ConfigurationWarning";  // PureLB v2's
inline constexpr const char* kEventComponent = "purelb-allocator";

struct EventSpec {
  bool warning = false;  // type Warning, else Normal
  std::string reason;
  std::string message;
  friend bool operator==(const EventSpec&, const EventSpec&) = default;
};

struct Decision {
  Outcome outcome = Outcome::kIgnored;
  Reason reason = Reason::kNone;  // set when kRefused
  std::string message;            // why (refusal) or what (for logs)

  // Desired status.loadBalancer.ingress IPs, in the Service's ipFamilies order (kAllocated only;
  // empty otherwise; kKept: what the Service shows, written unchanged). Multi-pool: several per
  // family, in the order of the group's ranges.
  std::vector<net::IpAddress> ingress;
  // The Service carries purelb.io/re-evaluate: "true" and this reconcile was its re-run: the
  // annotation is to be removed (kAllocated, kRefused).
  bool clear_re_evaluate = false;
  // Desired purelb.io/allocated-by and allocated-from (kAllocated only). For the other outcomes
  // both annotations are to be removed if present.
  std::string allocated_by;
  std::string allocated_from;  // group or class name
  // Services of purelb.io/v2 groups (kAllocated only): purelb.io/pool-type ("local" | "remote")
  // and purelb.io/skip-ipv6-dad: "true" (the group's local.skipIPv6DAD). nullopt / false: the
  // annotation is to be removed if present (v1 groups, classes, and every other outcome).
  std::optional<std::string> pool_type;
  bool skip_ipv6_dad = false;
  // kReleased only: remove Pylon's traces (annotations, condition) from the Service. False for a
  // Service being deleted or of a foreign class (never written to).
  bool cleanup = false;
  // Desired condition; nullopt: remove Pylon's condition if present (kReleased) or leave the
  // status alone (kIgnored).
  std::optional<Condition> condition;
  // Events to record once the writes have succeeded.
  std::vector<EventSpec> events;
  // Addresses freed in the pool state by this reconcile (for metrics and logs).
  std::vector<net::IpAddress> released;
  // Addresses newly held by this Service in the pool state.
  std::vector<net::IpAddress> acquired;
  // Pool key (pool::PoolDefinition::key) of the group/class selected (kAllocated; kRefused when
  // the group or class exists).
  std::string pool_key;
  // Reconcile this Service again after this long (an address conflict's hold ends then).
  std::optional<std::chrono::nanoseconds> recheck_after;
  // The address conflicts recorded for this Service changed (the group/class status shows them).
  bool conflicts_changed = false;
};

}  // namespace pylon::allocator
