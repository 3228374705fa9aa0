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
    if (due != SteadyTime::max() && (!next || due < *next)) next = due;
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
    if (!next || p.next < *next) next = p.next;
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

SyncReport AddressSync::Apply(const std::vector<DesiredAddress>& desired, Retry retry) {
  SyncReport report;
  const SteadyTime now = clock_.Now();
  auto links = nl_.ListLinks();
  if (!links) {
    report.errors.push_back(links.error().Wrap("listing links"));
    return report;
  }
  std::map<int, std::string> names;
  for (const auto& l : *links) names[l.index] = l.name;

  std::set<OwnedAddress> want;
  for (const auto& d : desired) want.insert(OwnedAddress{d.interface, d.address});

  // Addresses present now, split into ours and foreign.
  struct Present {
    OwnedAddress key;
    int ifindex;
    bool ours;
    bool secondary_v4;
    bool primary_v4;  // an IPv4 primary: removing it takes its secondaries unless promoted
  };
  std::vector<Present> present;
  auto list_present = [&]() -> Status {
    auto addrs = nl_.ListAddresses(std::nullopt);
    if (!addrs) return Fail(addrs.error().Wrap("listing addresses"));
    present.clear();
    for (const auto& a : *addrs) {
      auto n = names.find(a.ifindex);
      if (n == names.end()) continue;
      OwnedAddress key{n->second, a.prefix};
      bool ours = (a.proto && *a.proto == netlink::kPylonAddressProto) || owned_.count(key) > 0;
      const bool v4 = a.family() == net::Family::kV4;
      const bool secondary = a.has_flag(netlink::addr_flags::kSecondary);
      present.push_back(
          Present{std::move(key), a.ifindex, ours, v4 && secondary, v4 && !secondary});
    }
    return Ok();
  };
  if (auto st = list_present(); !st) {
    report.errors.push_back(st.error());
    return report;
  }

  // 1. Remove ours that are not desired. Secondaries first, so that a primary removed after them
  // takes nothing of ours with it. An address not desired is never renewed again: if it cannot
  // go now, its valid lifetime removes it.
  std::vector<const Present*> removals;
  std::set<OwnedAddress> candidates;
  for (const auto& p : present) {
    if (!p.ours || want.count(p.key)) continue;
    renew_due_.erase(p.key);
    removals.push_back(&p);
    candidates.insert(p.key);
  }
  std::erase_if(pending_, [&](const auto& kv) {
    return !candidates.count(kv.first) && !want.count(kv.first);
  });
  std::stable_partition(removals.begin(), removals.end(),
                        [](const Present* p) { return !p->primary_v4; });
  // The secondaries of IPv4 primary `p` that are still there.
  std::set<OwnedAddress> gone;
  auto secondaries_of = [&](const Present& p) {
    std::vector<const Present*> out;
    const net::Prefix subnet = p.key.address.Masked();
    for (const auto& o : present) {
      if (o.ifindex == p.ifindex && o.secondary_v4 && !gone.count(o.key) &&
          o.key.address.length() == p.key.address.length() &&
          subnet.Contains(o.key.address.address())) {
        out.push_back(&o);
      }
    }
    return out;
  };
  bool record_dirty = false;
  bool relist = false;
  for (const Present* p : removals) {
    const OwnedAddress& key = p->key;
    const std::string what = key.address.ToString() + " from " + key.interface;
    if (auto it = pending_.find(key);
        it != pending_.end() && retry == Retry::kBackoff && now < it->second.next) {
      // Waiting for its backoff: the same outcome as last time.
      if (it->second.error) report.errors.push_back(*it->second.error);
      if (!it->second.deferred.empty()) report.deferred.push_back(it->second.deferred);
      continue;
    }
    bool takes_ours_along = false;
    if (p->primary_v4) {
      const std::vector<const Present*> along = secondaries_of(*p);
      if (!along.empty()) {
        if (auto st = EnsurePromoteSecondaries(key.interface); !st) {
          const auto foreign =
              std::find_if(along.begin(), along.end(), [](const Present* o) { return !o->ours; });
          if (foreign != along.end()) {
            Backoff(key, now).deferred =
                "withdrawal of " + what + " deferred: removing it would delete " +
                (*foreign)->key.address.ToString() +
                " (not ours) with it because promote_secondaries is off (" + st.error().message() +
                "); it is no longer renewed and leaves when its valid lifetime ends, or at once "
                "once net.ipv4.conf.all.promote_secondaries=1";
            report.deferred.push_back(pending_[key].deferred);
            continue;
          }
          // Only ours go with it: they are added again below.
          takes_ours_along = true;
        }
      }
    }
    auto st = nl_.RemoveAddress(p->ifindex, key.address);
    if (!st && st.error().code() != ErrorCode::kNotFound) {
      Error e = st.error().Wrap("removing " + what);
      Backoff(key, now).error = e;
      report.errors.push_back(std::move(e));
      continue;
    }
    if (takes_ours_along) relist = true;
    report.removed.push_back(key);
    gone.insert(key);
    pending_.erase(key);
    if (owned_.erase(key)) record_dirty = true;
  }
  // The kernel deleted secondaries with a primary: see what is there now.
  if (relist) {
    if (auto st = list_present(); !st) {
      report.errors.push_back(st.error());
      if (record_dirty) {
        if (auto saved = SaveRecord(); !saved) report.errors.push_back(saved.error());
      }
      return report;
    }
  }
  // Indexes of `present`: by exact key, and by IP.
  std::map<OwnedAddress, const Present*> by_key;
  std::multimap<net::IpAddress, const Present*> by_ip;
  for (const auto& p : present) {
    by_key[p.key] = &p;
    by_ip.emplace(p.key.address.address(), &p);
  }
  // Record entries that are neither present nor desired (expired, removed by hand): forget them.
  for (auto it = owned_.begin(); it != owned_.end();) {
    bool is_present = by_key.count(*it) > 0;
    if (!is_present && !want.count(*it)) {
      renew_due_.erase(*it);
      it = owned_.erase(it);
      record_dirty = true;
    } else {
      ++it;
    }
  }

  // 2. Add or renew the desired ones.
  for (const auto& d : desired) {
    OwnedAddress key{d.interface, d.address};
    const Present* same = nullptr;
    const Present* holder = nullptr;  // the same IP elsewhere or with another length, not ours
    auto [lo, hi] = by_ip.equal_range(d.address.address());
    for (auto it = lo; it != hi; ++it) {
      const Present* p = it->second;
      if (p->key == key) {
        same = p;
      } else if (!p->ours) {
        holder = p;
      }
    }
    if (same && !same->ours) {
      report.conflicts.push_back(d.address.address().ToString() + " is already on " + d.interface +
                                 " and was not added by this agent");
      continue;
    }
    if (!same && holder) {
      report.conflicts.push_back(d.address.address().ToString() + " is held by someone else on " +
                                 holder->key.interface + " (" + holder->key.address.ToString() +
                                 ")");
      continue;
    }
    const auto proto = nl_.SupportsAddressProto()
                           ? std::optional<std::uint8_t>(netlink::kPylonAddressProto)
                           : std::nullopt;
    const AddressPolicy& policy =
        d.kind == AddressKind::kLocal ? options_.local : options_.virtual_addresses;
    auto spec = netlink::VipAddressSpec(d.ifindex, d.address, policy.valid_lifetime, proto,
                                        policy.prefix_route);
    if (policy.preferred_lifetime && d.address.family() == net::Family::kV4) {
      spec.lifetimes.preferred = std::min(*policy.preferred_lifetime, policy.valid_lifetime);
    }
    const SteadyTime due = policy.valid_lifetime == netlink::kForever ? SteadyTime::max()
                                                                      : now + policy.renew_interval;
    if (same) {
      auto it = renew_due_.find(key);
      if (it != renew_due_.end() && now < it->second) {
        if (auto p = pending_.find(key); p != pending_.end() && p->second.error) {
          report.errors.push_back(*p->second.error);  // waiting for its backoff
        }
        continue;
      }
      spec.mode = netlink::AddMode::kReplace;
      auto st = nl_.AddAddress(spec);
      if (!st) {
        Error e = st.error().Wrap("renewing " + d.address.ToString() + " on " + d.interface);
        Pending& p = Backoff(key, now);
        p.error = e;
        renew_due_[key] = p.next;  // not again before the backoff: a due time past is a spin
        report.errors.push_back(std::move(e));
        continue;
      }
      pending_.erase(key);
      renew_due_[key] = due;
      if (owned_.insert(key).second) record_dirty = true;
      ++report.renewed;
      continue;
    }
    // Record first: a crash right after the add must still find the address ours.
    if (owned_.insert(key).second) {
      if (auto st = SaveRecord(); !st) {
        owned_.erase(key);
        report.errors.push_back(st.error());
        continue;
      }
    }
    auto st = nl_.AddAddress(spec);
    if (!st) {
      report.errors.push_back(
          st.error().Wrap("adding " + d.address.ToString() + " to " + d.interface));
      owned_.erase(key);
      record_dirty = true;
      continue;
    }
    renew_due_[key] = due;
    report.added.push_back(d);
  }
  if (record_dirty) {
    if (auto st = SaveRecord(); !st) report.errors.push_back(st.error());
  }
  return report;
}

}  // namespace pylon::agent
