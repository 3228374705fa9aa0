// Kubernetes objects as the API server returns them, for tests that build them as JSON: the
// common frame (apiVersion, kind, metadata) that each module's builders fill with a spec.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pylon::test_support {

struct ObjectMetaSpec {
  std::string ns;  // "" for a cluster-scoped object
  std::string uid;
  std::string created = "2024-01-01T00:00:00Z";  // metadata.creationTimestamp
  int generation = 1;
  std::string resource_version = "1";
};

// {"apiVersion", "kind", "metadata": {name, namespace, uid, resourceVersion, generation,
// creationTimestamp}}; the caller adds spec and status.
inline nlohmann::json ApiObject(const std::string& api_version, const std::string& kind,
                                const std::string& name, const ObjectMetaSpec& m) {
  nlohmann::json meta = {{"name", name},
                         {"uid", m.uid},
                         {"resourceVersion", m.resource_version},
                         {"generation", m.generation},
                         {"creationTimestamp", m.created}};
  if (!m.ns.empty()) meta["namespace"] = m.ns;
  return {{"apiVersion", api_version}, {"kind", kind}, {"metadata", std::move(meta)}};
}

// One pool of a ServiceGroup's spec.local (v4pools / v6pools entry).
inline nlohmann::json LocalPool(const std::string& range, const std::string& subnet,
                                const std::string& aggregation = "default") {
  return {{"pool", range}, {"subnet", subnet}, {"aggregation", aggregation}};
}

// A purelb.io/v1 ServiceGroup in purelb-system as a user writes it (no uid, no status), its
// spec.local of `v4` pools and, when given, `v6` pools.
inline nlohmann::json LocalServiceGroup(const std::string& name, nlohmann::json v4,
                                        nlohmann::json v6 = nullptr) {
  nlohmann::json local = {{"v4pools", std::move(v4)}};
  if (!v6.is_null()) local["v6pools"] = std::move(v6);
  return {{"apiVersion", "purelb.io/v1"},
          {"kind", "ServiceGroup"},
          {"metadata", {{"name", name}, {"namespace", "purelb-system"}}},
          {"spec", {{"local", std::move(local)}}}};
}

}  // namespace pylon::test_support
