// Makes the kernel hold exactly the desired addresses among the ones this agent owns, and never
// touches any other address.
//
// An address on an interface is OURS when it carries IFA_PROTO netlink::kPylonAddressProto or the
// ownership record lists it (ownership.h). Apply():
//  - removes every address of ours that is not desired (stale after a restart or crash, a lost
//    election, a departed Service) -- on exactly the interface and prefix length it has;
//  - adds every desired address that is absent (record first, then RTM_NEWADDR), with
//    netlink::VipAddressSpec and the AddressPolicy of its kind: IPv6 NODAD and preferred_lft 0, a
//    valid lifetime that it renews (AddMode::kReplace) every renew_interval while desired -- if
//    the agent dies, the kernel drops the address by itself -- unless the policy makes it
//    permanent. By default local addresses suppress the prefix route (the host's own
//    configuration already routes the subnet; removing ours must never take the host's route with
//    it); virtual ones install it (routing software redistributes kube-lb0's connected routes);
//  - removes secondaries before primaries. An IPv4 primary of ours that still has secondaries in
//    its subnet is removed only if promote_secondaries is in force on its interface
//    (net.ipv4.conf.{all,<if>}: it tries to set it) -- otherwise the kernel deletes every
//    secondary of the subnet with it. Where it cannot be set (a read-only /proc/sys) and the
//    secondaries are all ours, it is removed anyway and they are added again in the same pass;
//    when one is not ours the withdrawal is deferred and reported (SyncReport::deferred), never
//    forced: the address is no longer renewed and its valid lifetime removes it;
//  - leaves a desired address that someone else holds (same IP on any interface, not ours) alone
//    and reports it as a conflict.
// An address that is not desired is never renewed. A removal or renewal that fails (or is
// deferred) is retried after a backoff (doubling from `retry_initial` to `retry_cap`), not on
// every pass; until then each pass reports the same error or deferral again, so a caller that
// logs what changed between passes logs it once.
// Errors of one address do not stop the others; they are reported.
//
// Threading: one thread (the agent loop).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/ownership.h"
#include "agent/types.h"
#include "common/clock.h"
#include "common/result.h"
#include "netlink/message.h"
#include "netlink/netlink.h"

namespace pylon::agent {

// How the addresses of one kind are added.
struct AddressPolicy {
  // netlink::kForever: permanent, never renewed.
  netlink::Seconds valid_lifetime{30};
  // IPv4 only (IPv6 always gets 0); nullopt: the valid lifetime. Clamped to the valid lifetime.
  std::optional<netlink::Seconds> preferred_lifetime;
  netlink::PrefixRoute prefix_route = netlink::PrefixRoute::kInstall;
  Duration renew_interval = std::chrono::seconds(10);
  friend bool operator==(const AddressPolicy&, const AddressPolicy&) = default;
};

struct AddressSyncOptions {
  AddressPolicy local{netlink::Seconds{30}, std::nullopt, netlink::PrefixRoute::kSuppress,
                      std::chrono::seconds(10)};
  AddressPolicy virtual_addresses;
  // Backoff of a removal or renewal that failed or was deferred.
  Duration retry_initial = std::chrono::seconds(1);
  Duration retry_cap = std::chrono::seconds(30);
  friend bool operator==(const AddressSyncOptions&, const AddressSyncOptions&) = default;
};

struct SyncReport {
  std::vector<DesiredAddress> added;   // newly added by this pass
  std::vector<OwnedAddress> removed;   // ours, removed by this pass
  std::vector<std::string> conflicts;  // "192.0.2.50 is held by the host on eth0"
  std::vector<Error> errors;
  // Withdrawals that cannot happen now, and why (an IPv4 primary whose removal would delete an
  // address that is not ours, promote_secondaries being off and not settable).
  std::vector<std::string> deferred;
  int renewed = 0;
  bool changed() const { return !added.empty() || !removed.empty(); }
};

// The steps of AddressSync::Apply that need no kernel (pure; tested alone).

// An address on a link as one pass sees it.
struct PresentAddress {
  OwnedAddress key;
  int ifindex = 0;
  bool ours = false;  // tagged IFA_PROTO netlink::kPylonAddressProto, or in the record
  bool secondary_v4 = false;
  bool primary_v4 = false;  // removing it takes its secondaries unless they are promoted
};

// The addresses of `addrs` on the links of `link_names` (ifindex -> name; others are skipped),
// each marked ours when tagged or listed in `owned`.
std::vector<PresentAddress> ClassifyPresent(const std::vector<netlink::AddressInfo>& addrs,
                                            const std::map<int, std::string>& link_names,
                                            const std::set<OwnedAddress>& owned);

// The IPv4 secondaries in `present` that the kernel deletes with `primary` (same link, same
// prefix length, inside its subnet), leaving out those in `gone`.
std::vector<const PresentAddress*> SecondariesOf(const std::vector<PresentAddress>& present,
                                                 const PresentAddress& primary,
                                                 const std::set<OwnedAddress>& gone);

// Why `want` cannot be added or renewed, given `same_ip` (the present addresses with its IP):
// "" when it can (absent, or present and ours), else the conflict SyncReport lists.
std::string ConflictFor(const OwnedAddress& want,
                        const std::vector<const PresentAddress*>& same_ip);

// The RTM_NEWADDR spec of `d` under `policy` (create; the caller sets kReplace to renew).
netlink::AddressSpec DesiredAddressSpec(const DesiredAddress& d, const AddressPolicy& policy,
                                        std::optional<std::uint8_t> proto);

class AddressSync {
 public:
  AddressSync(netlink::Netlink& nl, OwnershipStore& store, const Clock& clock,
              AddressSyncOptions options = {});

