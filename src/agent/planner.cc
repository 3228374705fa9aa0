#include "agent/planner.h"

#include <algorithm>
#include <utility>

#include "election/subnets_annotation.h"

namespace pylon::agent {

namespace {

const char* AnnouncingKey(net::Family f) {
  return f == net::Family::kV4 ? model::kAnnAnnouncingV4 : model::kAnnAnnouncingV6;
}

bool IsEtpLocal(const model::Service& s) { return s.external_traffic_policy == "Local"; }

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

std::string L2AdvertisementName(const net::IpAddress& address) {
  std::string text = address.ToString();
  for (char& c : text) {
    if (c == '.' || c == ':') c = '-';
  }
  return (address.is_v4() ? "ipv4-" : "ipv6-") + text;
}

std::vector<net::Prefix> NodeNetwork::Subnets() const {
  std::vector<net::Prefix> out;
  for (const auto& i : interfaces) {
    for (const auto& s : i.subnets) out.push_back(s.Masked());
  }
  std::sort(out.begin(), out.end(), election::PrefixLess);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<NodeNetwork::Match> NodeNetwork::Find(const net::IpAddress& address) const {
  for (const auto& i : interfaces) {
    for (const auto& s : i.subnets) {
      if (s.Contains(address)) return Match{&i, s.Masked()};
    }
  }
  return std::nullopt;
}

struct Planner::AddressGroup {
  std::vector<const ServiceInput*> services;  // in input order
  bool lace = false;
};

Result<Planner> Planner::Create(PlannerOptions options) {
  election::ElectorOptions eo;
  eo.local_node = options.self;
  eo.stickiness = options.stickiness;
  auto elector = election::Elector::Create(eo);
  if (!elector) return tl::unexpected(elector.error());
  return Planner(std::move(options), std::move(*elector));
}

Planner::Planner(PlannerOptions options, election::Elector elector)
    : options_(std::move(options)), elector_(std::move(elector)) {}

bool Planner::IsLocalClass(const net::IpAddress& address, const NodeNetwork& network,
                           const election::Membership& membership) {
  if (membership.generation() != subnets_generation_) {
    subnets_generation_ = membership.generation();
    member_subnets_.clear();
    for (const auto& [name, m] : membership.members()) {
      member_subnets_.insert(member_subnets_.end(), m.subnets.begin(), m.subnets.end());
    }
    std::sort(member_subnets_.begin(), member_subnets_.end(), election::PrefixLess);
    member_subnets_.erase(std::unique(member_subnets_.begin(), member_subnets_.end()),
                          member_subnets_.end());
  }
  if (network.Find(address)) return true;
  return std::any_of(member_subnets_.begin(), member_subnets_.end(),
                     [&](const net::Prefix& p) { return p.Contains(address); });
}

void Planner::Report(Plan& plan, std::set<std::string>& seen, const ServiceRef& svc,
                     const std::string& reason, const std::string& message, bool reporter) {
  std::string key = svc.Key() + "|" + message;
  seen.insert(key);
  if (!reporter || reported_.count(key)) return;
  reported_.insert(key);
  plan.events.push_back(ServiceEvent{svc, true, reason, message});
}

Plan Planner::Compute(const PlanInputs& in, const election::Membership& membership,
                      SteadyTime now) {
  Plan plan;
  const NodeNetwork& network = *in.network;
  const std::string& self = options_.self.str();
  const bool active = in.healthy && !in.shutting_down;
  plan.live_members = membership.LiveCount(now);

  // The reporter of problems: the live member with the lowest name.
  std::optional<NodeName> reporter_name;
  for (const auto& [name, m] : membership.members()) {
    if (membership.IsLive(m, now)) {
      reporter_name = name;
      break;
    }
  }
  const bool reporter = active && reporter_name && *reporter_name == options_.self;

  // Addresses in use, each with the Services holding it (shared addresses have several).
  std::map<net::IpAddress, AddressGroup> groups;
  for (const ServiceInput& si : *in.services) {
    if (si.owner.owner == model::Owner::kNone || si.service.deleting) continue;
    for (const auto& ip : si.service.ingress) {
      AddressGroup& g = groups[ip];
      g.services.push_back(&si);
      if (si.owner.owner == model::Owner::kLaceClass) g.lace = true;
    }
  }

  std::map<std::string, const L2Advertisement*> l2_by_name;
  for (const auto& l2 : *in.l2advertisements) l2_by_name[l2.name] = &l2;

  // Classify; hand the local ones to the elector.
  std::set<net::IpAddress> local;
  std::set<net::IpAddress> unannounced;           // local, with no recorded announcer
  std::set<net::IpAddress> deferred;              // local, its announcer not seen yet (start-up)
  std::map<net::IpAddress, NodeName> announcers;  // local, announced by another node
  std::set<std::string> seen_problems;
  std::set<net::IpAddress> affinity_fallback_now;
  for (auto& [ip, g] : groups) {
    // A LoadBalancerClass of mode l3 and a purelb.io/v2 `remote` group: always on kube-lb0 (for
    // the routing daemon to announce). A v2 `local` group: never virtual.
    const auto match = in.config->FindAddress(ip);
    const auto mode = match ? match->group->mode : config::AnnounceMode::kLocalOrVirtual;
    const bool l3 = mode == config::AnnounceMode::kL3 || mode == config::AnnounceMode::kRemote;
    if (!l3 && IsLocalClass(ip, network, membership)) {
      local.insert(ip);
      election::AddressSpec spec;
      if (auto it = l2_by_name.find(L2AdvertisementName(ip)); g.lace && it != l2_by_name.end()) {
        spec.current_announcer = NodeName(it->second->node);
      }
      for (const ServiceInput* si : g.services) {
        if (spec.current_announcer) break;
        if (const std::string* v = si->service.Annotation(AnnouncingKey(ip.family()))) {
          if (auto node = model::AnnouncerOf(*v, ip)) spec.current_announcer = NodeName(*node);
        }
      }
      if (!spec.current_announcer) unannounced.insert(ip);
      if (spec.current_announcer && *spec.current_announcer != options_.self) {
        announcers[ip] = *spec.current_announcer;
      }
      if (in.defer_to_unseen_announcers && spec.current_announcer &&
          *spec.current_announcer != options_.self) {
        // Never seen at all (no lease yet); a node seen and then lost fails over as always.
        if (membership.Find(*spec.current_announcer) == nullptr) deferred.insert(ip);
      }
      if (options_.etp_mode == EtpLocalMode::kElect) {
        std::optional<std::set<std::string>> allowed;
        for (const ServiceInput* si : g.services) {
          if (!IsEtpLocal(si->service)) continue;
          std::set<std::string> nodes = NodesWithLocalEndpoint(*si, ip.family());
          if (!allowed) {
            allowed = std::move(nodes);
          } else {
            std::set<std::string> both;
            std::set_intersection(allowed->begin(), allowed->end(), nodes.begin(), nodes.end(),
                                  std::inserter(both, both.end()));
            allowed = std::move(both);
          }
        }
        if (allowed) {
          spec.allowed_nodes.emplace();
          for (const auto& n : *allowed) spec.allowed_nodes->push_back(NodeName(n));
        }
      }
      if (!spec.allowed_nodes && g.services.size() == 1) {
        const ServiceInput& si = *g.services.front();
        if (si.service.EndpointAffinity() && !si.service.Annotation(model::kAnnSharing)) {
          std::vector<NodeName> preferred;
          for (const auto& n : NodesWithServingEndpoint(si, ip.family())) {
            const NodeName name(n);
            const election::Member* m = membership.Find(name);
            if (!m || !membership.IsLive(*m, now)) continue;
            if (in.excluded_nodes && std::find(in.excluded_nodes->begin(), in.excluded_nodes->end(),
                                               name) != in.excluded_nodes->end()) {
              continue;
            }
            if (std::any_of(m->subnets.begin(), m->subnets.end(),
                            [&](const net::Prefix& p) { return p.Contains(ip); })) {
              preferred.push_back(name);
            }
          }
          if (!preferred.empty()) {
            spec.allowed_nodes = std::move(preferred);
          } else {
            affinity_fallback_now.insert(ip);
            if (!affinity_fallback_.count(ip)) ++plan.affinity_fallbacks;
          }
        }
      }
      elector_.SetAddress(ip, spec);
      continue;
    }
    // Virtual class.
    if (mode == config::AnnounceMode::kLocal) {
      for (const ServiceInput* si : g.services) {
        Report(plan, seen_problems, {si->service.ns, si->service.name}, "NoNodeOnSubnet",
               "address " + ip.ToString() + " of a purelb.io/v2 local ServiceGroup is on no " +
                   "node's subnet; local addresses are never put on the virtual interface",
               reporter);
      }
      continue;
    }
    if (g.lace && !l3) {
      for (const ServiceInput* si : g.services) {
        if (si->owner.owner != model::Owner::kLaceClass) continue;
        Report(plan, seen_problems, {si->service.ns, si->service.name}, "NoNodeOnSubnet",
               "address " + ip.ToString() + " of LoadBalancerClass " + si->owner.name +
                   " (mode l2) is on no node's subnet; l2 addresses are never virtual",
               reporter);
      }
      continue;
    }
    int length = net::FamilyBits(ip.family());
    // mode l3 classes have no aggregation: every address is announced as a host route.
    if (match && mode != config::AnnounceMode::kL3) length = match->aggregation_length;
    // An aggregate is announced by every node holding any address inside it: with ETP Local,
    // nodes without an endpoint would attract this Service's traffic and drop it (docs/bgp.md).
    if (length < net::FamilyBits(ip.family())) {
      for (const ServiceInput* si : g.services) {
        if (!IsEtpLocal(si->service)) continue;
        Report(
            plan, seen_problems, {si->service.ns, si->service.name}, "EtpLocalAggregated",
            "address " + ip.ToString() + " is announced as part of a /" + std::to_string(length) +
                " aggregate, which nodes without a local endpoint announce too; use "
                "aggregation /" +
                std::to_string(net::FamilyBits(ip.family())) + " for externalTrafficPolicy Local",
            reporter);
      }
    }
    if (in.shutting_down || network.virtual_ifindex == 0) continue;
    if (g.services.size() == 1 && IsEtpLocal(g.services.front()->service)) {
      auto slices = SlicePointers(*g.services.front(), ip.family());
      if (!model::HasLocalEndpoint(slices, self)) continue;
    }
    auto prefix = net::Prefix::Make(ip, length);
    if (!prefix) continue;  // aggregation lengths are validated by config; cannot happen
    DesiredAddress d{
        *prefix, network.virtual_interface, network.virtual_ifindex, AddressKind::kVirtual, {}};
    for (const ServiceInput* si : g.services) d.services.push_back(si->service.Key());
    std::sort(d.services.begin(), d.services.end());
    plan.addresses.push_back(std::move(d));
  }
  affinity_fallback_ = std::move(affinity_fallback_now);
  for (auto it = elected_.begin(); it != elected_.end();) {
    if (!local.count(*it)) {
      elector_.RemoveAddress(*it);
      it = elected_.erase(it);
    } else {
      ++it;
    }
  }
  elected_.insert(local.begin(), local.end());

  if (in.excluded_nodes) {
    elector_.SetExcludedNodes(*in.excluded_nodes);
  } else {
    elector_.SetExcludedNodes({});
  }
  const election::ElectionResult& result = elector_.Evaluate(membership, now);
  for (const auto& c : result.changes) {
    if (c.before && c.after && *c.before != *c.after) ++plan.winner_changes;
    if (c.before && !c.after) ++plan.winner_changes;
  }

  std::map<ServiceRef, AnnotationPatch> patches;
  std::set<std::string> lace_names;
  for (const auto& ip : local) {
    const AddressGroup& g = groups[ip];
    if (g.lace) lace_names.insert(L2AdvertisementName(ip));
    const NodeName* winner = elector_.WinnerOf(ip);
    if (in.keep && !in.shutting_down && in.keep->count(ip) &&
        !(winner && *winner == options_.self && active)) {
      // Kept as it is: no announcing annotation, no L2Advertisement, no reset.
      if (auto match = network.Find(ip)) {
        if (auto prefix = net::Prefix::Make(ip, match->subnet.length())) {
          DesiredAddress d{
              *prefix, match->interface->name, match->interface->ifindex, AddressKind::kLocal, {}};
          for (const ServiceInput* si : g.services) d.services.push_back(si->service.Key());
          std::sort(d.services.begin(), d.services.end());
          plan.addresses.push_back(std::move(d));
          continue;
        }
      }
    }
    if (!winner) {
      for (const ServiceInput* si : g.services) {
        Report(plan, seen_problems, {si->service.ns, si->service.name}, "NoLiveNode",
               "no live node on the subnet of " + ip.ToString() + " can announce it", reporter);
      }
      continue;
    }
    if (*winner != options_.self || !active) continue;
    if (in.hold_off && (!in.held || !in.held->count(ip))) continue;
    if (deferred.count(ip) && (!in.held || !in.held->count(ip))) continue;
    auto match = network.Find(ip);
    if (!match) continue;  // our lease still lists a subnet we no longer have: next pass fixes it
    auto prefix = net::Prefix::Make(ip, match->subnet.length());
    if (!prefix) continue;
    const std::string& iface = match->interface->name;
    DesiredAddress d{*prefix, iface, match->interface->ifindex, AddressKind::kLocal, {}};
    d.first_announcement = unannounced.count(ip) > 0;
    if (auto a = announcers.find(ip); a != announcers.end()) d.previous_announcer = a->second.str();
    // The annotation's form follows the API version of the address's ServiceGroup
    // (model/announcing.h).
    const auto group_of = in.config->FindAddress(ip);
    const bool v2 = group_of && group_of->group->version == config::PurelbVersion::kV2;
    for (const ServiceInput* si : g.services) {
      const model::Service& s = si->service;
      ServiceRef ref{s.ns, s.name};
      d.services.push_back(s.Key());
      const std::string* cur = s.Annotation(AnnouncingKey(ip.family()));
      std::string announcing;
      if (v2) {
        std::vector<net::IpAddress> same_family;
        for (const auto& a : s.ingress) {
          if (a.family() == ip.family()) same_family.push_back(a);
        }
        announcing = model::ClaimAnnouncingV2(cur ? *cur : "", self, iface, ip, same_family);
      } else {
        announcing = model::FormatAnnouncingV1(self, iface);
      }
      if (!cur || *cur != announcing) {
        patches[ref].service = ref;
        patches[ref].observed_version = s.resource_version;
        patches[ref].annotations[AnnouncingKey(ip.family())] = announcing;
      }
      if (IsEtpLocal(s) && options_.etp_mode == EtpLocalMode::kReset) {
        if (std::find(plan.etp_resets.begin(), plan.etp_resets.end(), ref) ==
            plan.etp_resets.end()) {
          plan.etp_resets.push_back(ref);
        }
      }
    }
    std::sort(d.services.begin(), d.services.end());
    if (g.lace) {
      const ServiceInput* owner = nullptr;
      for (const ServiceInput* si : g.services) {
        if (si->owner.owner == model::Owner::kLaceClass) {
          owner = si;
          break;
        }
      }
      L2Advertisement want{L2AdvertisementName(ip),
                           ip,
                           owner->service.ns,
                           owner->service.name,
                           std::string(model::kLacePrefix) + owner->owner.name,
                           self,
                           iface};
      auto it = l2_by_name.find(want.name);
      if (it == l2_by_name.end() || !(*it->second == want)) plan.l2_upserts.push_back(want);
    }
    plan.addresses.push_back(std::move(d));
  }

  if (active) {
    // Announcing annotations naming this node for a family the Service no longer has.
    for (const ServiceInput& si : *in.services) {
      if (si.owner.owner == model::Owner::kNone) continue;
      for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
        const std::string* cur = si.service.Annotation(AnnouncingKey(f));
        if (!cur) continue;
        if (!model::AnnouncingNames(*cur, self)) continue;
        bool has = !si.service.deleting &&
                   std::any_of(si.service.ingress.begin(), si.service.ingress.end(),
                               [&](const net::IpAddress& a) { return a.family() == f; });
        if (has) continue;
        ServiceRef ref{si.service.ns, si.service.name};
        patches[ref].service = ref;
        patches[ref].observed_version = si.service.resource_version;
        patches[ref].annotations[AnnouncingKey(f)] = std::nullopt;
      }
    }
    // L2Advertisements whose address left every lace Service: deleted by the node they name, or
    // by the reporter when that node is gone.
    for (const auto& l2 : *in.l2advertisements) {
      if (lace_names.count(l2.name)) continue;
      bool named_live = membership.IsLive(NodeName(l2.node), now);
      if (l2.node == self || (!named_live && reporter)) plan.l2_deletes.push_back(l2.name);
    }
  }
  for (auto& [ref, p] : patches) plan.annotation_patches.push_back(std::move(p));

  std::sort(plan.addresses.begin(), plan.addresses.end(),
            [](const DesiredAddress& a, const DesiredAddress& b) {
              return a.address.address() < b.address.address();
            });
  plan.virtual_in_use =
      std::any_of(plan.addresses.begin(), plan.addresses.end(),
                  [](const DesiredAddress& d) { return d.kind == AddressKind::kVirtual; });
  // A problem that went away may be reported again if it comes back.
  for (auto it = reported_.begin(); it != reported_.end();) {
    it = seen_problems.count(*it) ? std::next(it) : reported_.erase(it);
  }
  return plan;
}

}  // namespace pylon::agent
