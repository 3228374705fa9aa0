// Value types of the agent's pure core: what the planner reads (this node's interfaces, Services,
// EndpointSlices, L2Advertisements) and what it decides (addresses to hold, Kubernetes writes).
// No I/O; the adapters (k8s informers, netlink) fill and consume these.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/object_key.h"
#include "election/node_name.h"
#include "model/endpoints.h"
#include "model/service.h"
#include "net/ip.h"

namespace pylon::agent {

using election::NodeName;

// Event source component of every event the agent writes (PureLB's: docs/seeds.md).
inline constexpr const char* kEventComponent = "purelb-lbnodeagent";
inline constexpr const char* kL2AdvApiVersion = "lace-cni.io/v1alpha1";

// One interface whose subnets count for election (the default-route interface per family, or the
// LBNodeAgent `localint` match, plus LBNodeAgent `interfaces[]`).
struct LocalInterface {
  std::string name;
  int ifindex = 0;
  std::vector<net::Prefix> subnets;  // masked; either family
  friend bool operator==(const LocalInterface&, const LocalInterface&) = default;
};

// This node's network as the agent uses it. Interfaces are in preference order: when two hold
// subnets containing an address, the first one gets it.
struct NodeNetwork {
  std::vector<LocalInterface> interfaces;
  std::string virtual_interface = "kube-lb0";
  int virtual_ifindex = 0;  // 0: not created yet (virtual addresses wait for it)

  // Every subnet of every interface, sorted and deduplicated (the lease annotation's content).
  std::vector<net::Prefix> Subnets() const;
  // The first interface holding a subnet that contains `address`, and that subnet.
  struct Match {
    const LocalInterface* interface = nullptr;
    net::Prefix subnet;
  };
  std::optional<Match> Find(const net::IpAddress& address) const;
  friend bool operator==(const NodeNetwork&, const NodeNetwork&) = default;
};

// A Service the agent looks at, with its owner already selected (model::SelectOwner) and the
// EndpointSlices labelled with its name.
struct ServiceInput {
  model::Service service;
  model::Selection owner;
  std::vector<model::EndpointSlice> slices;
};

// An L2Advertisement (lace-cni.io/v1alpha1, cluster-scoped): one per lace-class address, written
// by the address's winner.
struct L2Advertisement {
  std::string name;  // L2AdvertisementName(address)
  net::IpAddress address;
  std::string service_namespace;
  std::string service_name;
  std::string load_balancer_class;  // "lace-cni.io/<class>"
  std::string node;
  std::string interface;
  friend bool operator==(const L2Advertisement&, const L2Advertisement&) = default;
};
// "ipv4-192-0-2-50", "ipv6-2001-db8-f00d--7": a valid, unique object name per address.
std::string L2AdvertisementName(const net::IpAddress& address);

// What to do when a Service with externalTrafficPolicy Local gets a local (elected) address.
enum class EtpLocalMode : std::uint8_t {
  kReset,  // the winner patches the Service to Cluster, once, with an event (docs/seeds.md)
  kElect,  // elect only among nodes with a ready local endpoint; the Service is left as written
};

enum class AddressKind : std::uint8_t { kLocal, kVirtual };

// One address this node must hold.
struct DesiredAddress {
  net::Prefix address;  // the VIP with the prefix length to add (subnet's or aggregation's)
  std::string interface;
  int ifindex = 0;
  AddressKind kind = AddressKind::kLocal;
  std::vector<std::string> services;  // "ns/name", sorted
  // Local only: no node is recorded as announcing it yet (no L2Advertisement, no announcing
  // annotation), so it is being announced for the first time and is probed first (ProbeGate).
  // A takeover (a recorded announcer) is never probed: the wait would add to failover.
  bool first_announcement = false;
  // Local only: the other node recorded as announcing it (a takeover from that node: the
  // successor's wire check, takeover.h); empty when none is, or this node is.
  std::string previous_announcer{};
  friend bool operator==(const DesiredAddress&, const DesiredAddress&) = default;
};

struct ServiceRef {
  std::string ns;
  std::string name;
  std::string Key() const { return ObjectKey{ns, name}.String(); }
  // The inverse of Key().
  static ServiceRef FromKey(std::string_view key) {
    ObjectKey k = ObjectKey::FromString(key);
    return ServiceRef{std::move(k.ns), std::move(k.name)};
  }
  friend auto operator<=>(const ServiceRef&, const ServiceRef&) = default;
};

// A merge patch of Service annotations: a value sets, nullopt removes.
struct AnnotationPatch {
  ServiceRef service;
  std::map<std::string, std::optional<std::string>> annotations;
  // The Service's resourceVersion the patch was decided on (the writer's dedup, kube_writer.h).
  std::string observed_version;
  friend bool operator==(const AnnotationPatch&, const AnnotationPatch&) = default;
};

struct ServiceEvent {
  ServiceRef service;
  bool warning = false;
  std::string reason;
  std::string message;
  friend bool operator==(const ServiceEvent&, const ServiceEvent&) = default;
};

}  // namespace pylon::agent
