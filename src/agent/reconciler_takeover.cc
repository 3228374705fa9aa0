// The Reconciler's takeovers: what it knows of each holder, the successor's wire check
// (TakeoverGate), and the moves it counts.
#include <algorithm>

#include "agent/agent_metrics.h"
#include "agent/reconciler.h"
#include "common/log.h"

namespace pylon::agent {

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
          ServiceEvent{ServiceRef::FromKey(key), false, "AddressMoved",
                       "Node " + self + " took over " + ip.ToString() + " (" + name + "): " + why});
    }
  }
}

}  // namespace pylon::agent
