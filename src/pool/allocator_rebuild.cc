// pool::Allocator's rebuild from existing records (Rebuild, Adopt) and the cursor placement after
// it (allocator.h).
#include <algorithm>
#include <set>

#include "pool/allocator.h"
#include "pool/allocator_util.h"

namespace pylon::pool {

using namespace detail;  // this module's internal helpers (allocator_util.h)
using net::Family;
using net::IpAddress;

std::vector<RebuildConflict> Allocator::Rebuild(const std::vector<ExistingRecord>& records) {
  entries_.clear();
  services_.clear();
  shared_.clear();
  occupied_v4_.Clear();
  occupied_v6_.Clear();
  for (auto& [key, pool] : pools_) {
    for (FamilyState* fam : {&pool->v4, &pool->v6}) {
      fam->in_use = 0;
      for (auto& r : fam->ranges) r.in_use = 0;
    }
  }

  std::vector<RebuildConflict> conflicts = Replay(records);
  std::set<PoolState*> all;
  for (auto& [key, pool] : pools_) all.insert(pool.get());
  PlaceCursors(all);
  return conflicts;
}

std::vector<RebuildConflict> Allocator::Adopt(const std::vector<ExistingRecord>& records) {
  std::vector<RebuildConflict> conflicts = Replay(records);
  std::set<PoolState*> touched;
  for (const ExistingRecord& rec : records) {
    if (PoolState* p = FindPool(rec.pool)) touched.insert(p);
  }
  PlaceCursors(touched);
  return conflicts;
}

std::vector<RebuildConflict> Allocator::Replay(const std::vector<ExistingRecord>& records) {
  std::vector<RebuildConflict> conflicts;
  for (const ExistingRecord& rec : records) {
    auto refuse = [&](ErrorCode code, const std::string& why) {
      conflicts.push_back(
          {rec, Error(code, rec.service.ToString() + " " + rec.address.ToString() + ": " + why)});
    };
    if (rec.service.ns().empty() || rec.service.name().empty()) {
      refuse(ErrorCode::kInvalidArgument, "the Service key is empty");
      continue;
    }
    PoolState* pool = FindPool(rec.pool);
    if (pool == nullptr) {
      refuse(ErrorCode::kNotFound, "unknown pool " + Quote(rec.pool));
      continue;
    }
    const Family family = rec.address.family();
    std::vector<net::AddressRange> ranges;
    for (const auto& r : pool->For(family).ranges) ranges.push_back(r.range);
    if (!InRanges(ranges, rec.address)) {
      refuse(ErrorCode::kOutOfRange, "not in pool " + Quote(rec.pool) + " (" + FamilyText(family) +
                                         " ranges: " + DescribeRanges(ranges) + ")");
      continue;
    }
    const std::vector<PortKey> ports = NormalizePorts(rec.ports);
    auto found = services_.find(rec.service);
    ServiceNode* self = found == services_.end() ? nullptr : &*found;
    if (self != nullptr) {
      const ServiceState& st = self->second;
      auto same_family = std::find_if(st.addresses.begin(), st.addresses.end(),
                                      [&](const IpAddress& a) { return a.family() == family; });
      if (std::find(st.addresses.begin(), st.addresses.end(), rec.address) != st.addresses.end()) {
        refuse(ErrorCode::kAlreadyExists, "duplicate record");
        continue;
      }
      if (same_family != st.addresses.end() && !(rec.multi && rec.sharing_key.empty())) {
        refuse(ErrorCode::kConflict,
               "the Service already holds " + FamilyText(family) + " " + same_family->ToString());
        continue;
      }
      if (st.pool != pool) {
        refuse(ErrorCode::kConflict,
               "the Service already holds addresses from pool " + Quote(st.pool->key));
        continue;
      }
      if (st.sharing_key != rec.sharing_key || st.ports != ports) {
        refuse(ErrorCode::kConflict,
               "sharing key or ports differ from the Service's earlier record");
        continue;
      }
    }
    if (auto it = entries_.find(rec.address); it != entries_.end()) {
      if (auto ok = CheckShare(rec.address, it->second, *pool, self, rec.sharing_key, ports); !ok) {
        conflicts.push_back({rec, ok.error().Wrap(rec.service.ToString())});
        continue;
      }
    }
    if (self == nullptr) {
      self = &*services_.try_emplace(rec.service).first;
      self->second.pool = pool;
      self->second.sharing_key = rec.sharing_key;
      self->second.ports = ports;
    }
    self->second.addresses.push_back(rec.address);
    AddHolder(rec.address, *pool, *self);
  }

  return conflicts;
}

void Allocator::PlaceCursors(const std::set<PoolState*>& pools) {
  // Continue after the highest address held in each range, so the addresses released just before
  // a restart are not the first handed out after it.
  for (PoolState* pool : pools) {
    for (Family f : {Family::kV4, Family::kV6}) {
      for (RangeState& r : pool->For(f).ranges) {
        const net::Uint128 lo = r.range.first().value();
        const net::Uint128 hi = r.range.last().value();
        auto last = OccupancyFor(f).LastOccupied(lo, hi);
        r.cursor = (!last || *last == hi) ? lo : *last + 1;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Queries

}  // namespace pylon::pool
