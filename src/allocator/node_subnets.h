// The node subnets multi-pool allocates on (PureLB v2, docs/purelb-v2.md "multiPool"): the union
// of the `purelb.io/subnets` annotations of the live node leases (`purelb-node-<node>` in the
// install namespace, kept by the agents, see agent/lease_keeper.cc). Pure: the controller turns
// Lease objects into NodeLease values and passes the allocator's wall clock.
//
// Liveness follows PureLB (reference §8.2): a lease counts while
//     now < renewTime + leaseDurationSeconds
// with `now` the allocator's wall clock, and only while holderIdentity is non-empty (an agent
// that shut down released it). A lease without renewTime or with a non-positive duration is not
// live. The agent's own election judges liveness by observed change instead
// (election/membership.h); the allocator reads each lease once per reconcile, so it uses the
// timestamps as PureLB does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "net/ip.h"

namespace pylon::allocator {

// What the allocator reads of one node lease, its annotation parsed once (ReadNodeLease).
struct NodeLease {
  std::string node;             // from the lease name (election::NodeFromLeaseName)
  std::string holder_identity;  // "" = released
  std::optional<std::int64_t> lease_duration_seconds;
  std::optional<WallTime> renew_time;
  std::string subnets_annotation;    // raw `purelb.io/subnets`; absent reads as ""
  std::vector<net::Prefix> subnets;  // parsed from it (election::ParseSubnetsAnnotation)
  std::vector<std::string> issues;   // bad entries (skipped), one line each, naming the lease
  // Raw `purelb.io/probe-ahead` (model/probe_ahead.h, allocator/probe_ahead.h); absent reads "".
  std::string probe_ahead_annotation;
};

NodeLease ReadNodeLease(std::string node, std::string holder_identity,
                        std::optional<std::int64_t> lease_duration_seconds,
                        std::optional<WallTime> renew_time, std::string subnets_annotation);

struct NodeSubnets {
  // Masked, sorted (election::PrefixLess), deduplicated subnets of the live leases.
  std::vector<net::Prefix> live;
  // Nodes whose lease is live, sorted.
  std::vector<std::string> live_nodes;
  // When the first live lease expires (the result may change then without a lease event).
  std::optional<WallTime> next_expiry;

  bool Has(const net::Prefix& subnet) const;  // `subnet` masked before the comparison
};

NodeSubnets LiveNodeSubnets(const std::vector<NodeLease>& leases, WallTime now);

}  // namespace pylon::allocator
