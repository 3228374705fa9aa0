#include "allocator/config_status.h"

#include <set>

#include "common/time.h"
#include "model/conflicts.h"

namespace pylon::allocator {

ConfigStatusWrite PlanConfigStatus(const Json& current, const config::ObjectStatus& st,
                                   const PoolUsage& usage, const std::string& now) {
  ConfigStatusWrite out;
  if (!current.is_object()) return out;
  const Json empty = Json::object();
  const Json* cur_ptr = Find(current, {"status"});
  const Json& cur = cur_ptr && cur_ptr->is_object() ? *cur_ptr : empty;

  Json warnings = Json::array();
  for (const auto& w : st.warnings) warnings.push_back(w);
  const std::string cond_status = st.valid ? "True" : "False";
  std::string transition = now;
  if (const Json* conds = Find(cur, {"conditions"}); conds && conds->is_array()) {
    for (const auto& c : *conds) {
      const Json* type = Find(c, {"type"});
      const Json* s = Find(c, {"status"});
      const Json* t = Find(c, {"lastTransitionTime"});
      if (type && type->is_string() && *type == kConfigConditionValid && s && s->is_string() &&
          s->get<std::string>() == cond_status && t && t->is_string()) {
        transition = *t;
      }
    }
  }
  Json desired = {
      {"observedGeneration", st.observed_generation},
      {"valid", st.valid},
      {"message", st.message},
      {"warnings", warnings},
      {"ipv4",
       {{"size", st.SizeString(net::Family::kV4)}, {"inUse", net::ToDecimal(usage.in_use_v4)}}},
      {"ipv6",
       {{"size", st.SizeString(net::Family::kV6)}, {"inUse", net::ToDecimal(usage.in_use_v6)}}},
      {"conditions",
       Json::array({Json{{"type", kConfigConditionValid},
                         {"status", cond_status},
                         {"reason", st.valid ? kConfigReasonValid : kConfigReasonInvalid},
                         {"message", st.message},
                         {"lastTransitionTime", transition},
                         {"observedGeneration", st.observed_generation}}})},
  };
  if (!usage.conflicts.empty()) {
    Json conflicts = Json::array();
    for (const auto& c : usage.conflicts) {
      conflicts.push_back({{"address", c.address.ToString()},
                           {"mac", c.mac},
                           {"node", c.node},
                           {"interface", c.interface},
                           {"service", c.service},
                           {"since", FormatTime(c.since)},
                           {"until", FormatTime(c.until)},
                           {"action", c.skipped     ? "Skipped"
                                      : c.requested ? "Refused"
                                                    : "Reallocated"}});
    }
    std::set<net::IpAddress> distinct;
    for (const auto& c : usage.conflicts) distinct.insert(c.address);
    desired["conflicts"] = std::move(conflicts);
    desired["conflictCount"] = distinct.size();
  }
  if (usage.probe_ahead) {
    auto list = [](const std::vector<net::IpAddress>& ips) {
      Json a = Json::array();
      for (const auto& ip : ips) a.push_back(ip.ToString());
      return a;
    };
    desired["probeAhead"] = {{"ipv4", list(usage.next_v4)}, {"ipv6", list(usage.next_v6)}};
  }
  if (usage.in_force && usage.in_force->version == config::PurelbVersion::kV2) {
    const config::Group& g = *usage.in_force;
    Json addresses = Json::array();
    for (const auto* list : {&g.v4, &g.v6}) {
      for (const auto& e : *list) addresses.push_back(e.written);
    }
    auto available = [](net::Uint128 size, net::Uint128 used) {
      return net::ToDecimal(size > used ? size - used : 0);
    };
    desired["announce"] = g.mode == config::AnnounceMode::kRemote ? "Remote" : "Local";
    desired["ipam"] = "Cluster";
    desired["addresses"] = std::move(addresses);
    desired["allocatedIPv4"] = net::ToDecimal(usage.in_use_v4);
    desired["allocatedIPv6"] = net::ToDecimal(usage.in_use_v6);
    desired["availableIPv4"] = available(st.size(net::Family::kV4), usage.in_use_v4);
    desired["availableIPv6"] = available(st.size(net::Family::kV6), usage.in_use_v6);
    if (!g.namespaces.empty()) desired["boundNamespaces"] = g.namespaces;
  }
  if (desired != cur) {
    Json obj = current;
    obj["status"] = desired;
    out.object = std::move(obj);
  }
  if (!st.valid) {
    const Json* v = Find(cur, {"valid"});
    const Json* m = Find(cur, {"message"});
    const bool same = v && v->is_boolean() && !v->get<bool>() && m && m->is_string() &&
                      m->get<std::string>() == st.message;
    if (!same) out.event = EventSpec{true, kEventInvalidConfig, st.message};
  }
  return out;
}

}  // namespace pylon::allocator
