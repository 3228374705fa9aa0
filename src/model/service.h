// Typed, validated views of the Kubernetes objects Pylon reads, extracted from their JSON.
// Pure: no client, no I/O. Extraction never throws; a malformed field is an error value that
// names the object and the field.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/object_key.h"
#include "common/result.h"
#include "net/ip.h"

namespace pylon::model {

// Annotation and class names of both APIs Pylon speaks (PureLB's and Lace's; docs/seeds.md).
inline constexpr const char* kAnnServiceGroup = "purelb.io/service-group";
inline constexpr const char* kAnnAddresses = "purelb.io/addresses";
inline constexpr const char* kAnnLaceAddresses = "loadbalancer.lace-cni.io/loadBalancerIPs";
inline constexpr const char* kAnnSharing = "purelb.io/allow-shared-ip";
inline constexpr const char* kAnnAllocatedBy = "purelb.io/allocated-by";
inline constexpr const char* kAnnAllocatedFrom = "purelb.io/allocated-from";
inline constexpr const char* kAnnAnnouncingV4 = "purelb.io/announcing-IPv4";
inline constexpr const char* kAnnAnnouncingV6 = "purelb.io/announcing-IPv6";
// Written by the allocator for Services of purelb.io/v2 groups (PureLB v2's annotations).
inline constexpr const char* kAnnPoolType = "purelb.io/pool-type";         // "local" | "remote"
inline constexpr const char* kAnnSkipIPv6DAD = "purelb.io/skip-ipv6-dad";  // "true" or absent
// Set by the user (PureLB 0.17): "service-endpoints" elects a local address among the nodes that
// host an endpoint of the Service, when one can take it.
inline constexpr const char* kAnnNodeAffinity = "purelb.io/node-affinity";
inline constexpr const char* kNodeAffinityServiceEndpoints = "service-endpoints";
// Set by the user (PureLB 0.15): "true" turns multi-pool on for the Service, any other value off;
// absent, the ServiceGroup's multiPool decides (purelb.io/v2 groups only).
inline constexpr const char* kAnnMultiPool = "purelb.io/multi-pool";
// Set by the user (PureLB 0.15): "true" asks the allocator to re-run the Service once; the
// allocator removes it.
inline constexpr const char* kAnnReEvaluate = "purelb.io/re-evaluate";
inline constexpr const char* kClassPureLB = "purelb.io/purelb";      // PureLB v1 (0.13)
inline constexpr const char* kClassPureLBv2 = "purelb.io/purelbv2";  // PureLB v2 (0.15-0.17)
inline constexpr const char* kLacePrefix = "lace-cni.io/";
inline constexpr const char* kDefaultServiceGroup = "default";
// What Pylon writes in allocated-by; PureLB wrote "PureLB", which Pylon adopts unchanged.
inline constexpr const char* kAllocatedByPylon = "Pylon";
inline constexpr const char* kAllocatedByPureLB = "PureLB";

struct ServicePort {
  std::string protocol;  // TCP, UDP, SCTP
  int port = 0;
  friend bool operator==(const ServicePort&, const ServicePort&) = default;
};

struct Service {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string creation_timestamp;  // RFC 3339 as written by the server; sorts chronologically
  bool deleting = false;           // metadata.deletionTimestamp set
  std::string type;                // ClusterIP, NodePort, LoadBalancer, ExternalName
  std::optional<std::string> load_balancer_class;
  std::string load_balancer_ip;          // deprecated spec.loadBalancerIP
  std::vector<net::Family> ip_families;  // spec.ipFamilies, in order
  std::string ip_family_policy;          // SingleStack | PreferDualStack | RequireDualStack
  std::string external_traffic_policy;   // Cluster | Local
  std::vector<ServicePort> ports;
  std::map<std::string, std::string> annotations;
  std::vector<net::IpAddress> ingress;        // status.loadBalancer.ingress[].ip, in order
  std::vector<std::string> ingress_problems;  // unparseable ingress entries, for messages

  std::string Key() const { return ObjectKey{ns, name}.String(); }
  const std::string* Annotation(const std::string& k) const {
    auto it = annotations.find(k);
    return it == annotations.end() ? nullptr : &it->second;
  }
  // purelb.io/node-affinity: service-endpoints (any other value: no affinity).
  bool EndpointAffinity() const {
    const std::string* a = Annotation(kAnnNodeAffinity);
    return a != nullptr && *a == kNodeAffinityServiceEndpoints;
  }
};

Result<Service> ParseService(const Json& obj);

// Which Services are Pylon's (docs/design.md): a lace-cni.io/<name> class → that LoadBalancerClass;
// purelb.io/purelb, purelb.io/purelbv2 or no class → the ServiceGroup named by
// purelb.io/service-group, else "default"; any other class → not Pylon's. Only type LoadBalancer
// Services are considered.
enum class Owner { kNone, kServiceGroup, kLaceClass };
struct Selection {
  Owner owner = Owner::kNone;
  std::string name;  // ServiceGroup or LoadBalancerClass name
};
Selection SelectOwner(const Service& svc);

}  // namespace pylon::model
