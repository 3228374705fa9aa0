// Elector: one winner per announced address, among live member nodes whose lease subnets contain
// the address (IPv4 and IPv6 addresses are elected independently, each on its own).
//
// Rule, evaluated at a local steady instant `now`:
//   candidates(a) = members m with m live at now, m not excluded, some subnet of m contains a,
//                   and m in allowed(a) if the address has an allow-list;
//   sticky: if stickiness is on and the caller-supplied current announcer of a is a candidate,
//           it keeps a;
//   else:   the candidate with the lowest SHA-256(node + "#" + canonical text of a), digests
//           compared as big-endian bytes, ties (never seen with SHA-256) broken by node name;
//   none if there is no candidate ("no live node on its subnet").
//
// Cost model. Per address the elector caches a prefix of U(a) -- all members whose subnets
// contain a (live or not, allow-list applied) -- in election order, reaching at least `cache_depth`
// entries past the winner when it was built. Nodes that leave stay as tombstones. A node that
// leaves, dies or returns therefore costs no hashing: the next winner is read off the cache. Hashes
// are computed when an address is added (|U(a)| digests), when a member joins or changes subnets
// (one digest per address in its subnets), and when an address exhausts its cache (rare: more than
// cache_depth of its top-ranked nodes gone). Evaluate walks every address (O(addresses x few)); the
// incremental query AddressesWonBy(node) lists what a departure of `node` moves.
//
// Not thread-safe; pure (no clock, no I/O).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "election/hash.h"
#include "election/membership.h"
#include "election/node_name.h"
#include "net/ip.h"

namespace pylon::election {

// Sticky: a live, eligible current announcer keeps its address when a node with a lower hash
// (re)appears -- no second outage when a preferred node returns, at the cost of an uneven spread
// after churn. Preemptive: the lowest hash always wins (MetalLB's behaviour): the spread returns to
// the hash's balance, but each return of a preferred node moves the address again (one more
// ARP/NDP takeover, a few seconds of loss for clients with a stale neighbour entry).
enum class Stickiness : std::uint8_t { kSticky, kPreemptive };

struct ElectorOptions {
  NodeName local_node;  // whose addresses `ElectionResult::local` lists
  Stickiness stickiness = Stickiness::kSticky;
  // Ranked entries cached per address beyond the winner (>= 1). Each costs 16 bytes per address;
  // a departure of more than this many top-ranked nodes of one address costs |U(a)| hashes.
  std::size_t cache_depth = 4;
};

struct AddressSpec {
  // The node this agent saw announcing the address (Service annotation, L2Advertisement), if any.
  // Used only for stickiness.
  std::optional<NodeName> current_announcer;
  // If set, only these nodes may win: e.g. nodes with a ready local endpoint for the
  // externalTrafficPolicy-Local election mode. An empty list means no node may win.
  std::optional<std::vector<NodeName>> allowed_nodes;
};

// A winner that differs from the previous Evaluate's. An address removed and set again between two
// Evaluates is not new: its change, if any, is against its winner before the removal.
struct WinnerChange {
  net::IpAddress address;
  std::optional<NodeName> before;  // nullopt: no winner before, or the address is new
  std::optional<NodeName> after;   // nullopt: no live node on its subnet
};

struct ElectionResult {
  std::vector<net::IpAddress> local;     // ascending: addresses the local node must announce
  std::vector<net::IpAddress> unserved;  // ascending: addresses with no candidate at all
  std::vector<WinnerChange> changes;     // ascending by address; vs the previous Evaluate
  std::uint64_t hashes = 0;              // digests computed by this Evaluate (cost metric)
};

class Elector {
 public:
  // Uses SHA-256 from libcrypto; fails only if libcrypto has none.
  static Result<Elector> Create(ElectorOptions options);
  // Any hasher: tests inject degenerate ones to force ties.
  Elector(ElectorOptions options, std::unique_ptr<ElectionHasher> hasher);
  Elector(Elector&&) noexcept;
  Elector& operator=(Elector&&) noexcept;
  ~Elector();

  // Adds or updates an address to elect. Takes effect at the next Evaluate.
  void SetAddress(const net::IpAddress& address, const AddressSpec& spec);
  // Returns false if the address was not known.
  bool RemoveAddress(const net::IpAddress& address);
  // Nodes that may not win anything (being deleted, cordoned for deletion). Replaces the set.
  void SetExcludedNodes(std::span<const NodeName> nodes);
  void SetStickiness(Stickiness stickiness);

