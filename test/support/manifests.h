// Pylon's own objects as YAML for kubectl in tests: the envelope (apiVersion, kind, metadata)
// written once, the test giving only what it is about. `spec` is the text under `spec:`, indented
// two spaces and ending in a newline.
#pragma once

#include <string>

namespace pylon::test_support {

// A ServiceGroup `name` in purelb-system, as `api_version` ("purelb.io/v1" or "purelb.io/v2").
inline std::string ServiceGroupYaml(const std::string& api_version, const std::string& name,
                                    const std::string& spec) {
  return "apiVersion: " + api_version + "\nkind: ServiceGroup\nmetadata:\n  name: " + name +
         "\n  namespace: purelb-system\nspec:\n" + spec;
}

// A lace-cni.io/v1alpha1 LoadBalancerClass `name` (cluster-scoped).
inline std::string LoadBalancerClassYaml(const std::string& name, const std::string& spec) {
  return "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata:\n  name: " + name +
         "\nspec:\n" + spec;
}

}  // namespace pylon::test_support
