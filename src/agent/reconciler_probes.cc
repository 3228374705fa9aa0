// The Reconciler's duplicate-address detection: probes before first announcing (the ProbeGate),
// probe ahead in the background, foreign claims on held addresses, the conflict annotation.
#include <algorithm>

#include "agent/agent_metrics.h"
#include "agent/reconciler.h"
#include "common/log.h"
#include "netlink/ops.h"
#include "packet/mac.h"

namespace pylon::agent {

std::set<std::string> MemberMacs(const election::Membership& membership) {
  std::set<std::string> out;
  for (const auto& [name, m] : membership.members()) out.insert(m.macs.begin(), m.macs.end());
  return out;
}

std::optional<net::MacAddress> Reconciler::InterfaceMac(const std::string& interface) const {
  auto link = d_.netlink->GetLink(interface);
  if (!link) return std::nullopt;
  auto mac = net::MacAddress::FromBytes(link->hwaddr);
  if (!mac) return std::nullopt;
  return *mac;
}

void Reconciler::SetConflictAnnotation(const PlanInputs& in,
                                       const std::vector<std::string>& services,
                                       const net::IpAddress& address,
                                       const std::optional<model::AddressConflict>& entry) {
  const std::string key = model::ConflictAnnotationKey(address);
  for (const auto& svc : services) {
    const ServiceInput* si = nullptr;
    for (const auto& s : *in.services) {
      if (s.service.Key() == svc) {
        si = &s;
        break;
      }
    }
    if (si == nullptr) continue;
    const std::string* cur = si->service.Annotation(key);
    std::optional<std::string> want;
    if (entry) {
      // An entry of the same owner is left as it is (its time is the first sighting).
      if (cur) {
        auto shown = model::ParseAddressConflict(*cur);
        if (shown && shown->address == address && shown->mac == entry->mac) continue;
      }
      want = model::FormatAddressConflict(*entry);
    } else if (cur == nullptr) {
      continue;
    }
    AnnotationPatch p;
    p.service = ServiceRef::FromKey(svc);
    p.annotations[key] = want;
    d_.writer->PatchAnnotations(p);
  }
}

void Reconciler::GateProbes(const PlanInputs& in, const election::Membership& membership,
                            Plan& plan, SteadyTime now) {
  for (const ProbeResult& res : d_.prober->TakeResults()) {
    if (res.error) {
      log::Warn("duplicate-address probe failed; taking the address unprobed",
                {{"address", res.target.address.ToString()},
                 {"interface", res.target.interface},
                 {"error", *res.error}});
    } else if (!res.owner) {
      log::Debug("duplicate-address probe: free",
                 {{"address", res.target.address.ToString()}, {"interface", res.target.interface}});
    }
    gate_.Record(res, now);
  }
  const auto& owned = d_.sync->owned();
  std::vector<ProbeTarget> candidates;
  std::map<net::IpAddress, std::vector<std::string>> services;
  std::set<net::IpAddress> preprobed;
  // Requested addresses (purelb.io/addresses, the lace annotation, spec.loadBalancerIP) keep the
  // full probe even when they were probed ahead.
  std::set<net::IpAddress> requested;
  if (d_.background && in.services) {
    for (const auto& si : *in.services) {
      std::string text = si.service.load_balancer_ip;
      for (const char* key : {model::kAnnAddresses, model::kAnnLaceAddresses}) {
        if (const std::string* v = si.service.Annotation(key)) text += "," + *v;
      }
      std::size_t from = 0;
      while (from <= text.size()) {
        const std::size_t comma = std::min(text.find(',', from), text.size());
        std::string item = text.substr(from, comma - from);
        std::erase_if(item, [](char c) { return c == ' ' || c == '\t'; });
        if (auto ip = net::IpAddress::Parse(item)) requested.insert(*ip);
        from = comma + 1;
      }
    }
  }
  for (const auto& a : plan.addresses) {
    if (a.kind != AddressKind::kLocal) continue;
    const net::IpAddress& ip = a.address.address();
    // A pre-probed address being verified, or withdrawn after its verification found a foreign
    // owner, stays a candidate although it was announced (and so is no first announcement).
    if (!gate_.Tracks(ip)) {
      if (!a.first_announcement) continue;
      if (owned.count(OwnedAddress{a.interface, a.address})) continue;
    }
    if (d_.background && !requested.count(ip) &&
        (ahead_.Fresh(ip, a.interface, now) || ahead_free_elsewhere_.count(ip))) {
      preprobed.insert(ip);
    }
    candidates.push_back(ProbeTarget{a.address.address(), a.interface, a.ifindex});
    services[a.address.address()] = a.services;
  }
  ProbeGate::Decision dec = gate_.Decide(candidates, now, &preprobed);
  if (!dec.verify.empty()) {
    const int started = StartProbes(dec.verify, WithMemberMacs(d_.verify, membership), now,
                                    "pre-probed address: announced at once, one probe in parallel");
    if (d_.metrics && started > 0) d_.metrics->Add(kMetricProbeAheadAnnounced, {}, started);
  }
  if (!dec.start.empty()) {
    StartProbes(dec.start, WithMemberMacs(d_.probe, membership), now,
                "probing before first announcement");
  }
  const std::string& self = d_.planner->options().self.str();
  const WallTime wall = d_.clock->WallNow();
  for (const FoundConflict& c : dec.reported) {
    const std::string msg = "address " + c.address.ToString() +
                            " is in use by another host: " + c.mac.ToString() +
                            " answered the duplicate-address probe node " + self +
                            " sent on interface " + c.interface + "; not announced";
    log::Warn(
        "address conflict: not announced",
        {{"address", c.address.ToString()}, {"mac", c.mac.ToString()}, {"interface", c.interface}});
    if (d_.metrics) d_.metrics->Add(kMetricConflictsDetected, {{"kind", "probe"}});
    const auto& svcs = services[c.address];
    for (const auto& key : svcs) {
      d_.writer->Event(ServiceEvent{ServiceRef::FromKey(key), true, "AddressConflict", msg});
    }
    conflict_entries_[c.address] =
        model::AddressConflict{c.address, c.mac.ToString(), self, c.interface, wall};
  }
  // Level-based: every address still withheld for a conflict has its entry in the annotation of
  // its Services (a failed write is retried by a later pass; the writer drops repeats).
  std::erase_if(conflict_entries_, [&](const auto& kv) { return !dec.withhold.count(kv.first); });
  for (const auto& [ip, entry] : conflict_entries_) {
    auto it = services.find(ip);
    if (it == services.end()) continue;
    SetConflictAnnotation(in, it->second, ip, entry);
  }
  for (const auto& ip : dec.cleared) {
    log::Info("address conflict cleared: probe answered by nobody", {{"address", ip.ToString()}});
  }
  // Entries of addresses this node is about to take after a free probe are stale: remove them.
  for (const auto& [ip, svcs] : services) {
    if (dec.withhold.count(ip)) continue;
    SetConflictAnnotation(in, svcs, ip, std::nullopt);
  }
  WithholdFromPlan(plan, dec.withhold);
}

int Reconciler::StartProbes(const std::vector<ProbeTarget>& targets,
                            const packet::ProbeOptions& opts, SteadyTime now,
                            std::string_view what) {
  int started = 0;
  for (const ProbeTarget& t : targets) {
    auto mac = InterfaceMac(t.interface);
    if (!mac) {
      gate_.Record(ProbeResult{t, std::nullopt, "interface " + t.interface + " has no MAC"}, now);
      continue;
    }
    log::Debug(what, {{"address", t.address.ToString()}, {"interface", t.interface}});
    d_.prober->Start(ProbeJob{t, packet::Interface{t.ifindex, *mac}, opts});
    ++started;
  }
  return started;
}

packet::ProbeOptions Reconciler::WithMemberMacs(packet::ProbeOptions opts,
                                                const election::Membership& membership) const {
  for (const auto& mac : MemberMacs(membership)) {
    if (auto m = net::MacAddress::Parse(mac)) opts.ignore.push_back(*m);
  }
  return opts;
}

void Reconciler::SetProbeAhead(std::vector<net::IpAddress> candidates,
                               std::set<net::IpAddress> free_elsewhere) {
  ahead_candidates_ = std::move(candidates);
  ahead_free_elsewhere_ = std::move(free_elsewhere);
}

std::vector<model::ProbedAddress> Reconciler::ProbeAheadFindings() const {
  return ahead_.Published(d_.clock->Now());
}

void Reconciler::RunProbeAhead(const PlanInputs& in, const election::Membership& membership,
                               const Plan& plan, SteadyTime now) {
  const WallTime wall = d_.clock->WallNow();
  const std::set<std::string> member_macs = MemberMacs(membership);
  for (ProbeResult res : d_.background->TakeResults()) {
    if (res.owner && member_macs.count(res.owner->ToString())) {
      // Another node probing the same address (two views of the membership, or a MAC not known
      // when the probe started): not a foreign host. Unproven; probed again.
      res.owner.reset();
      res.error = "answered by member node MAC";
    }
    if (res.error) {
      log::Debug("probe ahead failed",
                 {{"address", res.target.address.ToString()}, {"error", *res.error}});
    } else if (res.owner) {
      log::Warn("pool address taken by a foreign host (probed ahead of any Service)",
                {{"address", res.target.address.ToString()},
                 {"mac", res.owner->ToString()},
                 {"interface", res.target.interface}});
    }
    ahead_.Record(res, now, wall);
  }
  if (!ahead_elector_) {
    auto e = election::Elector::Create({d_.planner->options().self});
    if (!e) return;
    ahead_elector_.emplace(std::move(*e));
  }
  // The candidates (and what this node found taken, so it keeps rechecking them) minus what a
  // Service already has: elected like an unannounced address of a Service.
  std::set<net::IpAddress> in_plan;
  for (const auto& a : plan.addresses) in_plan.insert(a.address.address());
  std::set<net::IpAddress> want;
  for (const auto& ip : ahead_candidates_) {
    if (!in_plan.count(ip)) want.insert(ip);
  }
  for (const auto& t : ahead_.Taken()) {
    if (!in_plan.count(t.address)) want.insert(t.address);
  }
  for (const auto& ip : ahead_elected_) {
    if (!want.count(ip)) ahead_elector_->RemoveAddress(ip);
  }
  for (const auto& ip : want) {
    if (!ahead_elected_.count(ip)) ahead_elector_->SetAddress(ip, {});
  }
  ahead_elected_ = want;
  if (in.excluded_nodes) ahead_elector_->SetExcludedNodes(*in.excluded_nodes);
  std::vector<ProbeTarget> targets;
  // Only while this node may take addresses at all: healthy, not stopping, and not in the
  // start-up hold-off (until it has seen its peers, every agent would think itself elected and
  // they would probe the same addresses at once, each seeing the others' probes as claims).
  if (in.healthy && !in.shutting_down && !in.hold_off && !in.defer_to_unseen_announcers &&
      in.network) {
    for (const auto& ip : ahead_elector_->Evaluate(membership, now).local) {
      auto m = in.network->Find(ip);
      if (!m) continue;
      targets.push_back(ProbeTarget{ip, m->interface->name, m->interface->ifindex});
    }
  }
  ahead_.SetTargets(targets, now);
  const std::vector<ProbeTarget> due = ahead_.Due(now);
  if (!due.empty()) {
    const packet::ProbeOptions opts = WithMemberMacs(d_.probe, membership);
    for (const ProbeTarget& t : due) {
      auto mac = InterfaceMac(t.interface);
      if (!mac) {
        ahead_.Record(ProbeResult{t, std::nullopt, "interface " + t.interface + " has no MAC"}, now,
                      wall);
        continue;
      }
      d_.background->Start(ProbeJob{t, packet::Interface{t.ifindex, *mac}, opts});
    }
  }
  if (d_.metrics) {
    metrics::Registry& m = *d_.metrics;
    if (ahead_.probes_started() > ahead_probes_reported_) {
      m.Add(kMetricProbeAheadProbes, {},
            static_cast<double>(ahead_.probes_started() - ahead_probes_reported_));
      ahead_probes_reported_ = ahead_.probes_started();
    }
    if (ahead_.conflicts_found() > ahead_conflicts_reported_) {
      m.Add(kMetricProbeAheadConflicts, {},
            static_cast<double>(ahead_.conflicts_found() - ahead_conflicts_reported_));
      ahead_conflicts_reported_ = ahead_.conflicts_found();
    }
    m.Set(kMetricProbeAheadFresh, {}, static_cast<double>(ahead_.FreshAddresses(now).size()));
    m.Set(kMetricProbeAheadTaken, {}, static_cast<double>(ahead_.Taken().size()));
  }
}

void Reconciler::HandleClaims(const election::Membership& membership) {
  if (!d_.claims) return;
  const SteadyTime now = d_.clock->Now();
  std::map<int, std::set<net::IpAddress>> by_ifindex;
  std::set<net::IpAddress> held;
  for (const auto& a : held_local_) {
    by_ifindex[a.ifindex].insert(a.address.address());
    held.insert(a.address.address());
  }
  d_.claims->SetWatched(by_ifindex);
  std::vector<SeenClaim> seen = d_.claims->TakeClaims();
  if (seen.empty()) return;
  std::set<std::string> known = MemberMacs(membership);
  for (const auto& a : held_local_) {
    if (auto mac = InterfaceMac(a.interface)) known.insert(mac->ToString());
  }
  ClaimTracker::Decision dec = claim_tracker_.Observe(seen, held, known, now);
  const std::string& self = d_.planner->options().self.str();
  for (const SeenClaim& c : dec.report) {
    const DesiredAddress* a = nullptr;
    for (const auto& h : held_local_) {
      if (h.address.address() == c.address) a = &h;
    }
    if (a == nullptr) continue;
    const std::string msg = "address " + c.address.ToString() + " announced by node " + self +
                            " on interface " + a->interface + " is also claimed by " +
                            c.mac.ToString() +
                            " (ARP/NA seen); still announced: remove the address from that host";
    log::Warn("address claimed by a foreign host", {{"address", c.address.ToString()},
                                                    {"mac", c.mac.ToString()},
                                                    {"interface", a->interface}});
    if (d_.metrics) d_.metrics->Add(kMetricConflictsDetected, {{"kind", "claim"}});
    for (const auto& key : a->services) {
      d_.writer->Event(ServiceEvent{ServiceRef::FromKey(key), true, "AddressConflict", msg});
    }
  }
  for (const auto& ip : dec.defend) {
    for (const auto& h : held_local_) {
      if (h.address.address() == ip) d_.garp->Schedule(h.interface, h.ifindex, ip, now);
    }
  }
}

}  // namespace pylon::agent
