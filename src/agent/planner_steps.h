// The planner's pure steps (agent/planner.h runs them in its numbered phases): how Services are
// grouped by address, how an address is classified, who may win a local address, what a won
// address writes and which old writes are cleared. Free functions of their arguments only: no
// state across passes (the Planner keeps that), no clock, no I/O. Tested apart in
// test/agent/planner_steps_test.cc.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/types.h"
#include "common/clock.h"
#include "config/validate.h"
#include "election/elector.h"
#include "election/membership.h"
#include "net/ip.h"

namespace pylon::agent::planner_steps {

// The Services holding one ingress address (shared addresses have several).
struct AddressGroup {
  std::vector<const ServiceInput*> services;  // in input order
  bool lace = false;                          // some Service of a lace LoadBalancerClass
};
using AddressGroups = std::map<net::IpAddress, AddressGroup>;
using L2Index = std::map<std::string, const L2Advertisement*>;  // by name

// The announcing annotation's key for `family` (model/announcing.h).
const char* AnnouncingKey(net::Family family);
bool IsEtpLocal(const model::Service& service);

// Phase 1. Addresses in use: every ingress address of a Service with an owner that is not being
// deleted. The pointers point into `services`.
AddressGroups GroupByAddress(const std::vector<ServiceInput>& services);
// The one node that reports problems: the live member with the lowest name; none if none is live.
std::optional<NodeName> ProblemReporter(const election::Membership& membership, SteadyTime now);

// Phase 2. What an address is, from its pool entry's announce mode, whether a lace Service holds
// it, and whether it lies on some member's (or this node's) subnet. `on_member_subnet` is not
// read for routed modes (l3, remote): those are always virtual.
enum class AddressClass {
  kLocal,                // elected: one winner holds it on the interface of its subnet
  kVirtual,              // on kube-lb0 (every node, or ETP Local nodes with an endpoint)
  kLocalGroupOffSubnet,  // a purelb.io/v2 local group's address on no subnet: an error
  kLaceOffSubnet,        // a lace l2 address on no subnet: an error
};
bool IsRoutedMode(config::AnnounceMode mode);
AddressClass Classify(config::AnnounceMode mode, bool lace, bool on_member_subnet);

// Local: the node recorded as announcing `address`, for stickiness: the L2Advertisement's node
// (lace addresses), else the first Service whose announcing annotation names a node for it.
std::optional<NodeName> RecordedAnnouncer(const net::IpAddress& address, const AddressGroup& group,
                                          const L2Index& l2_by_name);
// Local, EtpLocalMode::kElect: the nodes with a usable local endpoint of the address's family for
// every externalTrafficPolicy Local Service of the group (an empty list: nobody may win); nullopt
// when no Service of the group is Local.
std::optional<std::vector<NodeName>> EtpLocalCandidates(const net::IpAddress& address,
                                                        const AddressGroup& group);
// Local: whether node-affinity applies, i.e. one Service alone holds the address (not shared) and
// asks for `purelb.io/node-affinity: service-endpoints`.
bool UsesEndpointAffinity(const AddressGroup& group);
// Local, node-affinity: the live, not excluded members whose subnets contain `address` and that
// host a ready or serving endpoint of its family for `service`. Ordered by name.
std::vector<NodeName> AffinityCandidates(const net::IpAddress& address, const ServiceInput& service,
                                         const election::Membership& membership, SteadyTime now,
                                         const std::vector<NodeName>* excluded_nodes);

// Virtual: the prefix length the address is held with: its pool entry's aggregation length, or a
// host route (no pool entry, or a mode l3 class, which has no aggregation).
int VirtualPrefixLength(const net::IpAddress& address, const config::AddressMatch* match);
// Virtual: whether `self` holds it. Always, except for an address of a single externalTrafficPolicy
// Local Service: only while `self` has a usable local endpoint of its family.
bool HoldsVirtual(const net::IpAddress& address, const AddressGroup& group,
                  const std::string& self);

// The Services' "ns/name" keys, sorted (DesiredAddress::services).
std::vector<std::string> ServiceKeys(const AddressGroup& group);

// Phase 3. Winners that moved from one node to another, or lost their node, in one Evaluate.
std::uint64_t CountWinnerMoves(const std::vector<election::WinnerChange>& changes);

// Phase 4. A local address as held on this node: on the first interface whose subnet contains it,
// with that subnet's prefix length; nullopt when none does (our lease still lists a subnet we no
// longer have: a later pass fixes it).
std::optional<DesiredAddress> LocalAddress(const net::IpAddress& address,
                                           const NodeNetwork& network, const AddressGroup& group);
// The announcing annotation `self` writes on `service` for a won `address` held on
// `interface`: "<node>,<interface>" (v1), or the Service's v2 value with this address's entry
// claimed (v2: the address's ServiceGroup is purelb.io/v2).
std::string AnnouncingValue(const model::Service& service, const net::IpAddress& address,
                            const std::string& self, const std::string& interface, bool v2);
// The L2Advertisement `self` owes for a won lace `address`: it names the group's first lace
// Service. Requires group.lace.
L2Advertisement WantedL2Advertisement(const net::IpAddress& address, const AddressGroup& group,
                                      const std::string& self, const std::string& interface);
// Sets `key` to `value` (nullopt: removes it) in the patch of `service`, creating that patch with
// the Service's resourceVersion.
void SetAnnotation(std::map<ServiceRef, AnnotationPatch>& patches, const model::Service& service,
                   const std::string& key, std::optional<std::string> value);

// Phase 5. Announcing annotations naming `self` for a family the Service no longer has an ingress
// address of (or any, while it is being deleted), in input order, IPv4 before IPv6.
struct StaleAnnouncing {
  const model::Service* service = nullptr;
  net::Family family = net::Family::kV4;
};
std::vector<StaleAnnouncing> StaleAnnouncingAnnotations(const std::vector<ServiceInput>& services,
                                                        const std::string& self);
// L2Advertisements whose address left every lace Service (`in_use`: the names still owed), to be
// deleted by `self`: those naming `self`, and, when `self` is the reporter, those naming a node
// that is not live. In input order.
std::vector<std::string> OrphanedL2Advertisements(const std::vector<L2Advertisement>& l2s,
                                                  const std::set<std::string>& in_use,
                                                  const std::string& self,
                                                  const election::Membership& membership,
                                                  SteadyTime now, bool reporter);

}  // namespace pylon::agent::planner_steps
