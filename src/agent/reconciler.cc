#include "agent/reconciler.h"

#include <algorithm>

#include "agent/agent_metrics.h"
#include "common/log.h"
#include "netlink/ops.h"
#include "packet/mac.h"

namespace pylon::agent {

namespace {

std::string FamilyLabel(net::Family f) { return f == net::Family::kV4 ? "IPv4" : "IPv6"; }

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

std::set<net::IpAddress> Reconciler::ApplyYield(Plan& plan, const YieldFn& yield) {
  std::vector<net::IpAddress> local;
  for (const auto& a : plan.addresses) {
    if (a.kind == AddressKind::kLocal) local.push_back(a.address.address());
  }
  if (local.empty()) return {};
  const std::vector<net::IpAddress> give_up = yield(local);
  if (give_up.empty()) return {};
  const std::set<net::IpAddress> drop(give_up.begin(), give_up.end());
  // With what announcing them implies: a node that yields must not claim the address in the
  // announcing annotation (sticky elections everywhere would follow it).
  WithholdFromPlan(plan, drop);
  for (const auto& ip : drop) {
    if (!yielded_.count(ip)) {
      log::Info("yielding address (heartbeat split-brain resolution)",
                {{"address", ip.ToString()}});
    }
  }
  return drop;
}

void Reconciler::ReportSyncChanges(const SyncReport& sync, SteadyTime now) {
  const std::string& self = d_.planner->options().self.str();
  for (const auto& removed : sync.removed) {
    d_.garp->Cancel(removed.address.address());
    log::Info("address withdrawn",
              {{"address", removed.address.ToString()}, {"interface", removed.interface}});
  }
  for (const auto& added : sync.added) {
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
          ServiceRef::FromKey(key), false, "AnnouncingLocal",
          "Node " + self + " announcing " + ip.ToString() + " on interface " + added.interface});
    }
  }
}

void Reconciler::ReportConflicts(const SyncReport& sync) {
  std::set<std::string> conflicts(sync.conflicts.begin(), sync.conflicts.end());
  for (const auto& c : conflicts) {
    if (!reported_conflicts_.count(c)) {
      log::Warn("address conflict, left untouched", {{"detail", c}});
      d_.writer->NodeEvent(true, "AddressConflict", c);
    }
  }
  reported_conflicts_ = std::move(conflicts);
}

void Reconciler::WritePlan(const Plan& plan) {
  for (const auto& p : plan.annotation_patches) d_.writer->PatchAnnotations(p);
  for (const auto& s : plan.etp_resets) d_.writer->ResetTrafficPolicy(s);
  for (const auto& l2 : plan.l2_upserts) d_.writer->UpsertL2Advertisement(l2);
  for (const auto& n : plan.l2_deletes) d_.writer->DeleteL2Advertisement(n);
  for (const auto& e : plan.events) d_.writer->Event(e);
  d_.writer->PassDone();
}

void Reconciler::UpdateHeld(const Plan& plan, const SyncReport& sync, SteadyTime now) {
  // What is held now: the plan's local addresses that the kernel sync owns.
  held_local_.clear();
  const auto& owned = d_.sync->owned();
  for (const auto& a : plan.addresses) {
    if (a.kind == AddressKind::kLocal && owned.count(OwnedAddress{a.interface, a.address})) {
      held_local_.push_back(a);
    }
  }
  if (d_.reannounce_interval <= Duration(0)) return;
  if (!next_reannounce_) next_reannounce_ = now + d_.reannounce_interval;
  if (now < *next_reannounce_) return;
  std::set<net::IpAddress> just_added;
  for (const auto& added : sync.added) just_added.insert(added.address.address());
  for (const auto& a : held_local_) {
    if (just_added.count(a.address.address())) continue;  // its takeover burst runs
    d_.garp->Schedule(a.interface, a.ifindex, a.address.address(), now);
  }
  if (!held_local_.empty()) {
    log::Debug("re-announcing held addresses", {{"count", std::to_string(held_local_.size())}});
  }
  next_reannounce_ = now + d_.reannounce_interval;
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
  if (yield) yielded = ApplyYield(r.plan, yield);
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
  ReportSyncChanges(r.sync, now);
  ReportMoves(r.sync, holders);
  ReportSyncProblems(r.sync);
  ReportConflicts(r.sync);
  WritePlan(r.plan);
  UpdateHeld(r.plan, r.sync, now);
  HandleClaims(membership);
  SendDueAnnouncements();
  UpdateMetrics(r);
  return r;
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
  auto consider = [&](std::optional<SteadyTime> t) { next = Earliest(next, t); };
  consider(d_.sync->NextRenewal());
  consider(d_.sync->NextRetry());
  consider(membership.NextExpiry(d_.clock->Now()));
  consider(next_reannounce_);
  consider(gate_.NextWakeup());
  consider(takeover_.NextWakeup());
  consider(drains_.NextExpiry());
  if (d_.background) consider(ahead_.NextWakeup(d_.clock->Now()));
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
