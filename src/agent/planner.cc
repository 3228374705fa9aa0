#include "agent/planner.h"

#include <algorithm>
#include <utility>

#include "agent/planner_steps.h"
#include "election/subnets_annotation.h"

namespace pylon::agent {

using namespace planner_steps;

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

// One Compute: its inputs, and what the phases have decided so far.
struct Planner::Pass {
  Pass(const PlanInputs& inputs, const election::Membership& members, SteadyTime at,
       const std::string& self_name)
      : in(inputs),
        membership(members),
        now(at),
        network(*inputs.network),
        self(self_name),
        active(inputs.healthy && !inputs.shutting_down) {}

  const PlanInputs& in;
  const election::Membership& membership;
  const SteadyTime now;
  const NodeNetwork& network;
  const std::string& self;
  const bool active;      // healthy and not shutting down
  bool reporter = false;  // this node reports problems this pass
  Plan plan;
  AddressGroups groups;
  L2Index l2_by_name;
  // Phase 2: the local addresses, and what is recorded about their announcers.
  std::set<net::IpAddress> local;
  std::set<net::IpAddress> unannounced;           // no recorded announcer
  std::set<net::IpAddress> deferred;              // its announcer not seen yet (start-up)
  std::map<net::IpAddress, NodeName> announcers;  // announced by another node
  std::set<net::IpAddress> affinity_fallback;     // node-affinity fell back to the plain election
  // Phases 4 and 5: the writes, and the problems seen.
  std::map<ServiceRef, AnnotationPatch> patches;
  std::set<std::string> lace_names;     // L2Advertisements still owed
  std::set<std::string> seen_problems;  // "ns/name|message"
};

// The phases of planner.h's numbered list, in order.
Plan Planner::Compute(const PlanInputs& in, const election::Membership& membership,
                      SteadyTime now) {
  Pass pass = Start(in, membership, now);
  ClassifyAddresses(pass);
  Elect(pass);
  for (const net::IpAddress& address : pass.local) DecideLocal(pass, address);
  if (pass.active) CleanUp(pass);
  return Finish(pass);
}

// Phase 1, start: who reports problems, the Services by address, the L2Advertisements by name.
Planner::Pass Planner::Start(const PlanInputs& in, const election::Membership& membership,
                             SteadyTime now) const {
  Pass pass(in, membership, now, options_.self.str());
  pass.plan.live_members = membership.LiveCount(now);
  const std::optional<NodeName> reporter = ProblemReporter(membership, now);
  pass.reporter = pass.active && reporter && *reporter == options_.self;
  pass.groups = GroupByAddress(*in.services);
  for (const auto& l2 : *in.l2advertisements) pass.l2_by_name[l2.name] = &l2;
  return pass;
}

// Phase 2, classify: every address is local (elected), virtual, or an error (AddressClass).
void Planner::ClassifyAddresses(Pass& pass) {
  for (const auto& [address, group] : pass.groups) {
    const auto match = pass.in.config->FindAddress(address);
    const auto mode = match ? match->group->mode : config::AnnounceMode::kLocalOrVirtual;
    const bool on_subnet =
        !IsRoutedMode(mode) && IsLocalClass(address, pass.network, pass.membership);
    switch (Classify(mode, group.lace, on_subnet)) {
      case AddressClass::kLocal:
        ElectLocal(pass, address, group);
        break;
      case AddressClass::kLocalGroupOffSubnet:
        ReportOffSubnet(pass, address, group, false);
        break;
      case AddressClass::kLaceOffSubnet:
        ReportOffSubnet(pass, address, group, true);
        break;
      case AddressClass::kVirtual:
        AddVirtual(pass, address, group, match ? &*match : nullptr);
        break;
    }
  }
  affinity_fallback_ = std::move(pass.affinity_fallback);
}

// Phase 2, a local address: its election spec, handed to the elector.
void Planner::ElectLocal(Pass& pass, const net::IpAddress& address, const Group& group) {
  pass.local.insert(address);
  election::AddressSpec spec;
  spec.current_announcer = RecordedAnnouncer(address, group, pass.l2_by_name);
  if (!spec.current_announcer) pass.unannounced.insert(address);
  if (spec.current_announcer && *spec.current_announcer != options_.self) {
    pass.announcers[address] = *spec.current_announcer;
    // Never seen at all (no lease yet); a node seen and then lost fails over as always.
    if (pass.in.defer_to_unseen_announcers &&
        pass.membership.Find(*spec.current_announcer) == nullptr) {
      pass.deferred.insert(address);
    }
  }
  if (options_.etp_mode == EtpLocalMode::kElect) {
    spec.allowed_nodes = EtpLocalCandidates(address, group);
  }
  if (!spec.allowed_nodes && UsesEndpointAffinity(group)) {
    std::vector<NodeName> preferred = AffinityCandidates(
        address, *group.services.front(), pass.membership, pass.now, pass.in.excluded_nodes);
    if (!preferred.empty()) {
      spec.allowed_nodes = std::move(preferred);
    } else {
      pass.affinity_fallback.insert(address);
      if (!affinity_fallback_.count(address)) ++pass.plan.affinity_fallbacks;
    }
  }
  elector_.SetAddress(address, spec);
}

// Phase 2, a local-only address on no subnet: an error on its Services.
void Planner::ReportOffSubnet(Pass& pass, const net::IpAddress& address, const Group& group,
                              bool lace_class) {
  for (const ServiceInput* si : group.services) {
    if (!lace_class) {
      Report(pass, si->service, "NoNodeOnSubnet",
             "address " + address.ToString() + " of a purelb.io/v2 local ServiceGroup is on no " +
                 "node's subnet; local addresses are never put on the virtual interface");
    } else if (si->owner.owner == model::Owner::kLaceClass) {
      Report(pass, si->service, "NoNodeOnSubnet",
             "address " + address.ToString() + " of LoadBalancerClass " + si->owner.name +
                 " (mode l2) is on no node's subnet; l2 addresses are never virtual");
    }
  }
}

// Phase 2, a virtual address: held on kube-lb0 unless the ETP Local rule says otherwise.
void Planner::AddVirtual(Pass& pass, const net::IpAddress& address, const Group& group,
                         const config::AddressMatch* match) {
  const int length = VirtualPrefixLength(address, match);
  const int host = net::FamilyBits(address.family());
  // An aggregate is announced by every node holding any address inside it: with ETP Local,
  // nodes without an endpoint would attract this Service's traffic and drop it (docs/bgp.md).
  if (length < host) {
    for (const ServiceInput* si : group.services) {
      if (!IsEtpLocal(si->service)) continue;
      Report(pass, si->service, "EtpLocalAggregated",
             "address " + address.ToString() + " is announced as part of a /" +
                 std::to_string(length) +
                 " aggregate, which nodes without a local endpoint announce too; use "
                 "aggregation /" +
                 std::to_string(host) + " for externalTrafficPolicy Local");
    }
  }
  if (pass.in.shutting_down || pass.network.virtual_ifindex == 0) return;
  if (!HoldsVirtual(address, group, pass.self)) return;
  auto prefix = net::Prefix::Make(address, length);
  if (!prefix) return;  // aggregation lengths are validated by config; cannot happen
  pass.plan.addresses.push_back(DesiredAddress{*prefix, pass.network.virtual_interface,
                                               pass.network.virtual_ifindex, AddressKind::kVirtual,
                                               ServiceKeys(group)});
}

// Phase 3, elect: the elector gets exactly this pass's local addresses, then evaluates.
void Planner::Elect(Pass& pass) {
  for (auto it = elected_.begin(); it != elected_.end();) {
    if (!pass.local.count(*it)) {
      elector_.RemoveAddress(*it);
      it = elected_.erase(it);
    } else {
      ++it;
    }
  }
  elected_.insert(pass.local.begin(), pass.local.end());
  if (pass.in.excluded_nodes) {
    elector_.SetExcludedNodes(*pass.in.excluded_nodes);
  } else {
    elector_.SetExcludedNodes({});
  }
  const election::ElectionResult& result = elector_.Evaluate(pass.membership, pass.now);
  pass.plan.winner_changes += CountWinnerMoves(result.changes);
}

// Phase 4, decide one local address: keep it, report it, leave it, hold back, or take it.
void Planner::DecideLocal(Pass& pass, const net::IpAddress& address) {
  const PlanInputs& in = pass.in;
  const Group& group = pass.groups.at(address);
  if (group.lace) pass.lace_names.insert(L2AdvertisementName(address));
  const NodeName* winner = elector_.WinnerOf(address);
  const bool won = winner && *winner == options_.self && pass.active;
  if (in.keep && !in.shutting_down && in.keep->count(address) && !won) {
    // Kept as it is: no announcing annotation, no L2Advertisement, no reset.
    if (auto kept = LocalAddress(address, pass.network, group)) {
      pass.plan.addresses.push_back(std::move(*kept));
      return;
    }
  }
  if (!winner) {
    for (const ServiceInput* si : group.services) {
      Report(pass, si->service, "NoLiveNode",
             "no live node on the subnet of " + address.ToString() + " can announce it");
    }
    return;
  }
  if (!won) return;
  const bool held = in.held && in.held->count(address);
  if ((in.hold_off || pass.deferred.count(address)) && !held) return;
  auto d = LocalAddress(address, pass.network, group);
  if (!d) return;
  d->first_announcement = pass.unannounced.count(address) > 0;
  if (auto a = pass.announcers.find(address); a != pass.announcers.end()) {
    d->previous_announcer = a->second.str();
  }
  ClaimWon(pass, address, group, d->interface);
  pass.plan.addresses.push_back(std::move(*d));
}

// Phase 4, a won address: the writes it owes.
void Planner::ClaimWon(Pass& pass, const net::IpAddress& address, const Group& group,
                       const std::string& interface) const {
  // The annotation's form follows the API version of the address's ServiceGroup
  // (model/announcing.h).
  const auto group_of = pass.in.config->FindAddress(address);
  const bool v2 = group_of && group_of->group->version == config::PurelbVersion::kV2;
  const char* key = AnnouncingKey(address.family());
  for (const ServiceInput* si : group.services) {
    const model::Service& s = si->service;
    std::string announcing = AnnouncingValue(s, address, pass.self, interface, v2);
    const std::string* cur = s.Annotation(key);
    if (!cur || *cur != announcing) SetAnnotation(pass.patches, s, key, std::move(announcing));
    const ServiceRef ref{s.ns, s.name};
    if (IsEtpLocal(s) && options_.etp_mode == EtpLocalMode::kReset &&
        std::find(pass.plan.etp_resets.begin(), pass.plan.etp_resets.end(), ref) ==
            pass.plan.etp_resets.end()) {
      pass.plan.etp_resets.push_back(ref);
    }
  }
  if (group.lace) {
    L2Advertisement want = WantedL2Advertisement(address, group, pass.self, interface);
    auto it = pass.l2_by_name.find(want.name);
    if (it == pass.l2_by_name.end() || !(*it->second == want)) {
      pass.plan.l2_upserts.push_back(std::move(want));
    }
  }
}

// Phase 5, clean up (healthy only): stale announcing annotations naming this node, orphaned
// L2Advertisements.
void Planner::CleanUp(Pass& pass) const {
  for (const StaleAnnouncing& stale : StaleAnnouncingAnnotations(*pass.in.services, pass.self)) {
    SetAnnotation(pass.patches, *stale.service, AnnouncingKey(stale.family), std::nullopt);
  }
  // Deleted by the node they name, or by the reporter when that node is gone.
  pass.plan.l2_deletes =
      OrphanedL2Advertisements(*pass.in.l2advertisements, pass.lace_names, pass.self,
                               pass.membership, pass.now, pass.reporter);
}

// Phase 6, finish: the patches in Service order, the addresses sorted, problems that went away
// forgotten.
Plan Planner::Finish(Pass& pass) {
  Plan& plan = pass.plan;
  for (auto& [ref, p] : pass.patches) plan.annotation_patches.push_back(std::move(p));
  std::sort(plan.addresses.begin(), plan.addresses.end(),
            [](const DesiredAddress& a, const DesiredAddress& b) {
              return a.address.address() < b.address.address();
            });
  plan.virtual_in_use =
      std::any_of(plan.addresses.begin(), plan.addresses.end(),
                  [](const DesiredAddress& d) { return d.kind == AddressKind::kVirtual; });
  // A problem that went away may be reported again if it comes back.
  for (auto it = reported_.begin(); it != reported_.end();) {
    it = pass.seen_problems.count(*it) ? std::next(it) : reported_.erase(it);
  }
  return std::move(plan);
}

void Planner::Report(Pass& pass, const model::Service& service, const std::string& reason,
                     const std::string& message) {
  const ServiceRef ref{service.ns, service.name};
  std::string key = ref.Key() + "|" + message;
  pass.seen_problems.insert(key);
  if (!pass.reporter || reported_.count(key)) return;
  reported_.insert(key);
  pass.plan.events.push_back(ServiceEvent{ref, true, reason, message});
}

}  // namespace pylon::agent