  // Syncs with `membership`, judges liveness at `now`, and elects every address. The reference
  // stays valid until the next call.
  const ElectionResult& Evaluate(const Membership& membership, SteadyTime now);

  // Results of the last Evaluate. nullptr: no winner, or the address is unknown.
  const NodeName* WinnerOf(const net::IpAddress& address) const;
  // Incremental query: the addresses `node` won at the last Evaluate, i.e. exactly those whose
  // winner changes if `node` leaves (with or without stickiness). Ascending.
  std::vector<net::IpAddress> AddressesWonBy(const NodeName& node) const;
  // Calls f(const net::IpAddress&, const NodeName* winner_or_null) for every address, ascending.
  template <typename F>
  void ForEachWinner(F&& f) const;

  std::size_t address_count() const;
  // Approximate bytes held (addresses, caches, node table, subnet index, the last result),
  // excluding Membership and the hasher.
  std::size_t MemoryBytes() const;

 private:
  using NodeId = std::uint32_t;
  static constexpr NodeId kNoNode = ~NodeId{0};

  struct CacheEntry {
    std::uint64_t rank;  // DigestRank of the node's digest for this address
    NodeId node;
  };
  struct NodeState {
    NodeName name;
    std::vector<net::Prefix> subnets;  // as last synced; empty when not a member
    std::uint64_t version = 0;         // Member::version last synced
    bool member = false;
    bool excluded = false;
    bool candidate = false;        // member, live and not excluded at the current Evaluate
    bool subnets_changed = false;  // since the last Evaluate
    std::uint64_t stamp = 0;
  };
  struct AddressState {
    net::IpAddress address;
    std::string text;  // canonical text, hashed with the node name
    NodeId announcer = kNoNode;
    bool restricted = false;
    std::vector<NodeId> allowed;  // sorted; meaningful when restricted
    // Invariant: in election order, and every member of U(a) missing from it ranks after all of
    // it (a prefix of U(a), plus tombstones: nodes that left U(a) since, skipped when electing);
    // `complete` when it holds all of U(a).
    std::vector<CacheEntry> cache;
    bool complete = false;
    bool dirty = true;  // cache unknown (new address, new allow-list): rebuild on Evaluate
    NodeId winner = kNoNode;
    std::uint64_t stamp = 0;
  };
  struct PrefixOrder {
    bool operator()(const net::Prefix& a, const net::Prefix& b) const;
  };

  NodeId Intern(const NodeName& name);
  // Returns whether any member joined, left, changed subnets or changed candidacy.
  bool Sync(const Membership& membership, SteadyTime now);
  // Returns whether the node's subnets changed.
  bool ApplySubnets(NodeId id, std::vector<net::Prefix> subnets);
  bool Allowed(NodeId id, const AddressState& a) const;
  bool InUniverse(NodeId id, const AddressState& a) const;
  bool FreshTouches(const AddressState& a) const;
  CacheEntry MakeEntry(NodeId id, const AddressState& a);
  bool Less(const CacheEntry& x, const CacheEntry& y, const AddressState& a);
  void CacheInsert(AddressState& a, NodeId id);
  void Refill(AddressState& a);
  NodeId Elect(AddressState& a);
  const NodeName* NameOf(NodeId id) const;

  ElectorOptions options_;
  std::unique_ptr<ElectionHasher> hasher_;
  std::vector<NodeState> nodes_;
  std::unordered_map<NodeName, NodeId> node_ids_;
  std::map<net::IpAddress, AddressState> addresses_;
  // Winners at the last Evaluate of addresses removed since: an address set again before the next
  // Evaluate takes its winner back, so its change (if any) is against the previous Evaluate.
  std::map<net::IpAddress, NodeId> removed_winners_;
  // Distinct member subnets -> nodes reporting them (sorted ids): enumerates U(a) on refill.
  std::map<net::Prefix, std::vector<NodeId>, PrefixOrder> subnet_nodes_;
  std::vector<NodeId> fresh_;    // nodes that became candidates (or moved subnets) this Evaluate
  std::uint64_t stamp_ = 0;      // dedup marks for address/node sweeps
  bool inputs_changed_ = false;  // an address, announcer, allow-list or stickiness changed
  bool evaluated_ = false;
  std::uint64_t hash_count_ = 0;  // digests computed since construction
  ElectionResult result_;
};

}  // namespace pylon::election

template <typename F>
void pylon::election::Elector::ForEachWinner(F&& f) const {
  for (const auto& [address, state] : addresses_) f(address, NameOf(state.winner));
}
