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
//  - before removing an IPv4 primary address of ours, sets promote_secondaries=1 on its
//    interface: otherwise the kernel deletes every secondary of the same subnet with it, which may
//    include addresses that are not ours;
//  - leaves a desired address that someone else holds (same IP on any interface, not ours) alone
//    and reports it as a conflict.
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
  friend bool operator==(const AddressSyncOptions&, const AddressSyncOptions&) = default;
};

struct SyncReport {
  std::vector<DesiredAddress> added;   // newly added by this pass
  std::vector<OwnedAddress> removed;   // ours, removed by this pass
  std::vector<std::string> conflicts;  // "192.0.2.50 is held by the host on eth0"
  std::vector<Error> errors;
  int renewed = 0;
  bool changed() const { return !added.empty() || !removed.empty(); }
};

class AddressSync {
 public:
  AddressSync(netlink::Netlink& nl, OwnershipStore& store, const Clock& clock,
              AddressSyncOptions options = {});

  // Reads the ownership record. Call once before the first Apply.
  Status Load();
  SyncReport Apply(const std::vector<DesiredAddress>& desired);
  // New policies (an LBNodeAgent's addressConfig changed): every held address is re-added
  // (AddMode::kReplace) with them on the next Apply. Lifetimes change in place; whether a changed
  // prefix-route flag does is up to the kernel (IPv4 keeps the flags of a replaced address).
  void SetOptions(const AddressSyncOptions& options);
  const AddressSyncOptions& options() const { return options_; }

  const std::set<OwnedAddress>& owned() const { return owned_; }
  // When the next renewal is due (earliest over held addresses), nullopt if none is held.
  std::optional<SteadyTime> NextRenewal() const;

 private:
  Status SaveRecord();
  Status EnsurePromoteSecondaries(const std::string& interface);

  netlink::Netlink& nl_;
  OwnershipStore& store_;
  const Clock& clock_;
  AddressSyncOptions options_;
  std::set<OwnedAddress> owned_;  // the record as last saved
  // In memory: when each held address is next due for renewal (SteadyTime::max(): permanent).
  std::map<OwnedAddress, SteadyTime> renew_due_;
};

}  // namespace pylon::agent
