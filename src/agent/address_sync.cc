#include "agent/address_sync.h"

#include <algorithm>
#include <utility>

#include "agent/node_sysctls.h"
#include "common/log.h"
#include "netlink/message.h"

namespace pylon::agent {

AddressSync::AddressSync(netlink::Netlink& nl, OwnershipStore& store, const Clock& clock,
                         AddressSyncOptions options)
    : nl_(nl), store_(store), clock_(clock), options_(options) {}

Status AddressSync::Load() {
  auto owned = store_.Load();
  if (!owned) return Fail(owned.error().Wrap("loading the ownership record"));
  owned_ = std::move(*owned);
  return Ok();
}

Status AddressSync::SaveRecord() {
  auto st = store_.Save(owned_);
  if (!st) return Fail(st.error().Wrap("saving the ownership record"));
  return Ok();
}

std::optional<SteadyTime> AddressSync::NextRenewal() const {
  std::optional<SteadyTime> next;
  for (const auto& [o, due] : renew_due_) {
    if (due != SteadyTime::max()) next = Earliest(next, due);
  }
  return next;
}

void AddressSync::SetOptions(const AddressSyncOptions& options) {
  if (options == options_) return;
  options_ = options;
  renew_due_.clear();
}

std::optional<SteadyTime> AddressSync::NextRetry() const {
  std::optional<SteadyTime> next;
  for (const auto& [o, p] : pending_) {
    next = Earliest(next, p.next);
  }
  return next;
}

AddressSync::Pending& AddressSync::Backoff(const OwnedAddress& key, SteadyTime now) {
  Pending& p = pending_[key];
  p.delay =
      p.delay == Duration(0) ? options_.retry_initial : std::min(options_.retry_cap, p.delay * 2);
  p.next = now + p.delay;
  p.error.reset();
  p.deferred.clear();
  return p;
}

Status AddressSync::EnsurePromoteSecondaries(const std::string& interface) {
  if (EvaluateNodeSysctls(NodeSysctlNeeds{{}, interface}, SysctlReaderOf(nl_))
          .promote_secondaries_ok()) {
    return Ok();
  }
  auto st = nl_.WriteSysctl(netlink::PromoteSecondaries(interface), "1");
  if (!st) return Fail(st.error().Wrap("setting promote_secondaries on " + interface));
  log::Info("set promote_secondaries=1 so removing our primary address keeps the others",
            {{"interface", interface}});
  return Ok();
}

std::vector<PresentAddress> ClassifyPresent(const std::vector<netlink::AddressInfo>& addrs,
                                            const std::map<int, std::string>& link_names,
                                            const std::set<OwnedAddress>& owned) {
  std::vector<PresentAddress> present;
  for (const auto& a : addrs) {
    auto n = link_names.find(a.ifindex);
    if (n == link_names.end()) continue;
    OwnedAddress key{n->second, a.prefix};
    const bool ours = (a.proto && *a.proto == netlink::kPylonAddressProto) || owned.count(key) > 0;
    const bool v4 = a.family() == net::Family::kV4;
    const bool secondary = a.has_flag(netlink::addr_flags::kSecondary);
    present.push_back(
        PresentAddress{std::move(key), a.ifindex, ours, v4 && secondary, v4 && !secondary});
  }
  return present;
}

std::vector<const PresentAddress*> SecondariesOf(const std::vector<PresentAddress>& present,
                                                 const PresentAddress& primary,
                                                 const std::set<OwnedAddress>& gone) {
  std::vector<const PresentAddress*> out;
  const net::Prefix subnet = primary.key.address.Masked();
  for (const auto& o : present) {
    if (o.ifindex == primary.ifindex && o.secondary_v4 && !gone.count(o.key) &&
        o.key.address.length() == primary.key.address.length() &&
        subnet.Contains(o.key.address.address())) {
      out.push_back(&o);
    }
  }
  return out;
}

std::string ConflictFor(const OwnedAddress& want,
                        const std::vector<const PresentAddress*>& same_ip) {
  const PresentAddress* same = nullptr;
  const PresentAddress* holder = nullptr;  // the same IP elsewhere or with another length
  for (const PresentAddress* p : same_ip) {
    if (p->key == want) {
      same = p;
    } else if (!p->ours) {
      holder = p;
    }
  }
  const std::string ip = want.address.address().ToString();
  if (same && !same->ours) {
    return ip + " is already on " + want.interface + " and was not added by this agent";
  }
  if (!same && holder) {
    return ip + " is held by someone else on " + holder->key.interface + " (" +
           holder->key.address.ToString() + ")";
  }
  return "";
}

netlink::AddressSpec DesiredAddressSpec(const DesiredAddress& d, const AddressPolicy& policy,
                                        std::optional<std::uint8_t> proto) {
  auto spec = netlink::VipAddressSpec(d.ifindex, d.address, policy.valid_lifetime, proto,
                                      policy.prefix_route);
  if (policy.preferred_lifetime && d.address.family() == net::Family::kV4) {
    spec.lifetimes.preferred = std::min(*policy.preferred_lifetime, policy.valid_lifetime);
  }
  return spec;
}

Status AddressSync::ListPresent(Pass& pass) const {
  auto addrs = nl_.ListAddresses(std::nullopt);
  if (!addrs) return Fail(addrs.error().Wrap("listing addresses"));
  pass.present = ClassifyPresent(*addrs, pass.link_names, owned_);
  return Ok();
}

std::vector<const PresentAddress*> AddressSync::PlanRemovals(Pass& pass) {
  std::vector<const PresentAddress*> removals;
  std::set<OwnedAddress> candidates;
  for (const auto& p : pass.present) {
    if (!p.ours || pass.want.count(p.key)) continue;
    renew_due_.erase(p.key);
    removals.push_back(&p);
    candidates.insert(p.key);
  }
  std::erase_if(pending_, [&](const auto& kv) {
    return !candidates.count(kv.first) && !pass.want.count(kv.first);
  });
  std::stable_partition(removals.begin(), removals.end(),
                        [](const PresentAddress* p) { return !p->primary_v4; });
  return removals;
}

bool AddressSync::RemoveOne(Pass& pass, const PresentAddress& p) {
  const OwnedAddress& key = p.key;
  SyncReport& report = pass.report;
  const std::string what = key.address.ToString() + " from " + key.interface;
  if (auto it = pending_.find(key);
      it != pending_.end() && pass.retry == Retry::kBackoff && pass.now < it->second.next) {
    // Waiting for its backoff: the same outcome as last time.
    if (it->second.error) report.errors.push_back(*it->second.error);
    if (!it->second.deferred.empty()) report.deferred.push_back(it->second.deferred);
    return false;
  }
  bool takes_ours_along = false;
  if (p.primary_v4) {
    const std::vector<const PresentAddress*> along = SecondariesOf(pass.present, p, pass.gone);
    if (!along.empty()) {
      if (auto st = EnsurePromoteSecondaries(key.interface); !st) {
        const auto foreign = std::find_if(along.begin(), along.end(),
                                          [](const PresentAddress* o) { return !o->ours; });
        if (foreign != along.end()) {
          Backoff(key, pass.now).deferred =
              "withdrawal of " + what + " deferred: removing it would delete " +
              (*foreign)->key.address.ToString() +
              " (not ours) with it because promote_secondaries is off (" + st.error().message() +
              "); it is no longer renewed and leaves when its valid lifetime ends, or at once "
              "once net.ipv4.conf.all.promote_secondaries=1";
          report.deferred.push_back(pending_[key].deferred);
          return false;
        }
        // Only ours go with it: they are added again in this pass.
        takes_ours_along = true;
      }
    }
  }
  auto st = nl_.RemoveAddress(p.ifindex, key.address);
  if (!st && st.error().code() != ErrorCode::kNotFound) {
    Error e = st.error().Wrap("removing " + what);
    Backoff(key, pass.now).error = e;
    report.errors.push_back(std::move(e));
    return false;
  }
  report.removed.push_back(key);
  pass.gone.insert(key);
  pending_.erase(key);
  if (owned_.erase(key)) pass.record_dirty = true;
  return takes_ours_along;
}

void AddressSync::ForgetVanished(Pass& pass) {
  std::set<OwnedAddress> present;
  for (const auto& p : pass.present) present.insert(p.key);
  for (auto it = owned_.begin(); it != owned_.end();) {
    if (!present.count(*it) && !pass.want.count(*it)) {
      renew_due_.erase(*it);
      it = owned_.erase(it);
      pass.record_dirty = true;
    } else {
      ++it;
    }
  }
}

void AddressSync::AddOrRenew(Pass& pass, const DesiredAddress& d,
                             const std::vector<const PresentAddress*>& same_ip) {
  const OwnedAddress key{d.interface, d.address};
  SyncReport& report = pass.report;
  if (std::string conflict = ConflictFor(key, same_ip); !conflict.empty()) {
    report.conflicts.push_back(std::move(conflict));
    return;
  }
  const bool present = std::any_of(same_ip.begin(), same_ip.end(),
                                   [&](const PresentAddress* p) { return p->key == key; });
  const auto proto = nl_.SupportsAddressProto()
                         ? std::optional<std::uint8_t>(netlink::kPylonAddressProto)
                         : std::nullopt;
  const AddressPolicy& policy =
      d.kind == AddressKind::kLocal ? options_.local : options_.virtual_addresses;
  auto spec = DesiredAddressSpec(d, policy, proto);
  const SteadyTime due = policy.valid_lifetime == netlink::kForever
                             ? SteadyTime::max()
                             : pass.now + policy.renew_interval;
  if (present) {
    auto it = renew_due_.find(key);
    if (it != renew_due_.end() && pass.now < it->second) {
      if (auto p = pending_.find(key); p != pending_.end() && p->second.error) {
        report.errors.push_back(*p->second.error);  // waiting for its backoff
      }
      return;
    }
    spec.mode = netlink::AddMode::kReplace;
    if (auto st = nl_.AddAddress(spec); !st) {
      Error e = st.error().Wrap("renewing " + d.address.ToString() + " on " + d.interface);
      Pending& p = Backoff(key, pass.now);
      p.error = e;
      renew_due_[key] = p.next;  // not again before the backoff: a due time past is a spin
      report.errors.push_back(std::move(e));
      return;
    }
    pending_.erase(key);
    renew_due_[key] = due;
    if (owned_.insert(key).second) pass.record_dirty = true;
    ++report.renewed;
    return;
  }
  // Record first: a crash right after the add must still find the address ours.
  if (owned_.insert(key).second) {
    if (auto st = SaveRecord(); !st) {
      owned_.erase(key);
      report.errors.push_back(st.error());
      return;
    }
  }
  if (auto st = nl_.AddAddress(spec); !st) {
    report.errors.push_back(
        st.error().Wrap("adding " + d.address.ToString() + " to " + d.interface));
    owned_.erase(key);
    pass.record_dirty = true;
    return;
  }
  renew_due_[key] = due;
  report.added.push_back(d);
}

void AddressSync::SaveIfDirty(Pass& pass) {
  if (!pass.record_dirty) return;
  if (auto st = SaveRecord(); !st) pass.report.errors.push_back(st.error());
}

SyncReport AddressSync::Apply(const std::vector<DesiredAddress>& desired, Retry retry) {
  Pass pass;
  pass.now = clock_.Now();
  pass.retry = retry;
  auto links = nl_.ListLinks();
  if (!links) {
    pass.report.errors.push_back(links.error().Wrap("listing links"));
    return std::move(pass.report);
  }
  for (const auto& l : *links) pass.link_names[l.index] = l.name;
  for (const auto& d : desired) pass.want.insert(OwnedAddress{d.interface, d.address});
  if (auto st = ListPresent(pass); !st) {
    pass.report.errors.push_back(st.error());
    return std::move(pass.report);
  }

  // 1. Remove ours that are not desired. Secondaries first, so that a primary removed after them
  // takes nothing of ours with it. An address not desired is never renewed again: if it cannot
  // go now, its valid lifetime removes it.
  bool relist = false;
  for (const PresentAddress* p : PlanRemovals(pass)) relist |= RemoveOne(pass, *p);
  // The kernel deleted secondaries with a primary: see what is there now.
  if (relist) {
    if (auto st = ListPresent(pass); !st) {
      pass.report.errors.push_back(st.error());
      SaveIfDirty(pass);
      return std::move(pass.report);
    }
  }
  ForgetVanished(pass);

  // 2. Add or renew the desired ones.
  std::map<net::IpAddress, std::vector<const PresentAddress*>> by_ip;
  for (const auto& p : pass.present) by_ip[p.key.address.address()].push_back(&p);
  static const std::vector<const PresentAddress*> kNone;
  for (const auto& d : desired) {
    auto it = by_ip.find(d.address.address());
    AddOrRenew(pass, d, it == by_ip.end() ? kNone : it->second);
  }
  SaveIfDirty(pass);
  return std::move(pass.report);
}

}  // namespace pylon::agent
