#include "agent/reconciler.h"

#include <algorithm>

#include "agent/agent_metrics.h"
#include "common/log.h"
#include "netlink/ops.h"
#include "packet/mac.h"

namespace pylon::agent {

namespace {

std::string FamilyLabel(net::Family f) { return f == net::Family::kV4 ? "IPv4" : "IPv6"; }

ServiceRef RefFromKey(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

const char* AnnouncingKey(net::Family f) {
  return f == net::Family::kV4 ? model::kAnnAnnouncingV4 : model::kAnnAnnouncingV6;
}

}  // namespace

void WithholdFromPlan(Plan& plan, const std::set<net::IpAddress>& addresses) {
  if (addresses.empty()) return;
  std::map<std::string, std::set<std::string>> keys_by_service;  // "ns/name" -> annotation keys
  for (const auto& a : plan.addresses) {
    if (a.kind != AddressKind::kLocal || !addresses.count(a.address.address())) continue;
    for (const auto& svc : a.services) {
      keys_by_service[svc].insert(AnnouncingKey(a.address.address().family()));
    }
  }
  std::erase_if(plan.addresses, [&](const DesiredAddress& a) {
    return a.kind == AddressKind::kLocal && addresses.count(a.address.address()) > 0;
  });
  for (auto& p : plan.annotation_patches) {
    auto it = keys_by_service.find(p.service.Key());
    if (it == keys_by_service.end()) continue;
    for (const auto& k : it->second) {
      auto v = p.annotations.find(k);
      // Only values that name this node; a removal (nullopt) is for a family no longer held.
      if (v != p.annotations.end() && v->second) p.annotations.erase(v);
    }
  }
  std::erase_if(plan.annotation_patches,
                [](const AnnotationPatch& p) { return p.annotations.empty(); });
  std::erase_if(plan.l2_upserts,
                [&](const L2Advertisement& l2) { return addresses.count(l2.address) > 0; });
}

std::set<std::string> MemberMacs(const election::Membership& membership) {
  std::set<std::string> out;
  for (const auto& [name, m] : membership.members()) out.insert(m.macs.begin(), m.macs.end());
  return out;
}

Reconciler::Reconciler(ReconcilerDeps deps)
    : d_(deps),
      sysctls_(*deps.netlink, *deps.clock, deps.sysctl_recheck),
      gate_(deps.gate),
      takeover_(deps.takeover),
      claim_tracker_(deps.claim),
      ahead_(deps.ahead),
      drains_(deps.drain_timeout) {
  if (d_.metrics) DescribeAgentMetrics(*d_.metrics);
}

void Reconciler::CheckNodeSysctls(const NodeNetwork& network, PassResult& r) {
  NodeSysctlNeeds needs;
  for (const auto& i : network.interfaces) needs.lan_interfaces.push_back(i.name);
  if (network.virtual_ifindex != 0) needs.virtual_interface = network.virtual_interface;
  const std::optional<NodeSysctlVerdict> before = sysctls_.current();
  auto res = sysctls_.Check(needs);
  if (!res) return;
  for (const auto& w : res->written) {
    log::Info("set a sysctl virtual addresses need", {{"sysctl", w}});
  }
  if (!res->changed) return;
  const NodeSysctlVerdict& v = res->verdict;
  if (d_.metrics) {
    d_.metrics->Set(kMetricStrictArpOk, {}, v.strict_arp_ok() ? 1 : 0);
    d_.metrics->Set(kMetricPromoteSecondariesOk, {}, v.promote_secondaries_ok() ? 1 : 0);
  }
  if (v.ok()) {
    log::Info("node sysctls for virtual addresses in force", {{"detail", v.Explain()}});
    if (before && !before->ok()) {
      r.node_report = NodeReport{false, "NodeSysctlsInForce", v.Explain()};
    }
    return;
  }
  log::Warn(v.strict_arp_ok() ? "node lacks promote_secondaries" : "node lacks strict ARP",
            {{"missing", v.Summary()}, {"detail", v.Explain()}});
  r.node_report =
      NodeReport{true, v.strict_arp_ok() ? "PromoteSecondariesOff" : "StrictArpOff", v.Explain()};
}

void Reconciler::ReportSyncProblems(const SyncReport& sync) {
  std::set<std::string> errors;
  for (const auto& e : sync.errors) {
    if (errors.insert(e.message()).second && !reported_errors_.count(e.message())) {
      log::Warn("address sync", {{"error", e.message()}});
    }
  }
  reported_errors_ = std::move(errors);
  std::set<std::string> deferred(sync.deferred.begin(), sync.deferred.end());
  for (const auto& d : deferred) {
    if (reported_deferred_.count(d)) continue;
    log::Warn("address withdrawal deferred", {{"detail", d}});
    d_.writer->NodeEvent(true, "WithdrawalDeferred", d);
  }
  reported_deferred_ = std::move(deferred);
}

PassResult Reconciler::Run(const PlanInputs& in, const election::Membership& membership,
                           const YieldFn& yield) {
  PassResult r;
  const SteadyTime now = d_.clock->Now();
  std::set<net::IpAddress> held;
  PlanInputs with_held = in;
  if ((in.hold_off || in.defer_to_unseen_announcers) && !in.held) {
    for (const auto& o : d_.sync->owned()) held.insert(o.address.address());
    with_held.held = &held;
  }
  r.plan = d_.planner->Compute(with_held, membership, now);
  std::set<net::IpAddress> yielded;
  if (yield) {
    std::vector<net::IpAddress> local;
    for (const auto& a : r.plan.addresses) {
      if (a.kind == AddressKind::kLocal) local.push_back(a.address.address());
    }
    if (!local.empty()) {
      const std::vector<net::IpAddress> give_up = yield(local);
      if (!give_up.empty()) {
        const std::set<net::IpAddress> drop(give_up.begin(), give_up.end());
        // With what announcing them implies: a node that yields must not claim the address in the
        // announcing annotation (sticky elections everywhere would follow it).
        WithholdFromPlan(r.plan, drop);
        for (const auto& ip : drop) {
          if (!yielded_.count(ip)) {
            log::Info("yielding address (heartbeat split-brain resolution)",
                      {{"address", ip.ToString()}});
          }
        }
        yielded = drop;
      }
    }
  }
  if (d_.prober && d_.background) RunProbeAhead(in, membership, r.plan, now);
  if (d_.prober) GateProbes(in, membership, r.plan, now);
  const std::map<NodeName, HolderSigns> holders = Holders(in, membership, now);
  move_reasons_.clear();
  if (d_.wire) GateTakeovers(holders, r.plan, now);
  if (d_.apply_drain_ruleset && d_.drain_timeout > Duration(0)) UpdateDrains(holders, r.plan, now);
  if (r.plan.virtual_in_use) virtual_seen_ = true;
  if (virtual_seen_ && !in.shutting_down) CheckNodeSysctls(*in.network, r);

  yielded_ = std::move(yielded);
  // The last pass of a graceful stop tries every withdrawal now, backoff or not: a record line
  // must not outlive its address.
  r.sync = d_.sync->Apply(
      r.plan.addresses, in.shutting_down ? AddressSync::Retry::kNow : AddressSync::Retry::kBackoff);
  const std::string& self = d_.planner->options().self.str();
  for (const auto& removed : r.sync.removed) {
    d_.garp->Cancel(removed.address.address());
    log::Info("address withdrawn",
              {{"address", removed.address.ToString()}, {"interface", removed.interface}});
  }
  for (const auto& added : r.sync.added) {
    const net::IpAddress& ip = added.address.address();
    const bool local = added.kind == AddressKind::kLocal;
    log::Info("address added", {{"address", added.address.ToString()},
                                {"interface", added.interface},
                                {"kind", local ? "local" : "virtual"}});
    // Virtual addresses are held by every eligible node: an event per node and Service would be
    // an API write storm in a big cluster, so only the elected holder of a local address records
    // one.
    if (!local) continue;
    d_.garp->Schedule(added.interface, added.ifindex, ip, now);
    for (const auto& key : added.services) {
      d_.writer->Event(ServiceEvent{
          RefFromKey(key), false, "AnnouncingLocal",
          "Node " + self + " announcing " + ip.ToString() + " on interface " + added.interface});
    }
  }
  ReportMoves(r.sync, holders);
  ReportSyncProblems(r.sync);
  std::set<std::string> conflicts(r.sync.conflicts.begin(), r.sync.conflicts.end());
  for (const auto& c : conflicts) {
    if (!reported_conflicts_.count(c)) {
      log::Warn("address conflict, left untouched", {{"detail", c}});
      d_.writer->NodeEvent(true, "AddressConflict", c);
    }
  }
  reported_conflicts_ = std::move(conflicts);

  for (const auto& p : r.plan.annotation_patches) d_.writer->PatchAnnotations(p);
  for (const auto& s : r.plan.etp_resets) d_.writer->ResetTrafficPolicy(s);
  for (const auto& l2 : r.plan.l2_upserts) d_.writer->UpsertL2Advertisement(l2);
  for (const auto& n : r.plan.l2_deletes) d_.writer->DeleteL2Advertisement(n);
  for (const auto& e : r.plan.events) d_.writer->Event(e);
  d_.writer->PassDone();

  // What is held now: the plan's local addresses that the kernel sync owns.
  held_local_.clear();
  const auto& owned = d_.sync->owned();
  for (const auto& a : r.plan.addresses) {
    if (a.kind == AddressKind::kLocal && owned.count(OwnedAddress{a.interface, a.address})) {
      held_local_.push_back(a);
    }
  }
  if (d_.reannounce_interval > Duration(0)) {
    if (!next_reannounce_) next_reannounce_ = now + d_.reannounce_interval;
    if (now >= *next_reannounce_) {
      std::set<net::IpAddress> just_added;
      for (const auto& added : r.sync.added) just_added.insert(added.address.address());
      for (const auto& a : held_local_) {
        if (just_added.count(a.address.address())) continue;  // its takeover burst runs
        d_.garp->Schedule(a.interface, a.ifindex, a.address.address(), now);
      }
      if (!held_local_.empty()) {
        log::Debug("re-announcing held addresses", {{"count", std::to_string(held_local_.size())}});
      }
      next_reannounce_ = now + d_.reannounce_interval;
    }
  }

  HandleClaims(membership);
  SendDueAnnouncements();
  UpdateMetrics(r);
  return r;
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
    p.service = RefFromKey(svc);
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
    const packet::ProbeOptions opts = WithMemberMacs(d_.verify, membership);
    for (const ProbeTarget& t : dec.verify) {
      auto mac = InterfaceMac(t.interface);
      if (!mac) {
        gate_.Record(ProbeResult{t, std::nullopt, "interface " + t.interface + " has no MAC"}, now);
        continue;
      }
      log::Debug("pre-probed address: announced at once, one probe in parallel",
                 {{"address", t.address.ToString()}, {"interface", t.interface}});
      d_.prober->Start(ProbeJob{t, packet::Interface{t.ifindex, *mac}, opts});
      if (d_.metrics) d_.metrics->Add(kMetricProbeAheadAnnounced, {});
    }
  }
  if (!dec.start.empty()) {
    const packet::ProbeOptions opts = WithMemberMacs(d_.probe, membership);
    for (const ProbeTarget& t : dec.start) {
      auto mac = InterfaceMac(t.interface);
      if (!mac) {
        gate_.Record(ProbeResult{t, std::nullopt, "interface " + t.interface + " has no MAC"}, now);
        continue;
      }
      log::Debug("probing before first announcement",
                 {{"address", t.address.ToString()}, {"interface", t.interface}});
      d_.prober->Start(ProbeJob{t, packet::Interface{t.ifindex, *mac}, opts});
    }
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
      d_.writer->Event(ServiceEvent{RefFromKey(key), true, "AddressConflict", msg});
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

std::map<NodeName, HolderSigns> Reconciler::Holders(const PlanInputs& in,
                                                    const election::Membership& membership,
                                                    SteadyTime now) const {
  std::map<NodeName, HolderSigns> out;
  const NodeName& self = d_.planner->options().self;
  for (const auto& [name, m] : membership.members()) {
    if (name == self) continue;
    HolderSigns& s = out[name];
    s.member = true;
    s.released = m.released();
    s.live = membership.IsLive(m, now);
    s.last_alive = m.last_change;
    for (const auto& text : m.macs) {
      if (auto mac = net::MacAddress::Parse(text)) s.macs.push_back(*mac);
    }
  }
  if (in.peer_signs) {
    for (const auto& [name, e] : *in.peer_signs) {
      if (name == self) continue;
      HolderSigns& s = out[name];
      s.leaving = e.leaving;
      s.restarting = e.restarting;
      s.kube_proxy_url = e.kube_proxy_url;
      s.addresses = e.addresses;
      if (e.last_alive && (!s.last_alive || *e.last_alive > *s.last_alive)) {
        s.last_alive = e.last_alive;
      }
    }
  }
  if (in.excluded_nodes) {
    for (const auto& n : *in.excluded_nodes) {
      if (auto it = out.find(n); it != out.end()) it->second.excluded = true;
    }
  }
  return out;
}

void Reconciler::GateTakeovers(const std::map<NodeName, HolderSigns>& holders, Plan& plan,
                               SteadyTime now) {
  for (const WireCheckResult& res : d_.wire->TakeResults()) {
    log::Debug("wire check", {{"address", res.address.ToString()},
                              {"holder", res.holder.str()},
                              {"result", res.detail}});
    takeover_.Record(res, now);
  }
  const auto& owned = d_.sync->owned();
  std::vector<TakeoverCandidate> candidates;
  for (const auto& a : plan.addresses) {
    if (a.kind != AddressKind::kLocal || a.previous_announcer.empty()) continue;
    if (owned.count(OwnedAddress{a.interface, a.address})) continue;
    candidates.push_back(TakeoverCandidate{a.address.address(), a.interface, a.ifindex,
                                           NodeName(a.previous_announcer)});
  }
  if (candidates.empty()) {
    (void)takeover_.Decide({}, holders, now);  // forgets every deferral
    return;
  }
  TakeoverGate::Decision dec = takeover_.Decide(candidates, holders, now);
  for (const WireCheckJob& job : dec.start) {
    auto mac = InterfaceMac(job.interface);
    if (!mac) {
      // Cannot ask: the next pass takes the address over, as without the check.
      takeover_.Record(WireCheckResult{job.address, job.holder, false, std::nullopt, false,
                                       "interface " + job.interface + " has no MAC"},
                       now);
      continue;
    }
    d_.wire->Start(job, *mac);
  }
  for (const auto& def : dec.deferred) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(def.until - now);
    log::Info("deferring a takeover: the holder still answers",
              {{"address", def.address.ToString()},
               {"holder", def.holder.str()},
               {"why", def.why},
               {"at_most_ms", std::to_string(left.count())}});
  }
  move_reasons_ = std::move(dec.allowed);
  WithholdFromPlan(plan, dec.withhold);
}

void Reconciler::UpdateDrains(const std::map<NodeName, HolderSigns>& holders, const Plan& plan,
                              SteadyTime now) {
  const auto& owned = d_.sync->owned();
  std::set<net::IpAddress> held;
  for (const auto& a : plan.addresses) {
    if (a.kind != AddressKind::kLocal) continue;
    held.insert(a.address.address());
    if (a.previous_announcer.empty() || owned.count(OwnedAddress{a.interface, a.address})) continue;
    auto h = holders.find(NodeName(a.previous_announcer));
    if (h == holders.end() || !h->second.excluded || !h->second.live) continue;
    auto via = DrainVia(a.address.Masked(), h->second.addresses);
    if (!via) {
      log::Info("planned move without drain: no address of the previous holder on the subnet",
                {{"address", a.address.address().ToString()}, {"from", a.previous_announcer}});
      continue;
    }
    drains_.Start(DrainForward{a.address.address(), *via, a.interface, h->first, {}}, now);
  }
  drains_.Retain(held, now);
  if (!drains_.TakeChanged() && !drain_write_failed_) return;
  const std::vector<DrainForward> forwards = drains_.Forwards();
  if (d_.metrics) d_.metrics->Set(kMetricDrainForwards, {}, static_cast<double>(forwards.size()));
  auto s = d_.apply_drain_ruleset(RenderDrainRuleset(forwards));
  drain_write_failed_ = !s.has_value();
  if (!s) {
    log::Warn(
        "drain: cannot write the forwarding table; established flows through moved "
        "addresses are reset",
        {{"error", s.error().message()}});
    return;
  }
  std::string what;
  for (const auto& f : forwards) {
    what += (what.empty() ? "" : ",") + f.address.ToString() + "->" + f.from.str();
  }
  log::Info("drain: forwarding the established flows of moved addresses to their previous holders",
            {{"forwards", what.empty() ? "none" : what}});
}

void Reconciler::ClearDrains() {
  if (!d_.apply_drain_ruleset || d_.drain_timeout <= Duration(0)) return;
  drains_.Retain({}, d_.clock->Now());
  (void)drains_.TakeChanged();
  if (auto s = d_.apply_drain_ruleset(RenderDrainRuleset({})); !s) {
    log::Warn("drain: cannot clear the forwarding table", {{"error", s.error().message()}});
  }
}

void Reconciler::ReportMoves(const SyncReport& sync,
                             const std::map<NodeName, HolderSigns>& holders) {
  const std::string& self = d_.planner->options().self.str();
  for (const auto& added : sync.added) {
    if (added.kind != AddressKind::kLocal || added.previous_announcer.empty()) continue;
    const net::IpAddress& ip = added.address.address();
    MoveReason reason;
    if (auto it = move_reasons_.find(ip); it != move_reasons_.end()) {
      reason = it->second;
    } else {
      auto h = holders.find(NodeName(added.previous_announcer));
      reason = ClassifyMove(h == holders.end() ? nullptr : &h->second);
    }
    const std::string name(MoveReasonName(reason));
    const std::string& from = added.previous_announcer;
    if (d_.metrics) d_.metrics->Add(kMetricAddressMoves, {{"reason", name}});
    log::Info("address moved here", {{"address", ip.ToString()}, {"from", from}, {"reason", name}});
    std::string why;
    switch (reason) {
      case MoveReason::kCrash:
        why = "node " + from + " fell silent and no longer carries the address";
        break;
      case MoveReason::kPlanned:
        why = "node " + from + " left the election in good order";
        break;
      case MoveReason::kKubeProxy:
        why = "node " + from + " is not eligible (its kube-proxy fails its health check)";
        break;
      case MoveReason::kElection:
      case MoveReason::kRestartAdopted:
        why = "the election moved it from node " + from;
        break;
    }
    for (const auto& key : added.services) {
      d_.writer->Event(
          ServiceEvent{RefFromKey(key), false, "AddressMoved",
                       "Node " + self + " took over " + ip.ToString() + " (" + name + "): " + why});
    }
  }
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
      d_.writer->Event(ServiceEvent{RefFromKey(key), true, "AddressConflict", msg});
    }
  }
  for (const auto& ip : dec.defend) {
    for (const auto& h : held_local_) {
      if (h.address.address() == ip) d_.garp->Schedule(h.interface, h.ifindex, ip, now);
    }
  }
}

