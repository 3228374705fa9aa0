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

}  // namespace

Reconciler::Reconciler(ReconcilerDeps deps) : d_(deps) {
  if (d_.metrics) DescribeAgentMetrics(*d_.metrics);
}

void Reconciler::ApplyStrictArp(const NodeNetwork& network) {
  for (const auto& i : network.interfaces) {
    if (strict_arp_done_.count(i.name)) continue;
    auto st = netlink::ApplyStrictArp(*d_.netlink, i.name);
    if (!st) {
      log::Warn("could not set arp_ignore=1/arp_announce=2",
                {{"interface", i.name}, {"error", st.error().message()}});
      continue;
    }
    strict_arp_done_.insert(i.name);
    log::Info("virtual addresses in use: set arp_ignore=1 arp_announce=2", {{"interface", i.name}});
  }
}

PassResult Reconciler::Run(const PlanInputs& in, const election::Membership& membership,
                           const YieldFn& yield) {
  PassResult r;
  const SteadyTime now = d_.clock->Now();
  std::set<net::IpAddress> held;
  PlanInputs with_held = in;
  if (in.hold_off && !in.held) {
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
        std::erase_if(r.plan.addresses, [&](const DesiredAddress& a) {
          return a.kind == AddressKind::kLocal && drop.count(a.address.address()) > 0;
        });
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
  if (r.plan.virtual_in_use) ApplyStrictArp(*in.network);

  yielded_ = std::move(yielded);
  r.sync = d_.sync->Apply(r.plan.addresses);
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
  for (const auto& e : r.sync.errors) log::Warn("address sync", {{"error", e.message()}});
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

  SendDueAnnouncements();
  UpdateMetrics(r);
  return r;
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
      auto mac = packet::MacAddress::FromBytes(link->hwaddr);
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
  consider(membership.NextExpiry(d_.clock->Now()));
  consider(next_reannounce_);
  return next;
}

void Reconciler::UpdateMetrics(const PassResult& r) {
  if (!d_.metrics) return;
  metrics::Registry& m = *d_.metrics;
  m.Set(kMetricMemberCount, {}, static_cast<double>(r.plan.live_members));
  if (r.plan.winner_changes) {
    m.Add(kMetricWinnerChanges, {}, static_cast<double>(r.plan.winner_changes));
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
  m.Set(kMetricAddressConflicts, {}, static_cast<double>(reported_conflicts_.size()));
}

}  // namespace pylon::agent
