// The soak's invariants (docs/reliability.md) as pure functions of what it observed: the
// Services, config objects and L2Advertisements read from the API, and the addresses on the
// nodes' interfaces. No I/O: the runner (soak.h) gathers the views, these judge them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pylon::soak {

// One LoadBalancer Service as the soak reads it.
struct ObservedService {
  std::string name;  // in namespace default
  std::string uid;
  std::vector<std::string> ips;            // status.loadBalancer.ingress[].ip, as written
  std::string share_key;                   // purelb.io/allow-shared-ip
  std::string allocated_from;              // purelb.io/allocated-from
  std::string group;                       // purelb.io/service-group ("" if absent)
  std::string class_name;                  // spec.loadBalancerClass ("" for ServiceGroups)
  std::string announcer_v4, announcer_v6;  // node of purelb.io/announcing-IPv4|6; "" if none
  std::optional<bool> allocated;           // condition purelb.io/AddressAllocated
  std::string reason;                      // its reason
  int port = 0;
  std::string etp;  // Cluster | Local
  std::size_t families = 1;
};

// A ServiceGroup or LoadBalancerClass and the figures of its status.
struct ObservedConfig {
  std::string kind;  // ServiceGroup | LoadBalancerClass
  std::string name;
  bool status_current = false;  // status.observedGeneration == metadata.generation
  std::optional<bool> valid;
  std::optional<std::uint64_t> v4_in_use, v6_in_use;
};

// The API's view at one moment (one list per kind).
struct ApiView {
  std::vector<ObservedService> services;
  std::vector<ObservedConfig> configs;
  std::map<std::string, std::string> l2_node;  // L2Advertisement address -> node
};

// `kubectl get services -o json` (the LoadBalancer ones), servicegroups, loadbalancerclasses
// and l2advertisements lists.
std::vector<ObservedService> ParseServices(const nlohmann::json& list);
std::vector<ObservedConfig> ParseConfigs(const nlohmann::json& list, const std::string& kind);
std::map<std::string, std::string> ParseL2Advertisements(const nlohmann::json& list);

bool IsV6(const std::string& ip);

// Addresses held by two Services or more that do not all share one non-empty key: address ->
// its holders, "name(key)".
std::map<std::string, std::vector<std::string>> UnsharedDuplicates(
    const std::vector<ObservedService>& services);

// Per config object ("ServiceGroup/sa"), the addresses of each family its Services hold
// (allocated-from), shared addresses once.
struct HeldCount {
  std::uint64_t v4 = 0, v6 = 0;
};
std::map<std::string, HeldCount> HeldByConfig(const std::vector<ObservedService>& services);

// Config status figures that differ from what the Services hold, one message each. Only objects
// whose status is current and valid are judged (an invalid object shows its last valid figures).
std::vector<std::string> StatusMismatches(const ApiView& view);

// What keeps a quiet phase from being settled although every address is served: a config object
// whose status does not describe its generation yet (the allocator has not read that version),
// and a Service of a ServiceGroup that is current and valid while the Service holds addresses of
// another group (a group change it asked for, not carried out yet, and not explained by
// AddressAllocated False). Without these, a group the
// quiet phase re-created could be acted on only after the soak had cleared its asks.
std::vector<std::string> PendingRequests(const ApiView& view);

// The addresses of the soak's pools on the nodes: address -> the nodes that have it.
struct NodeAddresses {
  std::map<std::string, std::set<std::string>> eth0;  // and any interface but kube-lb0
  std::map<std::string, std::set<std::string>> lb;    // kube-lb0
};

// Addresses on a node that no Service holds, one message each ("ip on node1 node2 but no Service
// holds it"): those on eth0 first, then those on kube-lb0, each in address order.
std::vector<std::string> StrayAddresses(const NodeAddresses& on,
                                        const std::vector<ObservedService>& services);

// What the soak remembers of each Service to tell a change it asked for from one it did not.
struct AddressBook {
  struct Entry {
    std::string uid;
    std::vector<std::string> ips;  // sorted
    bool asked = false;            // the soak asked for a change since the last convergence
  };
  std::map<std::string, Entry> by_name;

  // The soak edited the Service in a way that may change its addresses.
  void Ask(const std::string& name) { by_name[name].asked = true; }
  // After a converged quiet phase: nothing is asked any more.
  void ClearAsks();
  // Takes a new view; returns one message per Service whose addresses changed (held ones lost
  // or replaced) without a request. A new uid starts a new entry; gaining addresses from none is
  // always allowed.
  std::vector<std::string> Observe(const std::vector<ObservedService>& services);
};

}  // namespace pylon::soak
