// Builders for configuration objects as the Kubernetes API returns them, and the check of a
// refusal, for the config tests.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "support/k8s/objects.h"

namespace pylon::config::testing {

inline nlohmann::json Parse(const char* text) { return nlohmann::json::parse(text); }

// A ServiceGroup with the given spec.local (or whole spec when `whole_spec`).
inline nlohmann::json ServiceGroup(const std::string& name, nlohmann::json local,
                                   const std::string& created = "2024-01-01T00:00:00Z",
                                   int generation = 1, const std::string& ns = "purelb-system") {
  nlohmann::json o = test_support::ApiObject("purelb.io/v1", "ServiceGroup", name,
                                             {ns, "uid-" + name, created, generation});
  o["spec"] = {{"local", std::move(local)}};
  o["status"] = nlohmann::json::object();
  return o;
}

// A ServiceGroup with one v4pools entry.
inline nlohmann::json V4Group(const std::string& name, const std::string& pool,
                              const std::string& subnet,
                              const std::string& created = "2024-01-01T00:00:00Z",
                              int generation = 1) {
  return ServiceGroup(
      name, {{"v4pools", {{{"pool", pool}, {"subnet", subnet}, {"aggregation", "default"}}}}},
      created, generation);
}

// A purelb.io/v2 ServiceGroup with the given whole spec (no spec.writtenAs: the apiVersion
// decides, as for an object that never went through the API server).
inline nlohmann::json V2Group(const std::string& name, nlohmann::json spec,
                              const std::string& created = "2024-01-01T00:00:00Z",
                              int generation = 1, const std::string& ns = "purelb-system") {
  nlohmann::json o = ServiceGroup(name, nullptr, created, generation, ns);
  o["apiVersion"] = "purelb.io/v2";
  o["spec"] = std::move(spec);
  return o;
}

inline nlohmann::json LoadBalancerClass(const std::string& name, nlohmann::json spec,
                                        const std::string& created = "2024-01-01T00:00:00Z",
                                        int generation = 1) {
  nlohmann::json o = test_support::ApiObject("lace-cni.io/v1alpha1", "LoadBalancerClass", name,
                                             {"", "uid-" + name, created, generation});
  o["spec"] = std::move(spec);
  return o;
}

// Seed 000: the "localdual" ServiceGroup.
inline nlohmann::json SeedLocalDual() {
  return Parse(R"({
    "apiVersion": "purelb.io/v1", "kind": "ServiceGroup",
    "metadata": {"name": "localdual", "namespace": "purelb-system", "generation": 1,
                 "creationTimestamp": "2022-01-10T15:50:00Z", "resourceVersion": "100",
                 "uid": "5b1f0c2e-0000-4000-8000-000000000001"},
    "spec": {"local": {
      "v4pools": [{"aggregation": "default", "pool": "192.168.10.225-192.168.10.229",
                   "subnet": "192.168.10.0/24"}],
      "v6pools": [{"aggregation": "default", "pool": "fc00:270:154:0:8000::4/126",
                   "subnet": "fc00:270:154:0::/64"}]}},
    "status": {}})");
}

// Seed 003: the "localaddrange" ServiceGroup (its IPv6 pool, as printed in the seed).
inline nlohmann::json SeedLocalAddRange() {
  return Parse(R"({
    "apiVersion": "purelb.io/v1", "kind": "ServiceGroup",
    "metadata": {"name": "localaddrange", "namespace": "purelb", "generation": 1,
                 "creationTimestamp": "2022-01-10T15:55:00Z"},
    "spec": {"local": {
      "v6pools": [{"aggregation": "default", "pool": "fc00:270:154:0:8100::4/64",
                   "subnet": "fc00:270:154::/64"}]}}})");
}

// Seed 002: the "public" LoadBalancerClass.
inline nlohmann::json SeedPublicClass() {
  return Parse(R"({
    "apiVersion": "lace-cni.io/v1alpha1", "kind": "LoadBalancerClass",
    "metadata": {"name": "public", "generation": 1, "creationTimestamp": "2024-03-01T10:00:00Z"},
    "spec": {"mode": "l2",
             "ipv4Pools": [{"cidr": "198.51.100.0/24"},
                           {"start": "203.0.113.10", "end": "203.0.113.20"}],
             "ipv6Pools": [{"cidr": "2001:db8:f00d::/64"}]}})");
}

// `got` is a refusal as invalid (kInvalidArgument) with exactly `message`.
template <class T>
::testing::AssertionResult RefusedWith(const Result<T>& got, const std::string& message) {
  if (got) return ::testing::AssertionFailure() << "accepted; want \"" << message << "\"";
  if (got.error().code() != ErrorCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << ErrorCodeName(got.error().code())
                                         << ", not InvalidArgument: " << got.error().message();
  }
  if (got.error().message() != message) {
    return ::testing::AssertionFailure()
           << "message\n  got:  " << got.error().message() << "\n  want: " << message;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace pylon::config::testing
