#include "soak/checks.h"

#include <algorithm>

#include "common/json.h"

namespace pylon::soak {
namespace {

std::string Ann(const Json& obj, const std::string& key) {
  return FindString(obj, {"metadata", "annotations", key}).value_or("");
}

std::string NodeOf(const std::string& announcing) {
  return announcing.substr(0, announcing.find(','));
}

std::optional<std::uint64_t> Count(const Json& obj, const char* family) {
  auto s = FindString(obj, {"status", family, "inUse"});
  if (!s) return std::nullopt;
  try {
    return std::stoull(*s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

bool IsV6(const std::string& ip) { return ip.find(':') != std::string::npos; }

std::vector<ObservedService> ParseServices(const Json& list) {
  std::vector<ObservedService> out;
  const Json* items = Find(list, {"items"});
  if (items == nullptr || !items->is_array()) return out;
  for (const Json& s : *items) {
    if (FindString(s, {"spec", "type"}).value_or("") != "LoadBalancer") continue;
    ObservedService o;
    o.name = FindString(s, {"metadata", "name"}).value_or("");
    o.uid = FindString(s, {"metadata", "uid"}).value_or("");
    if (const Json* ing = Find(s, {"status", "loadBalancer", "ingress"});
        ing != nullptr && ing->is_array()) {
      for (const Json& i : *ing) {
        if (auto ip = FindString(i, {"ip"})) o.ips.push_back(*ip);
      }
    }
    o.share_key = Ann(s, "purelb.io/allow-shared-ip");
    o.allocated_from = Ann(s, "purelb.io/allocated-from");
    o.group = Ann(s, "purelb.io/service-group");
    o.class_name = FindString(s, {"spec", "loadBalancerClass"}).value_or("");
    o.announcer_v4 = NodeOf(Ann(s, "purelb.io/announcing-IPv4"));
    o.announcer_v6 = NodeOf(Ann(s, "purelb.io/announcing-IPv6"));
    if (const Json* conds = Find(s, {"status", "conditions"});
        conds != nullptr && conds->is_array()) {
      for (const Json& c : *conds) {
        if (FindString(c, {"type"}).value_or("") != "purelb.io/AddressAllocated") continue;
        o.allocated = FindString(c, {"status"}).value_or("") == "True";
        o.reason = FindString(c, {"reason"}).value_or("");
      }
    }
    if (const Json* ports = Find(s, {"spec", "ports"});
        ports != nullptr && ports->is_array() && !ports->empty()) {
      o.port = static_cast<int>(FindInt((*ports)[0], {"port"}).value_or(0));
    }
    o.etp = FindString(s, {"spec", "externalTrafficPolicy"}).value_or("Cluster");
    if (const Json* f = Find(s, {"spec", "ipFamilies"}); f != nullptr && f->is_array()) {
      o.families = f->size();
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<ObservedConfig> ParseConfigs(const Json& list, const std::string& kind) {
  std::vector<ObservedConfig> out;
  const Json* items = Find(list, {"items"});
  if (items == nullptr || !items->is_array()) return out;
  for (const Json& c : *items) {
    ObservedConfig o;
    o.kind = kind;
    o.name = FindString(c, {"metadata", "name"}).value_or("");
    auto gen = FindInt(c, {"metadata", "generation"});
    auto seen = FindInt(c, {"status", "observedGeneration"});
    o.status_current = gen && seen && *gen == *seen;
    o.valid = FindBool(c, {"status", "valid"});
    o.v4_in_use = Count(c, "ipv4");
    o.v6_in_use = Count(c, "ipv6");
    out.push_back(std::move(o));
  }
  return out;
}

std::map<std::string, std::string> ParseL2Advertisements(const Json& list) {
  std::map<std::string, std::string> out;
  const Json* items = Find(list, {"items"});
  if (items == nullptr || !items->is_array()) return out;
  for (const Json& a : *items) {
    auto addr = FindString(a, {"spec", "address"});
    auto node = FindString(a, {"spec", "node"});
    if (addr && node) out[*addr] = *node;
  }
  return out;
}

std::map<std::string, std::vector<std::string>> UnsharedDuplicates(
    const std::vector<ObservedService>& services) {
  std::map<std::string, std::vector<const ObservedService*>> holders;
  for (const auto& s : services) {
    std::set<std::string> mine(s.ips.begin(), s.ips.end());
    for (const auto& ip : mine) holders[ip].push_back(&s);
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [ip, hs] : holders) {
    if (hs.size() < 2) continue;
    bool shared = !hs[0]->share_key.empty();
    for (const auto* h : hs) shared = shared && h->share_key == hs[0]->share_key;
    if (shared) continue;
    for (const auto* h : hs) out[ip].push_back(h->name + "(" + h->share_key + ")");
  }
  return out;
}

std::vector<std::string> PendingRequests(const ApiView& view) {
  std::vector<std::string> out;
  std::set<std::string> ready_groups;
  for (const auto& c : view.configs) {
    if (!c.status_current) {
      out.push_back(c.kind + "/" + c.name + " status not yet written for its generation");
    } else if (c.kind == "ServiceGroup" && c.valid == true) {
      ready_groups.insert(c.name);
    }
  }
  for (const auto& s : view.services) {
    if (!s.class_name.empty() || s.group.empty() || s.allocated_from.empty()) continue;
    if (s.allocated == false) continue;  // explained: the change cannot be made (a full group)
    if (s.allocated_from != s.group && ready_groups.count(s.group)) {
      out.push_back("Service " + s.name + " asks for group " + s.group + ", holds addresses of " +
                    s.allocated_from);
    }
  }
  return out;
}

std::map<std::string, HeldCount> HeldByConfig(const std::vector<ObservedService>& services) {
  std::map<std::string, std::set<std::string>> ips;
  for (const auto& s : services) {
    if (s.allocated_from.empty()) continue;
    const std::string key =
        (s.class_name.empty() ? "ServiceGroup/" : "LoadBalancerClass/") + s.allocated_from;
    ips[key].insert(s.ips.begin(), s.ips.end());
  }
  std::map<std::string, HeldCount> out;
  for (const auto& [key, set] : ips) {
    HeldCount& c = out[key];
    for (const auto& ip : set) (IsV6(ip) ? c.v6 : c.v4) += 1;
  }
  return out;
}

std::vector<std::string> StatusMismatches(const ApiView& view) {
  std::vector<std::string> out;
  const auto held = HeldByConfig(view.services);
  for (const auto& c : view.configs) {
    if (!c.status_current || c.valid != true) continue;
    const std::string key = c.kind + "/" + c.name;
    HeldCount h;
    if (auto it = held.find(key); it != held.end()) h = it->second;
    const std::uint64_t v4 = c.v4_in_use.value_or(0), v6 = c.v6_in_use.value_or(0);
    if (v4 != h.v4 || v6 != h.v6) {
      out.push_back(key + " status inUse ipv4=" + std::to_string(v4) +
                    " ipv6=" + std::to_string(v6) + ", Services hold ipv4=" + std::to_string(h.v4) +
                    " ipv6=" + std::to_string(h.v6));
    }
  }
  return out;
}

void AddressBook::ClearAsks() {
  for (auto& [name, e] : by_name) e.asked = false;
}

std::vector<std::string> AddressBook::Observe(const std::vector<ObservedService>& services) {
  std::vector<std::string> out;
  std::set<std::string> present;
  for (const auto& s : services) {
    present.insert(s.name);
    std::vector<std::string> ips = s.ips;
    std::sort(ips.begin(), ips.end());
    Entry& e = by_name[s.name];
    if (e.uid != s.uid) {
      e.uid = s.uid;
      e.ips = ips;
      continue;
    }
    if (ips == e.ips) continue;
    // Gaining an address from none (or a second family) is allocation, never a loss.
    const bool only_gained = std::includes(ips.begin(), ips.end(), e.ips.begin(), e.ips.end());
    if (!only_gained && !e.asked) {
      std::string was, now;
      for (const auto& ip : e.ips) was += (was.empty() ? "" : ",") + ip;
      for (const auto& ip : ips) now += (now.empty() ? "" : ",") + ip;
      out.push_back("Service " + s.name + " changed addresses [" + was + "] -> [" + now +
                    "] without asking");
    }
    e.ips = ips;
  }
  for (auto it = by_name.begin(); it != by_name.end();) {
    if (!present.count(it->first) && !it->second.uid.empty()) {
      it = by_name.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<std::string> StrayAddresses(const NodeAddresses& on,
                                        const std::vector<ObservedService>& services) {
  std::set<std::string> held;
  for (const auto& s : services) held.insert(s.ips.begin(), s.ips.end());
  std::vector<std::string> out;
  for (const auto* m : {&on.eth0, &on.lb}) {
    for (const auto& [ip, nodes] : *m) {
      if (held.count(ip)) continue;
      std::string ns;
      for (const auto& n : nodes) ns += " " + n;
      out.push_back(ip + " on" + ns + " but no Service holds it");
    }
  }
  return out;
}

}  // namespace pylon::soak
