// The one internal model of an address source: a ServiceGroup (purelb.io/v1 or purelb.io/v2) or a
// LoadBalancerClass (lace-cni.io/v1alpha1), validated, with every pool entry expressed as the
// address ranges that may actually be handed out. Pure values; no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/object_meta.h"
#include "net/ip.h"

namespace pylon::config {

// How addresses of a group are attracted to the cluster.
enum class AnnounceMode : std::uint8_t {
  kLocalOrVirtual,  // ServiceGroup v1 spec.local: local (elected node) if in a node subnet,
                    // else kube-lb0
  kL2,              // LoadBalancerClass mode l2: local only; never virtual
  kL3,              // LoadBalancerClass mode l3: always virtual (kube-lb0), announced over BGP
  kLocal,           // ServiceGroup v2 spec.local: local only; an address in no node subnet is
                    // not announced (PureLB v2)
  kRemote,          // ServiceGroup v2 spec.remote: kube-lb0 on every node
};
std::string_view AnnounceModeName(AnnounceMode mode);  // "local-or-virtual", "l2", ...

// The purelb.io API version whose behaviour a ServiceGroup or LBNodeAgent follows: the version it
// was written as (spec.writtenAs, set by the CRD's per-version default), else its apiVersion
// (docs/purelb-v2.md). LoadBalancerClasses are always kV1 (unused).
enum class PurelbVersion : std::uint8_t { kV1, kV2 };

// One entry of a pool list (v4pools[i], v4pool, the legacy flat pool, ipv4Pools[i], ...).
struct PoolEntry {
  // Path of the field that holds the addresses, e.g. "spec.local.v4pools[1].pool",
  // "spec.ipv4Pools[0].cidr", or "spec.ipv4Pools[1]" for a {start, end} entry.
  std::string path;
  // The addresses as written (trimmed), e.g. "10.0.0.10/24" or "203.0.113.10-203.0.113.20".
  std::string written;
  // The written addresses after the host-bits rule (a CIDR "10.0.0.10/24" spans .10-.255),
  // before the network/broadcast exclusions. Always inside `subnet` when there is one.
  net::AddressRange span;
  // Masked subnet: a ServiceGroup entry's `subnet`, a class entry's `cidr`; none for a class
  // {start, end} entry.
  std::optional<net::Prefix> subnet;
  // Explicit aggregation "/N"; nullopt means "default" (the subnet's length).
  std::optional<int> aggregation;
  // What may be handed out: `span` minus the subnet's network address (IPv4 subnets shorter than
  // /31, IPv6 subnets shorter than /127: the subnet-router anycast) and the IPv4 broadcast
  // (subnets shorter than /31). Ascending, disjoint, never empty.
  std::vector<net::AddressRange> ranges;

  net::Family family() const { return span.family(); }
  // The prefix length for an address of this entry on kube-lb0: the aggregation, else the
  // subnet's length, else the full length (/32, /128) when there is no subnet.
  int AggregationLength() const;
  net::Uint128 Size() const;

  // Equality of content (what the allocator and agent use), not of how it was written.
  friend bool operator==(const PoolEntry&, const PoolEntry&) = default;
};

struct Group {
  ObjectMeta meta;
  AnnounceMode mode = AnnounceMode::kLocalOrVirtual;
  // Entries per family, in the order they are tried.
  std::vector<PoolEntry> v4;
  std::vector<PoolEntry> v6;
  PurelbVersion version = PurelbVersion::kV1;
  // purelb.io/v2 only (all false/empty for v1 groups and classes). multi_pool: a Service gets an
  // address from every active entry (allocator/multi_pool.h, MultiPoolInEffect); balance_pools: a
  // new address comes from the entry (range) with the fewest addresses in use.
  bool skip_ipv6_dad = false;
  bool multi_pool = false;
  bool balance_pools = false;
  // spec.namespaces: sorted, without duplicates; empty = every namespace.
  std::vector<std::string> namespaces;
  bool enforce_namespaces = false;
  bool namespace_default = false;
  // Accepted but worth telling the user, e.g. "spec.local.v4pools[0].pool: pool 10.0.0.10/24 has
  // host bits set; using 10.0.0.10-10.0.0.255".
  std::vector<std::string> warnings;

  const ConfigKey& key() const { return meta.key; }
  const std::vector<PoolEntry>& entries(net::Family f) const {
    return f == net::Family::kV4 ? v4 : v6;
  }
  bool HasFamily(net::Family f) const { return !entries(f).empty(); }
  // Every allocatable range of the family, in the order tried: what the pool allocator takes.
  std::vector<net::AddressRange> Ranges(net::Family f) const;
  // Exact number of allocatable addresses (saturates at 2^128-1).
  net::Uint128 Size(net::Family f) const;

  bool ListsNamespace(std::string_view ns) const;
  // Same pools, mode, version, flags and namespaces; metadata and warnings are ignored.
  bool SameContent(const Group& other) const;
};

namespace detail {

// Input of one pool entry, as read from JSON. Paths are full field paths.
struct PoolSpec {
  std::string entry_path;  // "spec.local.v4pools[1]"
  std::string pool_path;   // "spec.local.v4pools[1].pool"
  std::string pool;        // CIDR, "a-b" range or single address
  // A class {start, end} entry sets these instead of `pool`.
  bool is_start_end = false;
  std::string start, end;
  // A class cidr entry acts as its own subnet.
  bool pool_is_subnet = false;
  std::string subnet_path;
  std::optional<std::string> subnet;  // required for ServiceGroups (checked by the caller)
  std::string aggregation_path;
  std::optional<std::string> aggregation;
  // The list's family; nullopt for the legacy flat entry (family from the addresses).
  std::optional<net::Family> list_family;
  // "pool" or "cidr": the word used in the host-bits warning.
  std::string noun = "pool";
};

// Builds a validated entry or fails with "<field path>: <reason>". Appends warnings.
Result<PoolEntry> BuildPoolEntry(const PoolSpec& spec, std::vector<std::string>* warnings);

// Parses "default", "" or "/N" (8 <= N <= 32 for IPv4, 8 <= N <= 128 for IPv6).
Result<std::optional<int>> ParseAggregation(std::string_view text, net::Family family);

// Fails when two allocatable ranges of the group overlap:
// "<later entry path>: <written> overlaps <earlier entry path> (<written>)".
Status CheckNoInternalOverlap(const Group& group);

}  // namespace detail
}  // namespace pylon::config
