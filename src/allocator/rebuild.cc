#include "allocator/rebuild.h"

#include <algorithm>
#include <tuple>

#include "allocator/multi_pool.h"
#include "allocator/reconcile_phases.h"

namespace pylon::allocator {

using net::Family;
using net::IpAddress;

std::string PoolKey(const config::ConfigKey& key) { return key.ToString(); }

std::vector<pool::PoolDefinition> PoolDefinitions(const config::InForceConfig& config) {
  std::vector<pool::PoolDefinition> out;
  for (const auto& [key, group] : config.groups()) {
    if (key.kind == config::ObjectKind::kLBNodeAgent) continue;
    pool::PoolDefinition def;
    def.key = PoolKey(key);
    def.v4 = group.Ranges(Family::kV4);
    def.v6 = group.Ranges(Family::kV6);
    def.balance = group.balance_pools;
    out.push_back(std::move(def));
  }
  return out;
}

std::vector<const model::Service*> StartupOrder(std::vector<const model::Service*> services) {
  std::stable_sort(
      services.begin(), services.end(), [](const model::Service* a, const model::Service* b) {
        return std::make_tuple(a->ingress.empty(), a->creation_timestamp, a->ns, a->name) <
               std::make_tuple(b->ingress.empty(), b->creation_timestamp, b->ns, b->name);
      });
  return services;
}

std::vector<pool::ExistingRecord> RebuildRecords(const std::vector<const model::Service*>& ordered,
                                                 const config::InForceConfig& config) {
  std::vector<pool::ExistingRecord> out;
  for (const model::Service* svc : ordered) {
    // A Service being deleted still shows its addresses: they stay held until it is gone.
    if (model::SelectOwner(*svc).owner == model::Owner::kNone || svc->ingress.empty()) continue;
    auto key = pool::ServiceKey::Make(svc->ns, svc->name);
    if (!key) continue;
    std::vector<pool::PortKey> ports;
    if (auto p = PortsOf(*svc)) ports = std::move(*p);
    const std::string* sharing = svc->Annotation(model::kAnnSharing);
    // A multi-pool Service holds every address it shows in the group of its first one.
    const config::Group* multi = nullptr;
    for (const IpAddress& ip : svc->ingress) {
      auto match = config.FindAddress(ip);
      if (!match || match->group == nullptr) continue;
      if (sharing == nullptr && MultiPoolInEffect(*svc, *match->group)) multi = match->group;
      break;
    }
    bool seen_v4 = false, seen_v6 = false;
    std::vector<IpAddress> taken;
    for (const IpAddress& ip : svc->ingress) {
      if (multi != nullptr) {
        auto match = config.FindAddress(ip);
        if (!match || match->group != multi) continue;
        if (std::find(taken.begin(), taken.end(), ip) != taken.end()) continue;
        taken.push_back(ip);
        out.push_back(
            pool::ExistingRecord{*key, PoolKey(multi->key()), ip, std::string(), ports, true});
        continue;
      }
      bool& seen = ip.is_v4() ? seen_v4 : seen_v6;
      if (seen) continue;
      seen = true;
      auto match = config.FindAddress(ip);
      if (!match || match->group == nullptr) continue;  // outside every pool: nothing to hold
      out.push_back(pool::ExistingRecord{*key, PoolKey(match->group->key()), ip,
                                         sharing ? *sharing : std::string(), ports});
    }
  }
  return out;
}

}  // namespace pylon::allocator
