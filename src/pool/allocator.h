// The address-pool allocator: a pure state machine (no Kubernetes, no I/O, no clock) that hands
// out load-balancer addresses from pools of ranges, MetalLB-style (SetPools / Assign / Release),
// with the peers' traps avoided (docs/design.md "Allocation", docs/references.md "Allocation"):
//   - a free address is found in O(log n) of live allocations, never by enumerating a range, so a
//     /64 or /48 pool works; sharing-key lookups never scan a pool;
//   - next-fit per range (continue after the last address handed out, wrapping), so a released
//     address is reused last instead of "moving" to the next Service (metallb#2723);
//   - Assign is all-or-nothing over the families of a Service, and re-assigning keeps what still
//     satisfies the request and releases what does not;
//   - nothing is dropped silently: SetPools returns the allocations that fell out of their pool,
//     Rebuild returns every record it could not honour.
// Invariants: an address is held either by exactly one Service, or by several Services that all
// use the same non-empty sharing key with pairwise disjoint (protocol, port) sets; a Service holds
// at most one address per family (a multi-pool Service, see AssignMulti: any number, exclusive),
// all from one pool; every held address lies in its pool's ranges.
// Threading: not thread-safe; the owner serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "net/ip.h"
#include "pool/occupancy.h"
#include "pool/pools.h"
#include "pool/requested.h"
#include "pool/reservation.h"
#include "pool/types.h"

namespace pylon::pool {

struct AssignRequest {
  ServiceKey service;
  std::string pool;                   // a PoolDefinition key
  std::vector<net::Family> families;  // ordered, distinct, one or two (see SelectFamilies)
  RequestedAddresses requested;       // each must be of a family in `families`; claimed exactly
  std::string sharing_key;            // empty: the addresses are exclusive to this Service
  std::vector<PortKey> ports;         // any order, duplicates ignored
};

// PureLB v2 multi-pool: the Service holds exactly `keep` (those it may hold) plus one new address
// from each slot that has a free one. Never shared (no sharing key).
struct MultiAssignRequest {
  ServiceKey service;
  std::string pool;
  // Kept when inside the pool and free or held by this Service already; the others are
  // reported in MultiAssignOutcome::not_kept.
  std::vector<net::IpAddress> keep;
  // Each slot: the ranges (of one family, inside the pool) one new address is taken from.
  std::vector<std::vector<net::AddressRange>> slots;
  std::vector<PortKey> ports;
};

struct AssignOutcome {
  std::vector<net::IpAddress> addresses;  // one per requested family, in request order
  std::vector<net::IpAddress> acquired;   // in `addresses` but not held before the call
  std::vector<net::IpAddress> released;   // held before the call, no longer held by this Service
  bool changed() const { return !acquired.empty() || !released.empty(); }
};

struct MultiAssignOutcome {
  AssignOutcome assigned;                // addresses: kept ones first, then one per slot
  std::vector<std::size_t> exhausted;    // indexes of the slots with no free address
  std::vector<net::IpAddress> not_kept;  // `keep` entries held by another or outside the pool
};

// An allocation that SetPools took away because its address is no longer in its pool.
struct Eviction {
  ServiceKey service;
  std::string pool;
  net::IpAddress address;
  std::string reason;
};

// One address a Service is known to hold (from its status and annotations).
struct ExistingRecord {
  ServiceKey service;
  std::string pool;
  net::IpAddress address;
  std::string sharing_key;
  std::vector<PortKey> ports;
  // A multi-pool Service's address: several of one family are accepted (no sharing key).
  bool multi = false;
};

struct RebuildConflict {
  ExistingRecord record;
  Error error;
};

struct FamilyStats {
  net::Uint128 size = 0;     // addresses in the pool's ranges of this family, exact
  std::uint64_t in_use = 0;  // distinct addresses held (a shared address counts once)
  net::Uint128 free() const { return size - in_use; }
};

struct AddressInfo {
  std::string pool;
  std::string sharing_key;
  std::vector<ServiceKey> holders;  // sorted
};

class Allocator {
 public:
  Allocator();
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Replaces the pool definitions (validated by ValidatePools; on error nothing changes).
  // Allocations whose address is still inside their pool are kept; the others are taken away
  // from their Services and returned (sorted by service, then address) so the caller can
  // re-assign those Services. A range kept unchanged keeps its next-fit position.
  Result<std::vector<Eviction>> SetPools(std::vector<PoolDefinition> pools);

