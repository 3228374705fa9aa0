#include "agent/address_sync.h"

#include <algorithm>
#include <utility>

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

Status AddressSync::EnsurePromoteSecondaries(const std::string& interface) {
  const auto key = netlink::PromoteSecondaries(interface);
  auto cur = nl_.ReadSysctl(key);
  if (cur && *cur == "1") return Ok();
  auto st = nl_.WriteSysctl(key, "1");
  if (!st) return Fail(st.error().Wrap("setting promote_secondaries on " + interface));
  log::Info("set promote_secondaries=1 so removing our primary address keeps the others",
            {{"interface", interface}});
  return Ok();
}

SyncReport AddressSync::Apply(const std::vector<DesiredAddress>& desired) {
  SyncReport report;
  const SteadyTime now = clock_.Now();
  auto links = nl_.ListLinks();
  if (!links) {
    report.errors.push_back(links.error().Wrap("listing links"));
    return report;
  }
  std::map<int, std::string> names;
  for (const auto& l : *links) names[l.index] = l.name;
  auto addrs = nl_.ListAddresses(std::nullopt);
  if (!addrs) {
    report.errors.push_back(addrs.error().Wrap("listing addresses"));
    return report;
  }

  std::set<OwnedAddress> want;
  for (const auto& d : desired) want.insert(OwnedAddress{d.interface, d.address});

  // Addresses present now, split into ours and foreign.
  struct Present {
    OwnedAddress key;
    int ifindex;
    bool ours;
    bool primary_v4;  // an IPv4 primary: removing it takes its secondaries unless promoted
  };
  std::vector<Present> present;
  for (const auto& a : *addrs) {
    auto n = names.find(a.ifindex);
    if (n == names.end()) continue;
    OwnedAddress key{n->second, a.prefix};
    bool ours = (a.proto && *a.proto == netlink::kPylonAddressProto) || owned_.count(key) > 0;
    bool primary_v4 =
        a.family() == net::Family::kV4 && !a.has_flag(netlink::addr_flags::kSecondary);
    present.push_back(Present{std::move(key), a.ifindex, ours, primary_v4});
  }

  // 1. Remove ours that are not desired.
  bool record_dirty = false;
  for (const auto& p : present) {
    if (!p.ours || want.count(p.key)) continue;
    if (p.primary_v4) {
      if (auto st = EnsurePromoteSecondaries(p.key.interface); !st) {
        report.errors.push_back(st.error());
        continue;  // removing it now could take somebody else's secondaries with it
      }
    }
    auto st = nl_.RemoveAddress(p.ifindex, p.key.address);
    if (!st && st.error().code() != ErrorCode::kNotFound) {
      report.errors.push_back(
          st.error().Wrap("removing " + p.key.address.ToString() + " from " + p.key.interface));
      continue;
    }
    report.removed.push_back(p.key);
    renew_due_.erase(p.key);
    if (owned_.erase(p.key)) record_dirty = true;
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
      if (it != renew_due_.end() && now < it->second) continue;
      spec.mode = netlink::AddMode::kReplace;
      auto st = nl_.AddAddress(spec);
      if (!st) {
        report.errors.push_back(
            st.error().Wrap("renewing " + d.address.ToString() + " on " + d.interface));
        continue;
      }
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
