#include "pool/allocator.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

#include "pool/allocator_util.h"

namespace pylon::pool {

using namespace detail;  // this module's internal helpers (allocator_util.h)
using net::Family;
using net::IpAddress;

Allocator::Allocator() = default;
Allocator::~Allocator() = default;

Allocator::PoolState* Allocator::FindPool(const std::string& key) const {
  auto it = pools_.find(key);
  return it == pools_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------------------------
// Pools

Result<std::vector<Eviction>> Allocator::SetPools(std::vector<PoolDefinition> defs) {
  if (auto ok = ValidatePools(defs); !ok) return Fail(ok.error().Wrap("pools rejected"));
  std::unordered_map<std::string, const PoolDefinition*> by_key;
  for (const auto& d : defs) by_key.emplace(d.key, &d);

  // Take away every address that is no longer inside its (possibly removed) pool.
  std::vector<Eviction> evictions;
  std::vector<IpAddress> gone;
  for (const auto& [address, entry] : entries_) {
    auto def = by_key.find(entry.pool->key);
    std::string reason;
    if (def == by_key.end()) {
      reason = "pool " + Quote(entry.pool->key) + " was removed";
    } else if (!InRanges(def->second->Ranges(address.family()), address)) {
      reason = address.ToString() + " is no longer in pool " + Quote(entry.pool->key) + " (" +
               FamilyText(address.family()) +
               " ranges: " + DescribeRanges(def->second->Ranges(address.family())) + ")";
    } else {
      continue;
    }
    evictions.push_back({entry.first->first, entry.pool->key, address, reason});
    for (const ServiceNode* h : entry.more) {
      evictions.push_back({h->first, entry.pool->key, address, reason});
    }
    gone.push_back(address);
  }
  for (const auto& address : gone) {
    auto it = entries_.find(address);
    const std::string key = it->second.sharing_key();
    auto forget = [&](ServiceNode* h) {
      auto& held = h->second.addresses;
      held.erase(std::remove(held.begin(), held.end(), address), held.end());
    };
    forget(it->second.first);
    for (ServiceNode* h : it->second.more) forget(h);
    EraseEntry(it, key);
  }
  for (auto it = services_.begin(); it != services_.end();) {
    it = it->second.addresses.empty() ? services_.erase(it) : std::next(it);
  }

  // Install the new definitions, reusing the state of pools that stay (entries point to it).
  std::unordered_map<std::string, std::unique_ptr<PoolState>> next;
  for (auto& d : defs) {
    std::unique_ptr<PoolState> state;
    if (auto old = pools_.find(d.key); old != pools_.end()) {
      state = std::move(old->second);
    } else {
      state = std::make_unique<PoolState>();
      state->key = d.key;
    }
    for (Family f : {Family::kV4, Family::kV6}) {
      FamilyState& fam = state->For(f);
      std::vector<RangeState> ranges;
      for (const auto& r : d.Ranges(f)) {
        RangeState rs{r, r.first().value()};
        // Keep the next-fit position of an old range whose cursor lies in the new one.
        for (const auto& old : fam.ranges) {
          if (old.range.Overlaps(r) && r.Contains(IpAddress::FromValue(f, old.cursor))) {
            rs.cursor = old.cursor;
            break;
          }
        }
        ranges.push_back(rs);
      }
      fam.ranges = std::move(ranges);
      fam.size = TotalSize(d.Ranges(f));
    }
    state->balance = d.balance;
    next.emplace(d.key, std::move(state));
  }
  pools_ = std::move(next);
  // Per-range counts of the addresses that stayed.
  for (const auto& [address, entry] : entries_) {
    if (RangeState* r = RangeOf(*entry.pool, address)) ++r->in_use;
  }

  std::sort(evictions.begin(), evictions.end(), [](const Eviction& a, const Eviction& b) {
    return std::tie(a.service, a.address) < std::tie(b.service, b.address);
  });
  return evictions;
}

Result<FamilyStats> Allocator::Stats(std::string_view pool, Family family) const {
  const PoolState* p = FindPool(std::string(pool));
  if (p == nullptr) return Fail(ErrorCode::kNotFound, "unknown pool " + Quote(std::string(pool)));
  const FamilyState& fam = p->For(family);
  return FamilyStats{fam.size, fam.in_use};
}

Result<std::vector<Family>> Allocator::OfferedFamilies(std::string_view pool) const {
  const PoolState* p = FindPool(std::string(pool));
  if (p == nullptr) return Fail(ErrorCode::kNotFound, "unknown pool " + Quote(std::string(pool)));
  std::vector<Family> out;
  for (Family f : {Family::kV4, Family::kV6}) {
    if (!p->For(f).ranges.empty()) out.push_back(f);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Entries

void Allocator::AddHolder(const IpAddress& address, PoolState& pool, ServiceNode& node) {
  auto [it, inserted] = entries_.try_emplace(address);
  AddressEntry& entry = it->second;
  if (inserted) {
    entry.pool = &pool;
    OccupancyFor(address.family()).Insert(address.value());
    ++pool.For(address.family()).in_use;
    if (RangeState* r = RangeOf(pool, address)) ++r->in_use;
    if (!node.second.sharing_key.empty()) {
      shared_[ShareIndexKey{&pool, address.family(), node.second.sharing_key}].insert(address);
    }
  }
  entry.Add(&node);
}

void Allocator::DropHolder(const IpAddress& address, const ServiceNode& node) {
  auto it = entries_.find(address);
  if (it == entries_.end()) return;
  if (it->second.Remove(&node)) EraseEntry(it, node.second.sharing_key);
}

void Allocator::AddressEntry::Add(ServiceNode* node) {
  if (first == nullptr) {
    first = node;
  } else {
    more.push_back(node);
  }
}

bool Allocator::AddressEntry::Remove(const ServiceNode* node) {
  if (first == node) {
    if (more.empty()) {
      first = nullptr;
      return true;
    }
    first = more.back();
    more.pop_back();
    return false;
  }
  more.erase(std::remove(more.begin(), more.end(), node), more.end());
  return false;
}

Allocator::RangeState* Allocator::RangeOf(PoolState& pool, const IpAddress& address) {
  for (auto& r : pool.For(address.family()).ranges) {
    if (r.range.Contains(address)) return &r;
  }
  return nullptr;
}

void Allocator::EraseEntry(EntryMap::iterator it, const std::string& sharing_key) {
  const IpAddress address = it->first;
  AddressEntry& entry = it->second;
  OccupancyFor(address.family()).Erase(address.value());
  --entry.pool->For(address.family()).in_use;
  if (RangeState* r = RangeOf(*entry.pool, address)) --r->in_use;
  if (!sharing_key.empty()) {
    auto s = shared_.find(ShareIndexKey{entry.pool, address.family(), sharing_key});
    if (s != shared_.end()) {
      s->second.erase(address);
      if (s->second.empty()) shared_.erase(s);
    }
  }
  entries_.erase(it);
}

Status Allocator::CheckShare(const IpAddress& address, const AddressEntry& entry,
                             const PoolState& pool, const ServiceNode* self,
                             const std::string& sharing_key,
                             const std::vector<PortKey>& ports) const {
  auto check = [&](const ServiceNode* other) -> Status {
    if (other == self) return Ok();
    const std::string a = address.ToString();
    const std::string holder = other->first.ToString();
    const std::string& held_key = entry.sharing_key();
    if (entry.pool != &pool) {
      return Fail(ErrorCode::kConflict,
                  a + " is held by " + holder + " from pool " + Quote(entry.pool->key));
    }
    if (held_key.empty()) {
      return Fail(ErrorCode::kConflict,
                  a + " is held by " + holder + ", which does not allow sharing");
    }
    if (sharing_key.empty()) {
      return Fail(ErrorCode::kConflict, a + " is held by " + holder + " under sharing key " +
                                            Quote(held_key) +
                                            " and this Service has no sharing key");
    }
    if (held_key != sharing_key) {
      return Fail(ErrorCode::kConflict, a + " is held by " + holder + " under sharing key " +
                                            Quote(held_key) + ", not " + Quote(sharing_key));
    }
    if (const PortKey* p = FirstCommonPort(ports, other->second.ports)) {
      return Fail(ErrorCode::kConflict,
                  a + " is shared with " + holder + ", which already uses " + p->ToString());
    }
    return Ok();
  };
  if (auto ok = check(entry.first); !ok) return ok;
  for (const ServiceNode* other : entry.more) {
    if (auto ok = check(other); !ok) return ok;
  }
  return Ok();
}

// ---------------------------------------------------------------------------------------------
// Assign / Release

std::optional<net::Uint128> Allocator::FindFree(const RangeState& range, Family family) const {
  const Occupancy& occ = OccupancyFor(family);
  const net::Uint128 lo = range.range.first().value();
  const net::Uint128 hi = range.range.last().value();
  if (auto v = occ.FirstFree(range.cursor, hi)) return v;
  if (range.cursor > lo) return occ.FirstFree(lo, range.cursor - 1);
  return std::nullopt;
}

Result<std::vector<IpAddress>> Allocator::NextFree(std::string_view pool, Family family,
                                                   std::size_t count) const {
  const PoolState* p = FindPool(std::string(pool));
  if (p == nullptr) return Fail(ErrorCode::kNotFound, "no pool " + Quote(std::string(pool)));
  const FamilyState& fam = p->For(family);
  const Occupancy& occ = OccupancyFor(family);
  // Assign's choices replayed on copies of the cursors and in-use counts; the addresses picked so
  // far count as held (at most `count` of them, so skipping them stays cheap).
  std::vector<RangeState> ranges = fam.ranges;
  std::set<net::Uint128> picked;
  auto first_free = [&](net::Uint128 from, net::Uint128 last) -> std::optional<net::Uint128> {
    while (from <= last) {
      auto v = occ.FirstFree(from, last);
      if (!v || !picked.count(*v)) return v;
      if (*v == last) return std::nullopt;
      from = *v + 1;
    }
    return std::nullopt;
  };
  auto find = [&](const RangeState& r) -> std::optional<net::Uint128> {
    const net::Uint128 lo = r.range.first().value();
    const net::Uint128 hi = r.range.last().value();
    if (auto v = first_free(r.cursor, hi)) return v;
    if (r.cursor > lo) return first_free(lo, r.cursor - 1);
    return std::nullopt;
  };
  std::vector<IpAddress> out;
  while (out.size() < count) {
    std::vector<RangeState*> order;
    for (auto& r : ranges) order.push_back(&r);
    if (p->balance) {
      std::stable_sort(order.begin(), order.end(), [](const RangeState* a, const RangeState* b) {
        return a->in_use < b->in_use;
      });
    }
    bool found = false;
    for (RangeState* r : order) {
      auto v = find(*r);
      if (!v) continue;
      picked.insert(*v);
      out.push_back(IpAddress::FromValue(family, *v));
      r->cursor = *v == r->range.last().value() ? r->range.first().value() : *v + 1;
      ++r->in_use;
      found = true;
      break;
    }
    if (!found) break;
  }
  return out;
}

Result<Allocator::Step> Allocator::PlanFamily(const AssignRequest& request,
                                              const std::vector<PortKey>& ports, PoolState& pool,
                                              Family family, const ServiceNode* self) {
  FamilyState& fam = pool.For(family);
  if (fam.ranges.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "pool " + Quote(pool.key) + " has no " + FamilyText(family) + " range");
  }
  if (const auto& wanted = request.requested.For(family)) {
    if (wanted->family() != family) {
      return Fail(ErrorCode::kInvalidArgument, "requested " + FamilyText(family) + " address " +
                                                   wanted->ToString() + " is not " +
                                                   FamilyText(family));
    }
    std::vector<net::AddressRange> ranges;
    for (const auto& r : fam.ranges) ranges.push_back(r.range);
    if (!InRanges(ranges, *wanted)) {
      return Fail(ErrorCode::kOutOfRange, "requested " + wanted->ToString() + " is not in pool " +
                                              Quote(pool.key) + " (" + FamilyText(family) +
                                              " ranges: " + DescribeRanges(ranges) + ")");
    }
    if (auto it = entries_.find(*wanted); it != entries_.end()) {
      if (auto ok = CheckShare(*wanted, it->second, pool, self, request.sharing_key, ports); !ok) {
        return Fail(ok.error().Wrap("cannot claim requested address"));
      }
    }
    return Step{*wanted, nullptr};
  }

  // The address the Service already holds in this family and pool, if it can stay.
  std::optional<IpAddress> current;
  if (self != nullptr && self->second.pool == &pool) {
    for (const auto& a : self->second.addresses) {
      if (a.family() == family) {
        current = a;  // the first: a former multi-pool Service keeps its first address
        break;
      }
    }
  }
  if (current) {
    auto it = entries_.find(*current);
    if (it != entries_.end() &&
        CheckShare(*current, it->second, pool, self, request.sharing_key, ports)) {
      return Step{*current, nullptr};
    }
  }
  // An address already shared under this key; the index holds only this key's addresses.
  if (!request.sharing_key.empty()) {
    auto s = shared_.find(ShareIndexKey{&pool, family, request.sharing_key});
    if (s != shared_.end()) {
      for (const auto& a : s->second) {
        if (current && a == *current) continue;
        if (CheckShare(a, entries_.at(a), pool, self, request.sharing_key, ports)) {
          return Step{a, nullptr};
        }
      }
    }
  }
  if (pool.balance) {
    // Fewest in use first; stable, so ties keep the definition's order.
    std::vector<RangeState*> order;
    for (auto& range : fam.ranges) order.push_back(&range);
    std::stable_sort(order.begin(), order.end(), [](const RangeState* a, const RangeState* b) {
      return a->in_use < b->in_use;
    });
    for (RangeState* range : order) {
      if (auto v = FindFree(*range, family)) return Step{IpAddress::FromValue(family, *v), range};
    }
  } else {
    for (auto& range : fam.ranges) {
      if (auto v = FindFree(range, family)) return Step{IpAddress::FromValue(family, *v), &range};
    }
  }
  return Fail(ErrorCode::kExhausted, "pool " + Quote(pool.key) + " has no free " +
                                         FamilyText(family) + " address (all " +
                                         net::ToDecimal(fam.size) + " in use)");
}

Result<AssignOutcome> Allocator::Assign(const AssignRequest& request) {
  if (request.service.ns().empty() || request.service.name().empty()) {
    return Fail(ErrorCode::kInvalidArgument, "assign: the Service key is empty");
  }
  const auto& families = request.families;
  if (families.empty() || families.size() > 2 ||
      (families.size() == 2 && families[0] == families[1])) {
    return Fail(ErrorCode::kInvalidArgument,
                "assign " + request.service.ToString() + ": want one or two distinct families");
  }
  PoolState* pool = FindPool(request.pool);
  if (pool == nullptr) {
    return Fail(ErrorCode::kNotFound,
                "assign " + request.service.ToString() + ": unknown pool " + Quote(request.pool));
  }
  if (auto ok = CheckRequestedFamilies(request.requested, families); !ok) return Fail(ok.error());
  const std::vector<PortKey> ports = NormalizePorts(request.ports);

  // Plan every family against the current state; nothing changes until all succeed.
  auto found = services_.find(request.service);
  ServiceNode* self = found == services_.end() ? nullptr : &*found;
  std::vector<Step> steps;
  for (Family f : families) {
    auto step = PlanFamily(request, ports, *pool, f, self);
    if (!step) return Fail(step.error());
    steps.push_back(*step);
  }

  // Commit: drop the old holdings, then hold the planned addresses. The plan stays valid across
  // the drop: dropping only frees addresses or removes this Service from shared ones.
  if (self == nullptr) self = &*services_.try_emplace(request.service).first;
  ServiceState& state = self->second;
  const std::vector<IpAddress> before = state.addresses;
  for (const auto& a : before) DropHolder(a, *self);
  state.pool = pool;
  state.sharing_key = request.sharing_key;
  state.ports = ports;
  state.addresses.clear();
  for (const Step& step : steps) {
    state.addresses.push_back(step.address);
    AddHolder(step.address, *pool, *self);
    if (step.allocated_from != nullptr) {
      RangeState& r = *step.allocated_from;
      const net::Uint128 v = step.address.value();
      r.cursor = v == r.range.last().value() ? r.range.first().value() : v + 1;
    }
  }
  AssignOutcome out;
  out.addresses = state.addresses;
  out.acquired = Minus(state.addresses, before);
  out.released = Minus(before, state.addresses);
  return out;
}

std::vector<IpAddress> Allocator::Release(const ServiceKey& service) {
  auto it = services_.find(service);
  if (it == services_.end()) return {};
  std::vector<IpAddress> held = it->second.addresses;
  for (const auto& a : held) DropHolder(a, *it);
  services_.erase(it);
  return held;
}

// ---------------------------------------------------------------------------------------------
// Rebuild

std::vector<IpAddress> Allocator::AddressesOf(const ServiceKey& service) const {
  auto it = services_.find(service);
  return it == services_.end() ? std::vector<IpAddress>{} : it->second.addresses;
}

std::optional<std::string> Allocator::PoolOf(const ServiceKey& service) const {
  auto it = services_.find(service);
  if (it == services_.end()) return std::nullopt;
  return it->second.pool->key;
}

std::optional<AddressInfo> Allocator::Lookup(const IpAddress& address) const {
  auto it = entries_.find(address);
  if (it == entries_.end()) return std::nullopt;
  AddressInfo info{it->second.pool->key, it->second.sharing_key(), {it->second.first->first}};
  for (const ServiceNode* h : it->second.more) info.holders.push_back(h->first);
  std::sort(info.holders.begin(), info.holders.end());
  return info;
}

std::vector<ServiceKey> Allocator::HoldersOf(const IpAddress& address) const {
  auto info = Lookup(address);
  return info ? info->holders : std::vector<ServiceKey>{};
}

}  // namespace pylon::pool