  // Drops every allocation, then replays `records` in the given order (the caller chooses it,
  // e.g. by Service creation time): the first record wins an address, later ones that cannot
  // share it are returned with the reason, as are records naming an unknown pool (kNotFound), an
  // address outside the pool (kOutOfRange), a second address of one family for a Service, one
  // from another pool or with other ports / sharing key than the Service's first record
  // (kConflict), a duplicate (kAlreadyExists) or an empty Service key (kInvalidArgument). A
  // Service may thus come out holding fewer families than it had; the caller re-assigns it.
  // Afterwards each range's next-fit position is just after the highest address held in it, so
  // addresses freed just before a restart are not the first handed out after it. Pools are
  // unchanged.
  std::vector<RebuildConflict> Rebuild(const std::vector<ExistingRecord>& records);

  // Rebuild's replay on top of the current state, dropping nothing: for a pool that has just come
  // (back) into force, the addresses Services still show are held before anything new is handed
  // out from it. Records are checked and refused exactly as in Rebuild (a Service that already
  // holds addresses from another pool: kConflict). The next-fit position of each range of a pool
  // named by a record is placed as Rebuild places it.
  std::vector<RebuildConflict> Adopt(const std::vector<ExistingRecord>& records);

  // Gives the Service one address per requested family from `pool`, all or nothing. For each
  // family, in order of preference:
  //   requested address -> exactly that one: kOutOfRange if outside the pool, kConflict (naming
  //                        the holder and the reason) if held and not shareable;
  //   otherwise         -> the address it already holds in that family and pool if still
  //                        shareable under the new key and ports; else, with a sharing key, an
  //                        address already held under that key in that pool and family with no
  //                        port overlap; else the next free address (kExhausted if none).
  // On success the Service holds exactly `addresses`; what it held before and no longer needs is
  // released. On error the Service keeps exactly what it held before. kNotFound for an unknown
  // pool; kInvalidArgument for a malformed request or a family the pool has no range for.
  Result<AssignOutcome> Assign(const AssignRequest& request);

  // Multi-pool (PureLB v2): see MultiAssignRequest. Whatever the Service held before and is not
  // kept is released. kExhausted (state unchanged) when the Service would hold nothing;
  // kNotFound for an unknown pool; kInvalidArgument for an empty key or a slot outside the pool.
  Result<MultiAssignOutcome> AssignMulti(const MultiAssignRequest& request);

  // Frees every address the Service holds (a shared address stays held by its other holders).
  // Returns the addresses the Service held; empty if it held none.
  std::vector<net::IpAddress> Release(const ServiceKey& service);

  // Reservations (reservation.h): keeps `address` of `pool` out of use under the holder
  // ReservationHolder(kind, id), exclusively. Fails, changing nothing, as Assign of exactly that
  // address does: kConflict when it is held by anyone else, kOutOfRange outside the pool,
  // kNotFound for an unknown pool, kInvalidArgument for an empty id. Reserving it again under the
  // same holder is a no-op.
  Status Reserve(ReservationKind kind, std::string_view id, const std::string& pool,
                 const net::IpAddress& address);
  // Frees what the reservation holds; returns it (empty if nothing).
  std::vector<net::IpAddress> Unreserve(ReservationKind kind, std::string_view id);

  // O(1) per pool and family. kNotFound for an unknown pool.
  Result<FamilyStats> Stats(std::string_view pool, net::Family family) const;
  // The next `count` addresses of `family` that Assign would hand out from `pool`, in order, to
  // Services asking for no particular address and sharing none (next-fit, `balance` included),
  // if nothing else changed in between. O(count x log n): never enumerates a range, so a /64 pool
  // costs the same as a /29. Fewer when the pool has fewer free; kNotFound for an unknown pool.
  Result<std::vector<net::IpAddress>> NextFree(std::string_view pool, net::Family family,
                                               std::size_t count) const;
  // Families the pool has at least one range for (v4 first). kNotFound for an unknown pool.
  Result<std::vector<net::Family>> OfferedFamilies(std::string_view pool) const;

  // The Service's addresses in the order of its last Assign; empty if none.
  std::vector<net::IpAddress> AddressesOf(const ServiceKey& service) const;
  // The pool key the Service's addresses come from, if it holds any.
  std::optional<std::string> PoolOf(const ServiceKey& service) const;
  // Who holds the address; nullopt if nobody.
  std::optional<AddressInfo> Lookup(const net::IpAddress& address) const;
  std::vector<ServiceKey> HoldersOf(const net::IpAddress& address) const;
  std::size_t service_count() const { return services_.size(); }
  std::size_t address_count() const { return entries_.size(); }