  // Whether a pending retry waits for its backoff (kBackoff), or is tried in this pass (kNow: the
  // last pass of a graceful stop).
  enum class Retry { kBackoff, kNow };

  // Reads the ownership record. Call once before the first Apply.
  Status Load();
  SyncReport Apply(const std::vector<DesiredAddress>& desired, Retry retry = Retry::kBackoff);
  // New policies (an LBNodeAgent's addressConfig changed): every held address is re-added
  // (AddMode::kReplace) with them on the next Apply. Lifetimes change in place; whether a changed
  // prefix-route flag does is up to the kernel (IPv4 keeps the flags of a replaced address).
  void SetOptions(const AddressSyncOptions& options);
  const AddressSyncOptions& options() const { return options_; }

  const std::set<OwnedAddress>& owned() const { return owned_; }
  // When the next renewal is due (earliest over held addresses), nullopt if none is held.
  std::optional<SteadyTime> NextRenewal() const;
  // When the next retry of a failed or deferred removal or renewal is due, nullopt if none.
  std::optional<SteadyTime> NextRetry() const;

 private:
  struct Pending {
    Duration delay{0};
    SteadyTime next{};
    std::optional<Error> error;  // the last failure, or
    std::string deferred;        // the last deferral
  };

  // One Apply: what it read and what it has done so far.
  struct Pass {
    SteadyTime now{};
    Retry retry = Retry::kBackoff;
    std::map<int, std::string> link_names;
    std::set<OwnedAddress> want;
    std::vector<PresentAddress> present;
    std::set<OwnedAddress> gone;  // removed by this pass
    bool record_dirty = false;
    SyncReport report;
  };

  // Lists the addresses on the links into pass.present.
  Status ListPresent(Pass& pass) const;
  // Ours that are not desired, secondaries before primaries; forgets their renewals and the
  // retries that became moot.
  std::vector<const PresentAddress*> PlanRemovals(Pass& pass);
  // Removes `p`, or defers it, or repeats the last outcome while it waits for its backoff. True
  // when the kernel took secondaries of ours along with it (list again; they are added back).
  bool RemoveOne(Pass& pass, const PresentAddress& p);
  // Forgets record entries neither present nor desired (expired, removed by hand).
  void ForgetVanished(Pass& pass);
  // Adds or renews `d`, or reports who else holds it; `same_ip`: the present addresses with its
  // IP.
  void AddOrRenew(Pass& pass, const DesiredAddress& d,
                  const std::vector<const PresentAddress*>& same_ip);
  // Saves the record when the pass changed it; an error goes into the report.
  void SaveIfDirty(Pass& pass);

  Status SaveRecord();
  // Ok when promote_secondaries is in force on `interface` (all or the interface), after setting
  // it if it was not; the error says why it is not.
  Status EnsurePromoteSecondaries(const std::string& interface);
  // Records a failure or deferral of `key` and when to try again (the backoff).
  Pending& Backoff(const OwnedAddress& key, SteadyTime now);

  netlink::Netlink& nl_;
  OwnershipStore& store_;
  const Clock& clock_;
  AddressSyncOptions options_;
  std::set<OwnedAddress> owned_;  // the record as last saved
  // In memory: when each held address is next due for renewal (SteadyTime::max(): permanent).
  std::map<OwnedAddress, SteadyTime> renew_due_;
  // Removals and renewals that failed or were deferred, until they succeed or are moot.
  std::map<OwnedAddress, Pending> pending_;
};

}  // namespace pylon::agent
