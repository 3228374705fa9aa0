// Identity and metadata of a configuration object as the Kubernetes API returns it.
// Pure: no I/O.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/json.h"
#include "common/object_key.h"
#include "common/result.h"

namespace pylon::config {

enum class ObjectKind : std::uint8_t {
  kServiceGroup,       // purelb.io/v1 or v2, namespaced
  kLoadBalancerClass,  // lace-cni.io/v1alpha1, cluster-scoped
  kLBNodeAgent,        // purelb.io/v1 or v2, namespaced
  kBGPPeer,            // lace-cni.io/v1alpha1, cluster-scoped (bgp/config.h)
  kBFDProfile,         // lace-cni.io/v1alpha1, cluster-scoped
  kBGPAdvertisement,   // lace-cni.io/v1alpha1, cluster-scoped
};

std::string_view KindName(ObjectKind kind);        // "ServiceGroup", ...
std::string_view KindApiVersion(ObjectKind kind);  // "purelb.io/v1", ...: the version Pylon reads
// True when `api_version` is one the kind is served as: purelb.io/v1 and purelb.io/v2 for the
// purelb.io kinds (docs/purelb-v2.md), lace-cni.io/v1alpha1 for LoadBalancerClass.
bool KindAcceptsApiVersion(ObjectKind kind, std::string_view api_version);
bool KindIsNamespaced(ObjectKind kind);

// Identity of a config object: its kind and its ObjectKey (common/object_key.h) fields.
// Cluster-scoped kinds always have an empty namespace, so a ServiceGroup "a/x" and a
// LoadBalancerClass "x" never collide: the kind is part of the key.
struct ConfigKey {
  ObjectKind kind = ObjectKind::kServiceGroup;
  std::string namespace_;
  std::string name;

  // "ServiceGroup purelb-system/localdual", "LoadBalancerClass public"; "(unnamed)" if no name.
  std::string ToString() const;
  ObjectKey object() const { return ObjectKey{namespace_, name}; }
  friend auto operator<=>(const ConfigKey&, const ConfigKey&) = default;
  friend bool operator==(const ConfigKey&, const ConfigKey&) = default;
};

struct ObjectMeta {
  ConfigKey key;
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;      // 0 when the server sent none
  std::optional<WallTime> created;  // metadata.creationTimestamp; nullopt when absent
};

// Reads kind/apiVersion/metadata of `object` as an object of kind `kind`.
// - `object` must be a JSON object; `kind` and `apiVersion`, when present, must match.
// - metadata.name is required; metadata.namespace is required for namespaced kinds and ignored
//   for cluster-scoped ones.
// On error, the message is "<Kind> <ns/name>: <field path>: <reason>".
Result<ObjectMeta> ParseObjectMeta(const Json& object, ObjectKind kind);

// "<key>: <message>": prefixes an error of field parsing with the object it belongs to.
Error InObject(const ConfigKey& key, const Error& e);

}  // namespace pylon::config