 private:
  struct RangeState {
    net::AddressRange range;
    net::Uint128 cursor = 0;   // next-fit: the value tried first; always inside `range`
    std::uint64_t in_use = 0;  // addresses of `range` held (a shared one counts once)
  };
  struct FamilyState {
    std::vector<RangeState> ranges;  // in the definition's order
    net::Uint128 size = 0;
    std::uint64_t in_use = 0;
  };
  struct PoolState {
    std::string key;
    bool balance = false;  // PoolDefinition::balance
    FamilyState v4;
    FamilyState v6;
    FamilyState& For(net::Family f) { return f == net::Family::kV4 ? v4 : v6; }
    const FamilyState& For(net::Family f) const { return f == net::Family::kV4 ? v4 : v6; }
  };
  struct ServiceState {
    PoolState* pool = nullptr;
    std::string sharing_key;
    std::vector<PortKey> ports;             // normalized
    std::vector<net::IpAddress> addresses;  // non-empty, at most one per family
  };
  using ServiceMap = std::unordered_map<ServiceKey, ServiceState>;
  using ServiceNode = ServiceMap::value_type;
  struct AddressEntry {
    PoolState* pool = nullptr;
    // Holders: `first` is set while the entry exists; `more` only for a shared address. Every
    // holder has the same sharing key (the entry's), so it is not stored here again.
    ServiceNode* first = nullptr;
    std::vector<ServiceNode*> more;
    const std::string& sharing_key() const { return first->second.sharing_key; }
    void Add(ServiceNode* node);
    // Returns true when no holder is left.
    bool Remove(const ServiceNode* node);
  };
  using EntryMap = std::unordered_map<net::IpAddress, AddressEntry>;
  // One family's decision in an Assign plan.
  struct Step {
    net::IpAddress address;
    RangeState* allocated_from = nullptr;  // set when newly found free: advance its cursor
  };
  using ShareIndexKey = std::tuple<const PoolState*, net::Family, std::string>;

  PoolState* FindPool(const std::string& key) const;
  // Rebuild / Adopt: replays the records in order; returns the refused ones.
  std::vector<RebuildConflict> Replay(const std::vector<ExistingRecord>& records);
  // Each range of `pools` continues just after the highest address held in it.
  void PlaceCursors(const std::set<PoolState*>& pools);
  Occupancy& OccupancyFor(net::Family f) {
    return f == net::Family::kV4 ? occupied_v4_ : occupied_v6_;
  }
  const Occupancy& OccupancyFor(net::Family f) const {
    return f == net::Family::kV4 ? occupied_v4_ : occupied_v6_;
  }
  // Ok if `self` (may be null) can hold `address` next to the entry's other holders under
  // `sharing_key` and `ports`; kConflict naming a holder and the reason otherwise.
  Status CheckShare(const net::IpAddress& address, const AddressEntry& entry, const PoolState& pool,
                    const ServiceNode* self, const std::string& sharing_key,
                    const std::vector<PortKey>& ports) const;
  // Decides one family's address without changing any state.
  Result<Step> PlanFamily(const AssignRequest& request, const std::vector<PortKey>& ports,
                          PoolState& pool, net::Family family, const ServiceNode* self);
  // Next-fit search in one range; O(log n).
  std::optional<net::Uint128> FindFree(const RangeState& range, net::Family family) const;
  // Adds `node` as a holder (creating the entry with the node's sharing key if the address was
  // free). Precondition: CheckShare passed.
  void AddHolder(const net::IpAddress& address, PoolState& pool, ServiceNode& node);
  // Removes `node` from the holders; frees the address when nobody is left.
  void DropHolder(const net::IpAddress& address, const ServiceNode& node);
  // The range of `pool` holding `address` (nullptr if none); linear in the pool's ranges.
  static RangeState* RangeOf(PoolState& pool, const net::IpAddress& address);
  // Frees the address; `sharing_key` is the (former) holders' key.
  void EraseEntry(EntryMap::iterator it, const std::string& sharing_key);

  std::unordered_map<std::string, std::unique_ptr<PoolState>> pools_;
  ServiceMap services_;
  EntryMap entries_;
  // Addresses held under a sharing key, per pool and family: the only place sharing looks.
  std::map<ShareIndexKey, std::set<net::IpAddress>> shared_;
  Occupancy occupied_v4_;
  Occupancy occupied_v6_;
};

}  // namespace pylon::pool
