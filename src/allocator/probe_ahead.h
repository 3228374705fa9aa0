// Probe ahead, the allocator's side (docs/agent.md "Probe ahead", docs/allocator.md). Pure.
//
//  - It publishes, per pool (ServiceGroup or LoadBalancerClass) and family, the next addresses its
//  next-fit order will hand
//    out (pool::Allocator::NextFree) in status.probeAhead; one agent per address probes them in
//    the background.
//  - It reads what the agents found (the purelb.io/probe-ahead annotation of the live node leases,
//    model/probe_ahead.h): an address found taken by a foreign host is kept out of its pool (held
//    under its conflict ReservationKey, as a Service-reported conflict) and named in the pool's
//    status.conflicts (action "Skipped") for as long as a live node lists it, so no Service ever
//    gets it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "allocator/conflict_book.h"
#include "allocator/node_subnets.h"
#include "common/clock.h"
#include "config/validate.h"
#include "net/ip.h"
#include "pool/allocator.h"

namespace pylon::allocator {

// A pool address a live node found taken, ahead of any Service.
struct TakenAhead {
  net::IpAddress address;
  std::string mac;
  std::string node;
  WallTime since{};
  friend bool operator==(const TakenAhead&, const TakenAhead&) = default;
};

// Whether a pool's next addresses are published for probing ahead: pools of local addresses
// (ServiceGroups local or local-or-virtual, LoadBalancerClasses l2), which an elected node
// announces on its segment. Virtual addresses (kube-lb0) are never probed.
bool ProbedAhead(const config::Group& group);

// The taken entries of the live leases (node_subnets.h's liveness), by address (the earliest
// report of an address wins). Bad annotation entries are skipped.
std::vector<TakenAhead> TakenFromLeases(const std::vector<NodeLease>& leases, WallTime now);

// The book key under which the taken addresses of one pool are recorded.
std::string TakenBookKey(const std::string& pool_key);

// Makes `book` and `pool` match `taken`: each taken address of a group or class in force is
// recorded under TakenBookKey(its pool) (ConflictReport::skipped, `until` = since + hold) and
// held under ReservationKey unless a Service holds it already; reservations nobody keeps any more
// are freed. Pools whose record changed are added to `changed`, those where an address was freed
// to `freed`. Idempotent.
void ApplyTakenAhead(const std::vector<TakenAhead>& taken, const config::InForceConfig& config,
                     std::chrono::nanoseconds hold, ConflictBook& book, pool::Allocator& pool,
                     std::set<std::string>* changed, std::set<std::string>* freed);

}  // namespace pylon::allocator
