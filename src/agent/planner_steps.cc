#include "agent/planner_steps.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "model/announcing.h"

namespace pylon::agent::planner_steps {

namespace {

// The Service's slices that kube-proxy programs for `family`: those of that addressType (a slice
// without one counts for both). A dual-stack pod's two slices change in separate writes; each
// address follows its own family's endpoints, as kube-proxy's rules for it do.
std::vector<const model::EndpointSlice*> SlicePointers(const ServiceInput& in, net::Family family) {
  std::vector<const model::EndpointSlice*> out;
  out.reserve(in.slices.size());
  for (const auto& s : in.slices) {
    if (s.address_type.empty() || s.address_type == net::FamilyName(family)) out.push_back(&s);
  }
  return out;
}

// Nodes hosting a ready or serving endpoint of `family` for one Service (node-affinity).
std::set<std::string> NodesWithServingEndpoint(const ServiceInput& in, net::Family family) {
  std::set<std::string> nodes;
  for (const auto* slice : SlicePointers(in, family)) {
    for (const auto& ep : slice->endpoints) {
      if (!ep.node_name.empty() && (ep.ready || ep.serving)) nodes.insert(ep.node_name);
    }
  }
  return nodes;
}

// Nodes with a usable local endpoint of `family` for one Service (kube-proxy's rules).
std::set<std::string> NodesWithLocalEndpoint(const ServiceInput& in, net::Family family) {
  auto slices = SlicePointers(in, family);
  std::set<std::string> nodes;
  for (const auto* slice : slices) {
    for (const auto& ep : slice->endpoints) {
      if (!ep.node_name.empty()) nodes.insert(ep.node_name);
    }
  }
  for (auto it = nodes.begin(); it != nodes.end();) {
    it = model::HasLocalEndpoint(slices, *it) ? std::next(it) : nodes.erase(it);
  }
  return nodes;
}

}  // namespace

const char* AnnouncingKey(net::Family family) {
  return family == net::Family::kV4 ? model::kAnnAnnouncingV4 : model::kAnnAnnouncingV6;
}

bool IsEtpLocal(const model::Service& service) {
  return service.external_traffic_policy == "Local";
}

AddressGroups GroupByAddress(const std::vector<ServiceInput>& services) {
  AddressGroups groups;
  for (const ServiceInput& si : services) {
    if (si.owner.owner == model::Owner::kNone || si.service.deleting) continue;
    for (const auto& ip : si.service.ingress) {
      AddressGroup& g = groups[ip];
      g.services.push_back(&si);
      if (si.owner.owner == model::Owner::kLaceClass) g.lace = true;
    }
  }
  return groups;
}

std::optional<NodeName> ProblemReporter(const election::Membership& membership, SteadyTime now) {
  for (const auto& [name, m] : membership.members()) {
    if (membership.IsLive(m, now)) return name;
  }
  return std::nullopt;
}

bool IsRoutedMode(config::AnnounceMode mode) {
  // A LoadBalancerClass of mode l3 and a purelb.io/v2 `remote` group: always on kube-lb0 (for the
  // routing daemon to announce).
  return mode == config::AnnounceMode::kL3 || mode == config::AnnounceMode::kRemote;
}

AddressClass Classify(config::AnnounceMode mode, bool lace, bool on_member_subnet) {
  const bool routed = IsRoutedMode(mode);
  if (!routed && on_member_subnet) return AddressClass::kLocal;
  // A v2 `local` group and a lace l2 class are never virtual.
  if (mode == config::AnnounceMode::kLocal) return AddressClass::kLocalGroupOffSubnet;
  if (lace && !routed) return AddressClass::kLaceOffSubnet;
  return AddressClass::kVirtual;
}

std::optional<NodeName> RecordedAnnouncer(const net::IpAddress& address, const AddressGroup& group,
                                          const L2Index& l2_by_name) {
  if (auto it = l2_by_name.find(L2AdvertisementName(address));
      group.lace && it != l2_by_name.end()) {
    return NodeName(it->second->node);
  }
  for (const ServiceInput* si : group.services) {
    if (const std::string* v = si->service.Annotation(AnnouncingKey(address.family()))) {
      if (auto node = model::AnnouncerOf(*v, address)) return NodeName(*node);
    }
  }
  return std::nullopt;
}

std::optional<std::vector<NodeName>> EtpLocalCandidates(const net::IpAddress& address,
                                                        const AddressGroup& group) {
  std::optional<std::set<std::string>> allowed;
  for (const ServiceInput* si : group.services) {
    if (!IsEtpLocal(si->service)) continue;
    std::set<std::string> nodes = NodesWithLocalEndpoint(*si, address.family());
    if (!allowed) {
      allowed = std::move(nodes);
    } else {
      std::set<std::string> both;
      std::set_intersection(allowed->begin(), allowed->end(), nodes.begin(), nodes.end(),
                            std::inserter(both, both.end()));
      allowed = std::move(both);
    }
  }
  if (!allowed) return std::nullopt;
  std::vector<NodeName> out;
  for (const auto& n : *allowed) out.push_back(NodeName(n));
  return out;
}

bool UsesEndpointAffinity(const AddressGroup& group) {
  if (group.services.size() != 1) return false;
  const model::Service& s = group.services.front()->service;
  return s.EndpointAffinity() && !s.Annotation(model::kAnnSharing);
}

std::vector<NodeName> AffinityCandidates(const net::IpAddress& address, const ServiceInput& service,
                                         const election::Membership& membership, SteadyTime now,
                                         const std::vector<NodeName>* excluded_nodes) {
  std::vector<NodeName> preferred;
  for (const auto& n : NodesWithServingEndpoint(service, address.family())) {
    const NodeName name(n);
    const election::Member* m = membership.Find(name);
    if (!m || !membership.IsLive(*m, now)) continue;
    if (excluded_nodes &&
        std::find(excluded_nodes->begin(), excluded_nodes->end(), name) != excluded_nodes->end()) {
      continue;
    }
    if (std::any_of(m->subnets.begin(), m->subnets.end(),
                    [&](const net::Prefix& p) { return p.Contains(address); })) {
      preferred.push_back(name);
    }
  }
  return preferred;
}

int VirtualPrefixLength(const net::IpAddress& address, const config::AddressMatch* match) {
  if (match && match->group->mode != config::AnnounceMode::kL3) return match->aggregation_length;
  return net::FamilyBits(address.family());
}

bool HoldsVirtual(const net::IpAddress& address, const AddressGroup& group,
                  const std::string& self) {
  if (group.services.size() != 1 || !IsEtpLocal(group.services.front()->service)) return true;
  return model::HasLocalEndpoint(SlicePointers(*group.services.front(), address.family()), self);
}

std::vector<std::string> ServiceKeys(const AddressGroup& group) {
  std::vector<std::string> keys;
  for (const ServiceInput* si : group.services) keys.push_back(si->service.Key());
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::uint64_t CountWinnerMoves(const std::vector<election::WinnerChange>& changes) {
  std::uint64_t moves = 0;
  for (const auto& c : changes) {
    if (c.before && (!c.after || *c.before != *c.after)) ++moves;
  }
  return moves;
}

std::optional<DesiredAddress> LocalAddress(const net::IpAddress& address,
                                           const NodeNetwork& network, const AddressGroup& group) {
  auto match = network.Find(address);
  if (!match) return std::nullopt;
  auto prefix = net::Prefix::Make(address, match->subnet.length());
  if (!prefix) return std::nullopt;
  return DesiredAddress{*prefix, match->interface->name, match->interface->ifindex,
                        AddressKind::kLocal, ServiceKeys(group)};
}

std::string AnnouncingValue(const model::Service& service, const net::IpAddress& address,
                            const std::string& self, const std::string& interface, bool v2) {
  if (!v2) return model::FormatAnnouncingV1(self, interface);
  const std::string* cur = service.Annotation(AnnouncingKey(address.family()));
  std::vector<net::IpAddress> same_family;
  for (const auto& a : service.ingress) {
    if (a.family() == address.family()) same_family.push_back(a);
  }
  return model::ClaimAnnouncingV2(cur ? *cur : "", self, interface, address, same_family);
}

L2Advertisement WantedL2Advertisement(const net::IpAddress& address, const AddressGroup& group,
                                      const std::string& self, const std::string& interface) {
  const ServiceInput* owner = group.services.front();  // replaced by the first lace Service
  for (const ServiceInput* si : group.services) {
    if (si->owner.owner == model::Owner::kLaceClass) {
      owner = si;
      break;
    }
  }
  return L2Advertisement{L2AdvertisementName(address),
                         address,
                         owner->service.ns,
                         owner->service.name,
                         std::string(model::kLacePrefix) + owner->owner.name,
                         self,
                         interface};
}

void SetAnnotation(std::map<ServiceRef, AnnotationPatch>& patches, const model::Service& service,
                   const std::string& key, std::optional<std::string> value) {
  ServiceRef ref{service.ns, service.name};
  AnnotationPatch& patch = patches[ref];
  patch.service = ref;
  patch.observed_version = service.resource_version;
  patch.annotations[key] = std::move(value);
}

std::vector<StaleAnnouncing> StaleAnnouncingAnnotations(const std::vector<ServiceInput>& services,
                                                        const std::string& self) {
  std::vector<StaleAnnouncing> out;
  for (const ServiceInput& si : services) {
    if (si.owner.owner == model::Owner::kNone) continue;
    for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
      const std::string* cur = si.service.Annotation(AnnouncingKey(f));
      if (!cur || !model::AnnouncingNames(*cur, self)) continue;
      const bool has = !si.service.deleting &&
                       std::any_of(si.service.ingress.begin(), si.service.ingress.end(),
                                   [&](const net::IpAddress& a) { return a.family() == f; });
      if (!has) out.push_back({&si.service, f});
    }
  }
  return out;
}

std::vector<std::string> OrphanedL2Advertisements(const std::vector<L2Advertisement>& l2s,
                                                  const std::set<std::string>& in_use,
                                                  const std::string& self,
                                                  const election::Membership& membership,
                                                  SteadyTime now, bool reporter) {
  std::vector<std::string> out;
  for (const auto& l2 : l2s) {
    if (in_use.count(l2.name)) continue;
    const bool named_live = membership.IsLive(NodeName(l2.node), now);
    if (l2.node == self || (!named_live && reporter)) out.push_back(l2.name);
  }
  return out;
}

}  // namespace pylon::agent::planner_steps