void Reconciler::ReannounceHeld() {
  const SteadyTime now = d_.clock->Now();
  for (const auto& a : held_local_) {
    d_.garp->Schedule(a.interface, a.ifindex, a.address.address(), now);
  }
  if (!held_local_.empty()) {
    log::Info("re-announcing held addresses: peers heard again after a silence",
              {{"count", std::to_string(held_local_.size())}});
  }
  SendDueAnnouncements();
}

std::vector<net::IpAddress> Reconciler::HeldLocal() const {
  std::vector<net::IpAddress> out;
  for (const auto& a : held_local_) out.push_back(a.address.address());
  return out;
}

void Reconciler::SendDueAnnouncements() {
  for (const auto& due : d_.garp->TakeDue(d_.clock->Now())) {
    const std::string family = FamilyLabel(due.address.family());
    Status st = Ok();
    auto link = d_.netlink->GetLink(due.interface);
    if (!link) {
      st = Fail(link.error());
    } else {
      auto mac = net::MacAddress::FromBytes(link->hwaddr);
      if (!mac) {
        st = Fail(mac.error().Wrap("interface " + due.interface + " has no Ethernet address"));
      } else {
        st = d_.announcer->Announce(packet::Interface{link->index, *mac}, due.address);
      }
    }
    if (!st) {
      log::Warn("gratuitous announcement failed", {{"address", due.address.ToString()},
                                                   {"interface", due.interface},
                                                   {"error", st.error().message()}});
      if (d_.metrics) d_.metrics->Add(kMetricGarpFailed, {{"family", family}});
    } else if (d_.metrics) {
      d_.metrics->Add(kMetricGarpSent, {{"family", family}});
    }
  }
}

