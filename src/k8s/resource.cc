#include "k8s/resource.h"

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
const Resource& Services() {
  static const Resource r{"", "v1", "services", "Service", true};
  return r;
}
const Resource& Endpoints() {
  static const Resource r{"", "v1", "endpoints", "Endpoints", true};
  return r;
}
const Resource& EndpointSlices() {
  static const Resource r{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true};
  return r;
}
const Resource& Events() {
  static const Resource r{"", "v1", "events", "Event", true};
  return r;
}
const Resource& Leases() {
  static const Resource r{"coordination.k8s.io", "v1", "leases", "Lease", true};
  return r;
}
const Resource& Nodes() {
  static const Resource r{"", "v1", "nodes", "Node", false};
  return r;
}
const Resource& Namespaces() {
  static const Resource r{"", "v1", "namespaces", "Namespace", false};
  return r;
}
const Resource& ConfigMaps() {
  static const Resource r{"", "v1", "configmaps", "ConfigMap", true};
  return r;
}
const Resource& Secrets() {
  static const Resource r{"", "v1", "secrets", "Secret", true};
  return r;
}
const Resource& CustomResourceDefinitions() {
  static const Resource r{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                          "CustomResourceDefinition", false};
  return r;
}
const Resource& Pods() {
  static const Resource r{"", "v1", "pods", "Pod", true};
  return r;
}
const Resource& DaemonSets() {
  static const Resource r{"apps", "v1", "daemonsets", "DaemonSet", true};
  return r;
}
const Resource& ServiceGroups() {
  static const Resource r{"purelb.io", "v1", "servicegroups", "ServiceGroup", true};
  return r;
}
const Resource& LBNodeAgents() {
  static const Resource r{"purelb.io", "v1", "lbnodeagents", "LBNodeAgent", true};
  return r;
}
const Resource& LoadBalancerClasses() {
  static const Resource r{"lace-cni.io", "v1alpha1", "loadbalancerclasses", "LoadBalancerClass",
                          false};
  return r;
}
const Resource& L2Advertisements() {
  static const Resource r{"lace-cni.io", "v1alpha1", "l2advertisements", "L2Advertisement", false};
  return r;
}
const Resource& BGPPeers() {
  static const Resource r{"lace-cni.io", "v1alpha1", "bgppeers", "BGPPeer", false};
  return r;
}
const Resource& BFDProfiles() {
  static const Resource r{"lace-cni.io", "v1alpha1", "bfdprofiles", "BFDProfile", false};
  return r;
}
const Resource& BGPAdvertisements() {
  static const Resource r{"lace-cni.io", "v1alpha1", "bgpadvertisements", "BGPAdvertisement",
                          false};
  return r;
}
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
