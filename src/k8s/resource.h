// Resource descriptors and the REST paths and query strings built from them. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pylon::k8s {

// One API resource: where it lives and what its objects are called.
struct Resource {
  std::string group;    // "" for the core group
  std::string version;  // "v1"
  std::string plural;   // "services"
  std::string kind;     // "Service"
  bool namespaced = true;

  // "v1" for the core group, "group/version" otherwise.
  std::string ApiVersion() const;
  // /api/v1/[namespaces/{ns}/]{plural} or /apis/{g}/{v}/...; ns "" lists across namespaces.
  std::string CollectionPath(std::string_view ns) const;
  // Collection path + "/{name}" [+ "/{subresource}"].
  std::string ObjectPath(std::string_view ns, std::string_view name,
                         std::string_view subresource = "") const;
};

// The resources Pylon uses.
namespace resources {
const Resource& Services();
const Resource& Endpoints();
const Resource& EndpointSlices();
const Resource& Events();
const Resource& Leases();
const Resource& Nodes();
const Resource& Namespaces();
const Resource& ConfigMaps();
const Resource& Secrets();
const Resource& CustomResourceDefinitions();
const Resource& Pods();
const Resource& DaemonSets();
// Pylon's own kinds (the CRDs in deploy/).
const Resource& ServiceGroups();
const Resource& LBNodeAgents();
const Resource& LoadBalancerClasses();
const Resource& L2Advertisements();
const Resource& BGPPeers();
const Resource& BFDProfiles();
const Resource& BGPAdvertisements();
}  // namespace resources

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view text);

// Builds "?k=v&k2=v2" (empty string when no parameters), values percent-encoded.
class Query {
 public:
  Query& Add(std::string_view key, std::string_view value);
  Query& AddIf(bool cond, std::string_view key, std::string_view value) {
    return cond ? Add(key, value) : *this;
  }
  std::string String() const;

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

}  // namespace pylon::k8s