std::optional<SteadyTime> Reconciler::NextWakeup(const election::Membership& membership) const {
  std::optional<SteadyTime> next = d_.garp->NextDue();
  auto consider = [&](std::optional<SteadyTime> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  consider(d_.sync->NextRenewal());
  consider(d_.sync->NextRetry());
  consider(membership.NextExpiry(d_.clock->Now()));
  consider(next_reannounce_);
  consider(gate_.NextWakeup());
  consider(takeover_.NextWakeup());
  if (d_.background) consider(ahead_.NextWakeup(d_.clock->Now()));
  consider(drains_.NextExpiry());
  return next;
}

void Reconciler::UpdateMetrics(const PassResult& r) {
  if (!d_.metrics) return;
  metrics::Registry& m = *d_.metrics;
  m.Set(kMetricMemberCount, {}, static_cast<double>(r.plan.live_members));
  if (r.plan.winner_changes) {
    m.Add(kMetricWinnerChanges, {}, static_cast<double>(r.plan.winner_changes));
  }
  if (r.plan.affinity_fallbacks) {
    m.Add(kMetricAffinityFallbacks, {}, static_cast<double>(r.plan.affinity_fallbacks));
  }
  std::map<std::pair<std::string, std::string>, int> held;
  for (const char* kind : {"local", "virtual"}) {
    for (const char* fam : {"IPv4", "IPv6"}) held[{kind, fam}] = 0;
  }
  const auto& owned = d_.sync->owned();
  for (const auto& a : r.plan.addresses) {
    if (!owned.count(OwnedAddress{a.interface, a.address})) continue;
    ++held[{a.kind == AddressKind::kLocal ? "local" : "virtual", FamilyLabel(a.address.family())}];
  }
  for (const auto& [k, n] : held) {
    m.Set(kMetricAnnounced, {{"kind", k.first}, {"family", k.second}}, n);
  }
  if (!r.sync.added.empty()) {
    m.Add(kMetricAddressOps, {{"op", "add"}}, static_cast<double>(r.sync.added.size()));
  }
  if (!r.sync.removed.empty()) {
    m.Add(kMetricAddressOps, {{"op", "remove"}}, static_cast<double>(r.sync.removed.size()));
  }
  m.Set(kMetricAddressConflicts, {},
        static_cast<double>(reported_conflicts_.size() + gate_.Conflicts().size() +
                            claim_tracker_.ActiveCount(d_.clock->Now())));
}

}  // namespace pylon::agent
