#include "k8s/resource.h"

#include <array>

namespace pylon::k8s {

std::string Resource::ApiVersion() const { return group.empty() ? version : group + "/" + version; }

std::string Resource::CollectionPath(std::string_view ns) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += UrlEncode(ns);
  }
  path += "/";
  path += plural;
  return path;
}

std::string Resource::ObjectPath(std::string_view ns, std::string_view name,
                                 std::string_view subresource) const {
  std::string path = CollectionPath(ns) + "/" + UrlEncode(name);
  if (!subresource.empty()) {
    path += "/";
    path += subresource;
  }
  return path;
}

namespace resources {
namespace {

// The catalogue, one row per resource; a function-local table, so a static initializer elsewhere
// may call the accessors below.
enum Row : std::size_t {
  kServices,
  kEndpoints,
  kEndpointSlices,
  kEvents,
  kLeases,
  kNodes,
  kNamespaces,
  kConfigMaps,
  kSecrets,
  kCustomResourceDefinitions,
  kPods,
  kDaemonSets,
  kServiceGroups,
  kLBNodeAgents,
  kLoadBalancerClasses,
  kL2Advertisements,
  kBGPPeers,
  kBFDProfiles,
  kBGPAdvertisements,
  kRows,
};

const Resource& At(Row row) {
  // clang-format off
  static const std::array<Resource, kRows> kCatalogue = {{
      {"", "v1", "services", "Service", true},
      {"", "v1", "endpoints", "Endpoints", true},
      {"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true},
      {"", "v1", "events", "Event", true},
      {"coordination.k8s.io", "v1", "leases", "Lease", true},
      {"", "v1", "nodes", "Node", false},
      {"", "v1", "namespaces", "Namespace", false},
      {"", "v1", "configmaps", "ConfigMap", true},
      {"", "v1", "secrets", "Secret", true},
      {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false},
      {"", "v1", "pods", "Pod", true},
      {"apps", "v1", "daemonsets", "DaemonSet", true},
      {"purelb.io", "v1", "servicegroups", "ServiceGroup", true},
      {"purelb.io", "v1", "lbnodeagents", "LBNodeAgent", true},
      {"lace-cni.io", "v1alpha1", "loadbalancerclasses", "LoadBalancerClass", false},
      {"lace-cni.io", "v1alpha1", "l2advertisements", "L2Advertisement", false},
      {"lace-cni.io", "v1alpha1", "bgppeers", "BGPPeer", false},
      {"lace-cni.io", "v1alpha1", "bfdprofiles", "BFDProfile", false},
      {"lace-cni.io", "v1alpha1", "bgpadvertisements", "BGPAdvertisement", false},
  }};
  // clang-format on
  return kCatalogue[row];
}

}  // namespace

const Resource& Services() { return At(kServices); }
const Resource& Endpoints() { return At(kEndpoints); }
const Resource& EndpointSlices() { return At(kEndpointSlices); }
const Resource& Events() { return At(kEvents); }
const Resource& Leases() { return At(kLeases); }
const Resource& Nodes() { return At(kNodes); }
const Resource& Namespaces() { return At(kNamespaces); }
const Resource& ConfigMaps() { return At(kConfigMaps); }
const Resource& Secrets() { return At(kSecrets); }
const Resource& CustomResourceDefinitions() { return At(kCustomResourceDefinitions); }
const Resource& Pods() { return At(kPods); }
const Resource& DaemonSets() { return At(kDaemonSets); }
const Resource& ServiceGroups() { return At(kServiceGroups); }
const Resource& LBNodeAgents() { return At(kLBNodeAgents); }
const Resource& LoadBalancerClasses() { return At(kLoadBalancerClasses); }
const Resource& L2Advertisements() { return At(kL2Advertisements); }
const Resource& BGPPeers() { return At(kBGPPeers); }
const Resource& BFDProfiles() { return At(kBFDProfiles); }
const Resource& BGPAdvertisements() { return At(kBGPAdvertisements); }
}  // namespace resources

std::string UrlEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '.' || u == '_' || u == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

Query& Query::Add(std::string_view key, std::string_view value) {
  params_.emplace_back(std::string(key), std::string(value));
  return *this;
}

std::string Query::String() const {
  std::string out;
  for (const auto& [k, v] : params_) {
    out += out.empty() ? "?" : "&";
    out += UrlEncode(k);
    out += "=";
    out += UrlEncode(v);
  }
  return out;
}

}  // namespace pylon::k8s
