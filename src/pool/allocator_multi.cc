// pool::Allocator::AssignMulti: one address per slot (multi-pool, allocator.h).
#include <algorithm>
#include <set>

#include "pool/allocator.h"
#include "pool/allocator_util.h"

namespace pylon::pool {

using namespace detail;  // this module's internal helpers (allocator_util.h)
using net::Family;
using net::IpAddress;

Result<MultiAssignOutcome> Allocator::AssignMulti(const MultiAssignRequest& request) {
  const std::string who = request.service.ToString();
  if (request.service.ns().empty() || request.service.name().empty()) {
    return Fail(ErrorCode::kInvalidArgument, "assign: the Service key is empty");
  }
  PoolState* pool = FindPool(request.pool);
  if (pool == nullptr) {
    return Fail(ErrorCode::kNotFound, "assign " + who + ": unknown pool " + Quote(request.pool));
  }
  const std::vector<PortKey> ports = NormalizePorts(request.ports);
  auto found = services_.find(request.service);
  ServiceNode* self = found == services_.end() ? nullptr : &*found;

  MultiAssignOutcome out;
  std::vector<IpAddress> plan;
  for (const IpAddress& a : request.keep) {
    if (std::find(plan.begin(), plan.end(), a) != plan.end()) continue;
    auto it = entries_.find(a);
    const bool mine = it != entries_.end() && it->second.first == self && it->second.more.empty();
    if (RangeOf(*pool, a) == nullptr || (it != entries_.end() && !mine)) {
      out.not_kept.push_back(a);
      continue;
    }
    plan.push_back(a);
  }
  // One free address per slot: next-fit over the pool's ranges that lie inside the slot. Free
  // means not held and not planned already (a slot may share ranges with another).
  std::vector<std::pair<IpAddress, RangeState*>> fresh;
  auto planned = [&](const IpAddress& a) {
    return std::find(plan.begin(), plan.end(), a) != plan.end();
  };
  for (std::size_t i = 0; i < request.slots.size(); ++i) {
    const auto& slot = request.slots[i];
    if (slot.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "assign " + who + ": empty slot");
    }
    const Family family = slot.front().family();
    std::optional<std::pair<IpAddress, RangeState*>> pick;
    bool inside = false;
    for (RangeState& r : pool->For(family).ranges) {
      const bool in_slot = std::any_of(slot.begin(), slot.end(), [&](const net::AddressRange& s) {
        return s.family() == family && s.Contains(r.range);
      });
      if (!in_slot) continue;
      inside = true;
      if (pick) continue;
      // FindFree skips held addresses; the planned ones (a kept address not held yet, an earlier
      // slot's pick) are skipped here: each blocks at most one try.
      RangeState probe = r;
      for (std::size_t tries = 0; tries <= plan.size() && !pick; ++tries) {
        auto v = FindFree(probe, family);
        if (!v) break;
        IpAddress a = IpAddress::FromValue(family, *v);
        if (!planned(a)) {
          pick = std::make_pair(a, &r);
        } else {
          probe.cursor = *v == r.range.last().value() ? r.range.first().value() : *v + 1;
        }
      }
    }
    if (!inside) {
      return Fail(ErrorCode::kInvalidArgument, "assign " + who + ": slot " + DescribeRanges(slot) +
                                                   " is not in pool " + Quote(pool->key));
    }
    if (!pick) {
      out.exhausted.push_back(i);
      continue;
    }
    plan.push_back(pick->first);
    fresh.push_back(*pick);
  }
  if (plan.empty()) {
    return Fail(ErrorCode::kExhausted,
                "pool " + Quote(pool->key) + " has no free address in any active range");
  }

  // Commit, as Assign does.
  if (self == nullptr) self = &*services_.try_emplace(request.service).first;
  ServiceState& state = self->second;
  const std::vector<IpAddress> before = state.addresses;
  for (const auto& a : before) DropHolder(a, *self);
  state.pool = pool;
  state.sharing_key.clear();
  state.ports = ports;
  state.addresses = plan;
  for (const IpAddress& a : plan) AddHolder(a, *pool, *self);
  for (const auto& [a, r] : fresh) {
    const net::Uint128 v = a.value();
    r->cursor = v == r->range.last().value() ? r->range.first().value() : v + 1;
  }
  out.assigned.addresses = plan;
  out.assigned.acquired = Minus(plan, before);
  out.assigned.released = Minus(before, plan);
  return out;
}

}  // namespace pylon::pool
