#include "allocator/probe_ahead.h"

#include <algorithm>
#include <map>

#include "allocator/rebuild.h"
#include "model/probe_ahead.h"

namespace pylon::allocator {

bool ProbedAhead(const config::Group& group) {
  switch (group.mode) {
    case config::AnnounceMode::kLocalOrVirtual:
    case config::AnnounceMode::kLocal:
    case config::AnnounceMode::kL2:
      return true;
    case config::AnnounceMode::kL3:
    case config::AnnounceMode::kRemote:
      return false;
  }
  return false;
}

std::vector<TakenAhead> TakenFromLeases(const std::vector<NodeLease>& leases, WallTime now) {
  const NodeSubnets live = LiveNodeSubnets(leases, now);
  std::map<net::IpAddress, TakenAhead> by_address;
  for (const NodeLease& l : leases) {
    if (!std::binary_search(live.live_nodes.begin(), live.live_nodes.end(), l.node)) continue;
    for (const auto& e : model::ParseProbeAhead(l.probe_ahead_annotation).entries) {
      if (!e.taken) continue;
      auto it = by_address.find(e.address);
      if (it == by_address.end() || e.since < it->second.since) {
        by_address[e.address] = TakenAhead{e.address, e.mac, l.node, e.since};
      }
    }
  }
  std::vector<TakenAhead> out;
  for (auto& [ip, t] : by_address) out.push_back(std::move(t));
  return out;
}

std::string TakenBookKey(const std::string& pool_key) { return "probe-ahead " + pool_key; }

void ApplyTakenAhead(const std::vector<TakenAhead>& taken, const config::InForceConfig& config,
                     std::chrono::nanoseconds hold, ConflictBook& book, pool::Allocator& pool,
                     std::set<std::string>* changed, std::set<std::string>* freed) {
  std::map<std::string, std::vector<ConflictReport>> by_pool;
  for (const auto& [key, g] : config.groups()) by_pool[PoolKey(key)];
  for (const TakenAhead& t : taken) {
    auto match = config.FindAddress(t.address);
    if (!match || match->group == nullptr) continue;
    ConflictReport r;
    r.address = t.address;
    r.mac = t.mac;
    r.node = t.node;
    r.since = t.since;
    r.until = t.since + std::chrono::duration_cast<WallTime::duration>(hold);
    r.skipped = true;
    by_pool[PoolKey(match->group->key())].push_back(std::move(r));
  }
  for (auto& [pool_key, reports] : by_pool) {
    bool was_freed = false;
    const bool was_changed =
        RecordConflicts(book, TakenBookKey(pool_key), {pool_key, reports}, pool, &was_freed);
    if (was_freed && freed) freed->insert(pool_key);
    if (was_changed && changed) changed->insert(pool_key);
  }
}

}  // namespace pylon::allocator
