// Builders for the objects the allocator reads, as the Kubernetes API returns them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "net/ip.h"
#include "support/k8s/objects.h"
#include "support/net.h"

namespace pylon::allocator::testing {

using nlohmann::json;

using test_support::Ip;

// For the conflict scenarios: when they start, the MAC of the foreign host that answers a probe,
// and the pool of SmallDefaultGroup as the pool allocator names it.
inline const WallTime kT0 = ParseWholeSecondsTime("2025-03-01T10:00:00Z").value();
inline const std::string kMac = "02:aa:bb:cc:dd:ee";
inline const std::string kPool = "ServiceGroup purelb-system/default";

struct SvcSpec {
  std::string name = "web";
  std::string ns = "default";
  std::string type = "LoadBalancer";
  std::optional<std::string> cls;  // spec.loadBalancerClass
  std::map<std::string, std::string> annotations;
  std::vector<std::string> families = {"IPv4"};
  std::string policy = "SingleStack";
  std::vector<std::pair<std::string, int>> ports = {{"TCP", 80}};
  std::vector<std::string> ingress;  // status.loadBalancer.ingress[].ip
  std::string created = "2024-01-01T00:00:00Z";
  std::string load_balancer_ip;
  bool deleting = false;
};

inline json ServiceJson(const SvcSpec& s) {
  json ports = json::array();
  for (const auto& [proto, port] : s.ports) {
    ports.push_back({{"protocol", proto}, {"port", port}, {"targetPort", port}});
  }
  json spec = {{"type", s.type},
               {"ipFamilies", s.families},
               {"ipFamilyPolicy", s.policy},
               {"ports", ports},
               {"externalTrafficPolicy", "Cluster"}};
  if (s.cls) spec["loadBalancerClass"] = *s.cls;
  if (!s.load_balancer_ip.empty()) spec["loadBalancerIP"] = s.load_balancer_ip;
  json meta = {{"name", s.name},
               {"namespace", s.ns},
               {"uid", "uid-" + s.ns + "-" + s.name},
               {"resourceVersion", "10"},
               {"creationTimestamp", s.created}};
  if (!s.annotations.empty()) meta["annotations"] = s.annotations;
  if (s.deleting) meta["deletionTimestamp"] = "2024-06-01T00:00:00Z";
  json status = json::object();
  if (!s.ingress.empty()) {
    json ing = json::array();
    for (const auto& ip : s.ingress) ing.push_back({{"ip", ip}, {"ipMode", "VIP"}});
    status["loadBalancer"] = {{"ingress", ing}};
  } else {
    status["loadBalancer"] = json::object();
  }
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", meta},
          {"spec", spec},
          {"status", status}};
}

inline json ServiceGroupJson(const std::string& name, json local,
                             const std::string& created = "2024-01-01T00:00:00Z",
                             int generation = 1, const std::string& ns = "purelb-system") {
  json o = test_support::ApiObject("purelb.io/v1", "ServiceGroup", name,
                                   {ns, "uid-sg-" + name, created, generation});
  o["spec"] = {{"local", std::move(local)}};
  return o;
}

// A purelb.io/v2 ServiceGroup with the given whole spec, as read back from the API server
// (spec.writtenAs: v2).
inline json V2GroupJson(const std::string& name, json spec,
                        const std::string& created = "2024-01-01T00:00:00Z", int generation = 1) {
  json o = ServiceGroupJson(name, nullptr, created, generation);
  o["apiVersion"] = "purelb.io/v2";
  spec["writtenAs"] = "v2";
  o["spec"] = std::move(spec);
  return o;
}

// A v2 local group of one IPv4 range in 192.0.2.0/24, with optional namespaces.
inline json V2LocalGroup(const std::string& name, const std::string& range,
                         std::vector<std::string> namespaces = {}, bool enforce = false,
                         bool ns_default = false) {
  json spec = {{"local", {{"v4pools", {{{"pool", range}, {"subnet", "192.0.2.0/24"}}}}}}};
  if (!namespaces.empty()) spec["namespaces"] = namespaces;
  if (enforce) spec["enforceNamespaces"] = true;
  if (ns_default) spec["namespaceDefault"] = true;
  return V2GroupJson(name, std::move(spec));
}

inline json ClassJson(const std::string& name, json spec,
                      const std::string& created = "2024-01-01T00:00:00Z", int generation = 1) {
  json o = test_support::ApiObject("lace-cni.io/v1alpha1", "LoadBalancerClass", name,
                                   {"", "uid-lbc-" + name, created, generation});
  o["spec"] = std::move(spec);
  return o;
}

// Seed 000.
inline json SeedLocalDual() {
  return ServiceGroupJson("localdual",
                          {{"v4pools",
                            {{{"aggregation", "default"},
                              {"pool", "192.168.10.225-192.168.10.229"},
                              {"subnet", "192.168.10.0/24"}}}},
                           {"v6pools",
                            {{{"aggregation", "default"},
                              {"pool", "fc00:270:154:0:8000::4/126"},
                              {"subnet", "fc00:270:154:0::/64"}}}}},
                          "2022-01-10T15:50:00Z");
}

// Seed 002.
inline json SeedPublicClass() {
  return ClassJson(
      "public",
      {{"mode", "l2"},
       {"ipv4Pools",
        {{{"cidr", "198.51.100.0/24"}}, {{"start", "203.0.113.10"}, {"end", "203.0.113.20"}}}},
       {"ipv6Pools", {{{"cidr", "2001:db8:f00d::/64"}}}}});
}

// A small default group: 192.0.2.10-192.0.2.12 only (IPv4).
inline json SmallDefaultGroup() {
  return ServiceGroupJson("default", {{"v4pools",
                                       {{{"aggregation", "default"},
                                         {"pool", "192.0.2.10-192.0.2.12"},
                                         {"subnet", "192.0.2.0/24"}}}}});
}

}  // namespace pylon::allocator::testing
