// `pylon allocator` against kube-apiserver, driven with kubectl and the client: the seed
// examples, every refusal, edits, release, class changes, sharing and the config status figures.
// One API server and one allocator replica are shared by the tests of this binary; each test uses
// its own ServiceGroups / classes and Service names.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "allocator_harness.h"
#include "k8s/lease.h"
#include "support/manifests.h"

namespace pylon::allocator::e2e {
namespace {

class AllocatorE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new Cluster("e2e");
    replica_ = cluster_->StartAllocator("solo");
    // Start-up (informer sync, leader election) is not part of any test's deadline.
    if (!Eventually(
            [] {
              return cluster_->AllocatorLog(replica_).find("became leader") != std::string::npos;
            },
            60s)) {
      ADD_FAILURE() << "allocator did not become leader:\n" << cluster_->AllocatorLog(replica_);
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void TearDown() override {
    if (HasFailure()) {
      std::fprintf(stderr, "---- allocator log (tail) ----\n%s\n",
                   Tail(cluster_->AllocatorLog(replica_)).c_str());
    }
  }
  static std::string Tail(const std::string& s) {
    return s.size() > 6000 ? s.substr(s.size() - 6000) : s;
  }
  Cluster& c() { return *cluster_; }
  void Create(const Svc& s) {
    auto r = c().client().Create(k8s::resources::Services(), s.ToJson());
    ASSERT_TRUE(r.has_value()) << r.error().message();
  }
  void MergePatch(const std::string& name, const json& patch) {
    auto r = c().client().Patch(k8s::resources::Services(), "default", name, k8s::PatchType::kMerge,
                                patch, "");
    ASSERT_TRUE(r.has_value()) << r.error().message();
  }
  void ApplyGroup(const std::string& name, const std::string& local_yaml) {
    ApplyGroupAs("purelb.io/v1", name, "  local:\n" + local_yaml);
  }
  // ServiceGroup `name` written as `api_version`; `spec` is the text under spec.
  void ApplyGroupAs(const std::string& api_version, const std::string& name,
                    const std::string& spec) {
    auto r = c().Apply(test_support::ServiceGroupYaml(api_version, name, spec));
    ASSERT_TRUE(r.has_value()) << name << ": " << r.error().message();
  }
  json ConfigStatus(const k8s::Resource& res, const std::string& ns, const std::string& name) {
    auto o = c().client().Get(res, ns, name);
    if (!o || !o->contains("status")) return nullptr;
    return (*o)["status"];
  }
  // Waits for a config object's status field to equal `want`.
  bool WaitStatus(const k8s::Resource& res, const std::string& ns, const std::string& name,
                  const std::function<bool(const json&)>& pred) {
    return Eventually([&] {
      json st = ConfigStatus(res, ns, name);
      return st.is_object() && pred(st);
    });
  }

  static Cluster* cluster_;
  static int replica_;
};
Cluster* AllocatorE2E::cluster_ = nullptr;
int AllocatorE2E::replica_ = -1;

TEST_F(AllocatorE2E, SeedExamples) {
  // Seed 000: the localdual ServiceGroup and a RequireDualStack Service.
  ASSERT_TRUE(c().Apply(R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: localdual
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 192.168.10.225-192.168.10.229
      subnet: 192.168.10.0/24
    v6pools:
    - aggregation: default
      pool: fc00:270:154:0:8000::4/126
      subnet: fc00:270:154:0::/64
)")
                  .has_value());
  // Seed 002: the public LoadBalancerClass.
  ASSERT_TRUE(c().Apply(R"(apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: public
spec:
  mode: l2
  ipv4Pools:
  - cidr: 198.51.100.0/24
  - start: 203.0.113.10
    end: 203.0.113.20
  ipv6Pools:
  - cidr: 2001:db8:f00d::/64
)")
                  .has_value());
  // Seed 003's Service, in seed 000's group.
  auto applied = c().Apply(R"(apiVersion: v1
kind: Service
metadata:
  name: kuard-svc-dual-remote
  namespace: default
  annotations:
    purelb.io/service-group: localdual
spec:
  allocateLoadBalancerNodePorts: false
  externalTrafficPolicy: Cluster
  internalTrafficPolicy: Cluster
  ipFamilies:
  - IPv4
  - IPv6
  ipFamilyPolicy: RequireDualStack
  ports:
  - port: 80
    protocol: TCP
    targetPort: 8080
  selector:
    app: kuard
  sessionAffinity: None
  type: LoadBalancer
)");
  ASSERT_TRUE(applied.has_value()) << applied.error().message();
  ASSERT_TRUE(
      c().WaitIngress("kuard-svc-dual-remote", {"192.168.10.225", "fc00:270:154:0:8000::4"}))
      << ::testing::PrintToString(c().Ingress("kuard-svc-dual-remote"));
  EXPECT_TRUE(Eventually([&] {
    return c().Annotation("kuard-svc-dual-remote", "purelb.io/allocated-from") == "localdual";
  }));
  EXPECT_EQ(c().Annotation("kuard-svc-dual-remote", "purelb.io/allocated-by"), "Pylon");
  json cond = c().Condition("kuard-svc-dual-remote");
  ASSERT_TRUE(cond.is_object());
  EXPECT_EQ(cond["status"], "True");
  const std::string assigned =
      "Assigned {Ingress:[{IP:192.168.10.225 Hostname: Ports:[]} {IP:fc00:270:154:0:8000::4 "
      "Hostname: Ports:[]}]} from pool localdual";
  ASSERT_TRUE(c().WaitEvent("Service", "kuard-svc-dual-remote", assigned));
  auto describe = c().Kubectl({"describe", "service", "kuard-svc-dual-remote"});
  ASSERT_TRUE(describe.has_value()) << describe.error().message();
  EXPECT_NE(describe->find("AddressAssigned"), std::string::npos) << *describe;
  EXPECT_NE(describe->find("purelb-allocator"), std::string::npos) << *describe;
  EXPECT_NE(describe->find(assigned), std::string::npos) << *describe;
  EXPECT_NE(describe->find("192.168.10.225"), std::string::npos) << *describe;

  // Seed 002's Service: exactly the requested addresses.
  Svc web{"web",
          "default",
          "lace-cni.io/public",
          {{"loadbalancer.lace-cni.io/loadBalancerIPs", "198.51.100.7,2001:db8:f00d::7"}},
          {"IPv4", "IPv6"},
          "PreferDualStack"};
  Create(web);
  EXPECT_TRUE(c().WaitIngress("web", {"198.51.100.7", "2001:db8:f00d::7"}))
      << ::testing::PrintToString(c().Ingress("web"));
  EXPECT_TRUE(
      Eventually([&] { return c().Annotation("web", "purelb.io/allocated-from") == "public"; }));

  // The group's status figures: 5 + 4 addresses, one of each in use.
  EXPECT_TRUE(WaitStatus(k8s::resources::ServiceGroups(), "purelb-system", "localdual",
                         [](const json& st) {
                           return st.value("valid", false) && st["ipv4"]["size"] == "5" &&
                                  st["ipv4"]["inUse"] == "1" && st["ipv6"]["size"] == "4" &&
                                  st["ipv6"]["inUse"] == "1";
                         }))
      << ConfigStatus(k8s::resources::ServiceGroups(), "purelb-system", "localdual").dump();
  // The class: 254 + 11 IPv4 (network and broadcast excluded), a /64 minus the anycast address.
  EXPECT_TRUE(WaitStatus(k8s::resources::LoadBalancerClasses(), "", "public", [](const json& st) {
    return st.value("valid", false) && st["ipv4"]["size"] == "265" && st["ipv4"]["inUse"] == "1" &&
           st["ipv6"]["size"] == "18446744073709551615" && st["ipv6"]["inUse"] == "1" &&
           st["conditions"][0]["type"] == "Valid" && st["conditions"][0]["status"] == "True";
  })) << ConfigStatus(k8s::resources::LoadBalancerClasses(), "", "public").dump();
}

TEST_F(AllocatorE2E, Refusals) {
  ApplyGroup("ref-v4",
             "    v4pools:\n    - pool: 192.0.2.50-192.0.2.51\n      subnet: 192.0.2.0/24\n");
  ApplyGroup("ref-tiny", "    v4pools:\n    - pool: 192.0.2.60/32\n      subnet: 192.0.2.0/24\n");
  ASSERT_TRUE(c().Apply(R"(apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: refclass
spec:
  ipv4Pools:
  - start: 203.0.113.200
    end: 203.0.113.209
  ipv6Pools:
  - cidr: 2001:db8:aaaa::/120
)")
                  .has_value());
  struct Case {
    Svc svc;
    std::string reason;
  };
  auto in_group = [](std::string name, std::string group) {
    Svc s;
    s.name = std::move(name);
    s.annotations = {{"purelb.io/service-group", std::move(group)}};
    return s;
  };
  Svc holder{"ref-holder",
             "default",
             "lace-cni.io/refclass",
             {{"loadbalancer.lace-cni.io/loadBalancerIPs", "203.0.113.205"}}};
  Create(holder);
  ASSERT_TRUE(c().WaitIngress("ref-holder", {"203.0.113.205"}));
  Svc tiny1 = in_group("ref-tiny1", "ref-tiny");
  Create(tiny1);
  ASSERT_TRUE(c().WaitIngress("ref-tiny1", {"192.0.2.60"}));
  Svc share1 = in_group("ref-share1", "ref-v4");
  share1.annotations.push_back({"purelb.io/allow-shared-ip", "k"});
  share1.annotations.push_back({"purelb.io/addresses", "192.0.2.51"});
  Create(share1);
  ASSERT_TRUE(c().WaitIngress("ref-share1", {"192.0.2.51"}));

  std::vector<Case> cases;
  cases.push_back({Svc{"ref-nosuch", "default", "lace-cni.io/nosuch"}, "NoSuchClass"});
  cases.push_back({in_group("ref-nogroup", "does-not-exist"), "NoSuchServiceGroup"});
  cases.push_back({Svc{"ref-inuse",
                       "default",
                       "lace-cni.io/refclass",
                       {{"loadbalancer.lace-cni.io/loadBalancerIPs", "203.0.113.205"}}},
                   "AddressInUse"});
  cases.push_back({Svc{"ref-outside",
                       "default",
                       "lace-cni.io/refclass",
                       {{"loadbalancer.lace-cni.io/loadBalancerIPs", "10.9.9.9"}}},
                   "OutsidePools"});
  Svc dual = in_group("ref-dual", "ref-v4");
  dual.families = {"IPv4", "IPv6"};
  dual.policy = "RequireDualStack";
  cases.push_back({dual, "FamilyUnavailable"});
  cases.push_back({in_group("ref-tiny2", "ref-tiny"), "PoolExhausted"});
  Svc share2 = in_group("ref-share2", "ref-v4");
  share2.annotations.push_back({"purelb.io/allow-shared-ip", "k"});
  share2.annotations.push_back({"purelb.io/addresses", "192.0.2.51"});
  cases.push_back({share2, "SharingConflict"});  // same key, same port 80
  Svc bad = in_group("ref-bad", "ref-v4");
  bad.annotations.push_back({"purelb.io/addresses", "192.0.2.300"});
  cases.push_back({bad, "InvalidAnnotation"});

  for (const auto& cs : cases) Create(cs.svc);
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.svc.name);
    EXPECT_TRUE(c().WaitReason(cs.svc.name, cs.reason)) << c().Condition(cs.svc.name).dump();
    json cond = c().Condition(cs.svc.name);
    EXPECT_EQ(cond.value("status", ""), "False");
    EXPECT_TRUE(c().Ingress(cs.svc.name).empty());  // no half-allocation
    EXPECT_EQ(c().Annotation(cs.svc.name, "purelb.io/allocated-by"), "");
    EXPECT_TRUE(c().WaitEvent("Service", cs.svc.name, "Warning AllocationFailed purelb-allocator"));
  }
  // The holder of the tiny pool goes away: the refused Service gets the address.
  ASSERT_TRUE(c().client().Delete(k8s::resources::Services(), "default", "ref-tiny1").has_value());
  EXPECT_TRUE(c().WaitIngress("ref-tiny2", {"192.0.2.60"}));
  EXPECT_TRUE(Eventually([&] { return c().Condition("ref-tiny2").value("status", "") == "True"; }));
  // The missing group appears: the Service waiting for it is allocated.
  ApplyGroup("does-not-exist",
             "    v4pools:\n    - pool: 192.0.2.70-192.0.2.71\n      subnet: 192.0.2.0/24\n");
  EXPECT_TRUE(c().WaitIngress("ref-nogroup", {"192.0.2.70"}));
}

TEST_F(AllocatorE2E, EditsReleaseAndClassChange) {
  ApplyGroup("ed-a",
             "    v4pools:\n    - pool: 192.0.2.100-192.0.2.109\n      subnet: 192.0.2.0/24\n"
             "    v6pools:\n    - pool: 2001:db8:ed::/124\n      subnet: 2001:db8:ed::/64\n");
  ApplyGroup(
      "ed-b",
      "    v4pools:\n    - pool: 203.0.113.100-203.0.113.109\n      subnet: 203.0.113.0/24\n");
  ASSERT_TRUE(c().Apply(R"(apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: edclass
spec:
  ipv4Pools:
  - start: 198.18.50.10
    end: 198.18.50.19
)")
                  .has_value());
  Svc s{"ed", "default", std::nullopt, {{"purelb.io/service-group", "ed-a"}}};
  Create(s);
  ASSERT_TRUE(c().WaitIngress("ed", {"192.0.2.100"}));
  // Requested address edit (kubectl annotate, as a user would).
  ASSERT_TRUE(
      c().Kubectl({"annotate", "--overwrite", "service", "ed", "purelb.io/addresses=192.0.2.105"})
          .has_value());
  ASSERT_TRUE(c().WaitIngress("ed", {"192.0.2.105"}));
  EXPECT_TRUE(c().WaitEvent("Service", "ed", "AddressReleased"));
  // Group edit.
  ASSERT_TRUE(c().Kubectl({"annotate", "service", "ed", "purelb.io/addresses-"}).has_value());
  ASSERT_TRUE(
      c().Kubectl({"annotate", "--overwrite", "service", "ed", "purelb.io/service-group=ed-b"})
          .has_value());
  ASSERT_TRUE(c().WaitIngress("ed", {"203.0.113.100"}));
  EXPECT_TRUE(WaitStatus(k8s::resources::ServiceGroups(), "purelb-system", "ed-a",
                         [](const json& st) { return st["ipv4"]["inUse"] == "0"; }));
  // Families edit: back to ed-a, dual-stack.
  MergePatch("ed",
             {{"metadata", {{"annotations", {{"purelb.io/service-group", "ed-a"}}}}},
              {"spec", {{"ipFamilyPolicy", "PreferDualStack"}, {"ipFamilies", {"IPv4", "IPv6"}}}}});
  ASSERT_TRUE(c().WaitIngress("ed", {"192.0.2.101", "2001:db8:ed::1"}))
      << ::testing::PrintToString(c().Ingress("ed"));
  // Sharing key edit keeps the addresses (nothing else shares them).
  ASSERT_TRUE(
      c().Kubectl({"annotate", "--overwrite", "service", "ed", "purelb.io/allow-shared-ip=key1"})
          .has_value());
  EXPECT_TRUE(Eventually([&] {
    return c().Condition("ed").value("status", "") == "True" &&
           c().Ingress("ed") == std::vector<std::string>{"192.0.2.101", "2001:db8:ed::1"};
  }));
  // Leaving LoadBalancer: the server clears the status; Pylon releases and removes its traces.
  MergePatch("ed", {{"spec", {{"type", "ClusterIP"}}}});
  EXPECT_TRUE(Eventually([&] {
    return c().Annotation("ed", "purelb.io/allocated-by").empty() &&
           c().Condition("ed").is_null() && c().Ingress("ed").empty();
  }));
  EXPECT_TRUE(WaitStatus(
      k8s::resources::ServiceGroups(), "purelb-system", "ed-a",
      [](const json& st) { return st["ipv4"]["inUse"] == "0" && st["ipv6"]["inUse"] == "0"; }));
  // Back to LoadBalancer with a Lace class: a class change releases and re-allocates.
  MergePatch("ed",
             {{"spec", {{"type", "LoadBalancer"}, {"loadBalancerClass", "lace-cni.io/edclass"}}}});
  ASSERT_TRUE(c().WaitIngress("ed", {"198.18.50.10"}))
      << ::testing::PrintToString(c().Ingress("ed")) << c().Condition("ed").dump();
  EXPECT_TRUE(
      Eventually([&] { return c().Annotation("ed", "purelb.io/allocated-from") == "edclass"; }));
  // Delete releases.
  ASSERT_TRUE(c().Kubectl({"delete", "service", "ed"}).has_value());
  EXPECT_TRUE(WaitStatus(k8s::resources::LoadBalancerClasses(), "", "edclass",
                         [](const json& st) { return st["ipv4"]["inUse"] == "0"; }));
}

TEST_F(AllocatorE2E, SharingAndForeignClass) {
  ApplyGroup("sh",
             "    v4pools:\n    - pool: 192.0.2.150-192.0.2.152\n      subnet: 192.0.2.0/24\n");
  auto shared = [](std::string name, std::vector<std::pair<std::string, int>> ports) {
    Svc s;
    s.name = std::move(name);
    s.annotations = {{"purelb.io/service-group", "sh"}, {"purelb.io/allow-shared-ip", "k"}};
    s.ports = std::move(ports);
    return s;
  };
  Svc foreign{"sh-foreign", "default", "example.com/other"};
  Create(foreign);
  Create(shared("sh-a", {{"TCP", 80}}));
  ASSERT_TRUE(c().WaitIngress("sh-a", {"192.0.2.150"}));
  Create(shared("sh-b", {{"TCP", 443}, {"UDP", 53}}));
  EXPECT_TRUE(c().WaitIngress("sh-b", {"192.0.2.150"}));  // distinct ports: shared
  Svc conflict = shared("sh-c", {{"TCP", 80}});
  conflict.annotations.push_back({"purelb.io/addresses", "192.0.2.150"});
  Create(conflict);
  EXPECT_TRUE(c().WaitReason("sh-c", "SharingConflict"));
  // Without a request an overlapping port gets an address of its own.
  Create(shared("sh-d", {{"TCP", 80}}));
  EXPECT_TRUE(c().WaitIngress("sh-d", {"192.0.2.151"}));
  EXPECT_TRUE(WaitStatus(k8s::resources::ServiceGroups(), "purelb-system", "sh",
                         [](const json& st) { return st["ipv4"]["inUse"] == "2"; }));
  // The foreign-class Service was never touched (it was created before everything above).
  auto f = c().GetService("sh-foreign");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(k8s::Annotation(*f, "purelb.io/allocated-by"), "");
  EXPECT_TRUE(c().Condition("sh-foreign").is_null());
  EXPECT_TRUE(c().Ingress("sh-foreign").empty());
  EXPECT_TRUE(c().Events("Service", "sh-foreign").empty());
}

TEST_F(AllocatorE2E, InvalidConfigKeepsLastValid) {
  ApplyGroup("cfg-a",
             "    v4pools:\n    - pool: 192.0.2.200-192.0.2.203\n      subnet: 192.0.2.0/24\n");
  ASSERT_TRUE(WaitStatus(
      k8s::resources::ServiceGroups(), "purelb-system", "cfg-a",
      [](const json& st) { return st.value("valid", false) && st["ipv4"]["size"] == "4"; }));
  // An edit that puts the pool outside its subnet is rejected; generation 1 stays in force.
  ApplyGroup("cfg-a", "    v4pools:\n    - pool: 10.0.0.1-10.0.0.9\n      subnet: 192.0.2.0/24\n");
  EXPECT_TRUE(WaitStatus(k8s::resources::ServiceGroups(), "purelb-system", "cfg-a",
                         [](const json& st) {
                           return !st.value("valid", true) && st["ipv4"]["size"] == "4" &&
                                  st["conditions"][0]["status"] == "False";
                         }))
      << ConfigStatus(k8s::resources::ServiceGroups(), "purelb-system", "cfg-a").dump();
  EXPECT_TRUE(c().WaitEvent("ServiceGroup", "cfg-a", "Warning InvalidConfig purelb-allocator",
                            "purelb-system"));
  Svc s{"cfg-svc", "default", std::nullopt, {{"purelb.io/service-group", "cfg-a"}}};
  Create(s);
  EXPECT_TRUE(c().WaitIngress("cfg-svc", {"192.0.2.200"}));
  // A new group overlapping cfg-a is rejected as a whole.
  ApplyGroup("cfg-b",
             "    v4pools:\n    - pool: 192.0.2.202-192.0.2.210\n      subnet: 192.0.2.0/24\n");
  EXPECT_TRUE(WaitStatus(
      k8s::resources::ServiceGroups(), "purelb-system", "cfg-b",
      [](const json& st) { return !st.value("valid", true) && st["ipv4"]["size"] == "0"; }))
      << ConfigStatus(k8s::resources::ServiceGroups(), "purelb-system", "cfg-b").dump();
  // Fixing the edit applies without a restart.
  ApplyGroup("cfg-a",
             "    v4pools:\n    - pool: 192.0.2.220-192.0.2.221\n      subnet: 192.0.2.0/24\n");
  EXPECT_TRUE(c().WaitIngress("cfg-svc", {"192.0.2.220"}))
      << ::testing::PrintToString(c().Ingress("cfg-svc"));
  EXPECT_TRUE(
      WaitStatus(k8s::resources::ServiceGroups(), "purelb-system", "cfg-a", [](const json& st) {
        return st.value("valid", false) && st["ipv4"]["size"] == "2" && st["ipv4"]["inUse"] == "1";
      }));
}

TEST_F(AllocatorE2E, MetricsAndHealth) {
  const std::string url = c().MetricsUrl(replica_);
  ASSERT_FALSE(url.empty());
  EXPECT_EQ(c().HttpGet(url + "/healthz"), "ok\n");
  EXPECT_TRUE(Eventually([&] { return c().HttpGet(url + "/readyz") == "ok\n"; }));
  ApplyGroup("met",
             "    v4pools:\n    - pool: 192.0.2.240-192.0.2.241\n      subnet: 192.0.2.0/24\n");
  Svc s{"met-svc", "default", std::nullopt, {{"purelb.io/service-group", "met"}}};
  Create(s);
  ASSERT_TRUE(c().WaitIngress("met-svc", {"192.0.2.240"}));
  EXPECT_TRUE(Eventually([&] {
    std::string m = c().HttpGet(url + "/metrics");
    return m.find(
               "purelb_address_pool_size{family=\"IPv4\",kind=\"ServiceGroup\",pool=\"met\"} 2") !=
               std::string::npos &&
           m.find(
               "purelb_address_pool_addresses_in_use{family=\"IPv4\",kind=\"ServiceGroup\","
               "pool=\"met\"} 1") != std::string::npos &&
           m.find("purelb_allocator_is_leader 1") != std::string::npos &&
           m.find("purelb_allocator_allocations_total") != std::string::npos;
  })) << c().HttpGet(url + "/metrics");
}

// A purelb.io/v1 and purelb.io/v2 ServiceGroups side by side on the real API server (the CRDs serve
// both versions, docs/purelb-v2.md), both allocating: a v1 group by annotation, a v2 remote group
// by annotation with class purelb.io/purelbv2, a v2 local group by namespace; an external group
// refused with its condition; the status written by the allocator (through v1) read through v2.
TEST_F(AllocatorE2E, PurelbV1AndV2GroupsSideBySide) {
  ASSERT_TRUE(c().Kubectl({"create", "namespace", "v2e-team"}).has_value());
  ApplyGroupAs("purelb.io/v1", "v2e-old", R"(  local:
    v4pools: [{subnet: 10.14.1.0/24, pool: 10.14.1.10-10.14.1.19, aggregation: default}]
)");
  ApplyGroupAs("purelb.io/v2", "v2e-remote", R"(  remote:
    v4pools: [{subnet: 10.14.3.0/24, pool: 10.14.3.10-10.14.3.19, aggregation: /32}]
    v6pools: [{subnet: 'fd14:3::/64', pool: 'fd14:3::10-fd14:3::1f', aggregation: /128}]
)");
  ApplyGroupAs("purelb.io/v2", "v2e-team", R"(  local:
    v4pools: [{subnet: 10.14.2.0/24, pool: 10.14.2.10-10.14.2.19}]
    skipIPv6DAD: true
  namespaces: [v2e-team]
  enforceNamespaces: true
)");
  ApplyGroupAs("purelb.io/v2", "v2e-ipam", R"(  external: {provider: netbox, announce: local}
)");

  Create(Svc{"v2e-a", "default", std::nullopt, {{"purelb.io/service-group", "v2e-old"}}});
  Create(Svc{"v2e-b",
             "default",
             std::string("purelb.io/purelbv2"),
             {{"purelb.io/service-group", "v2e-remote"}},
             {"IPv4", "IPv6"},
             "RequireDualStack"});
  Create(Svc{"v2e-c", "v2e-team"});  // no annotation: the namespace's group
  Create(Svc{"v2e-d",
             "v2e-team",
             std::string("purelb.io/purelbv2"),
             {{"purelb.io/service-group", "v2e-old"}}});  // enforced namespace: refused
  Create(Svc{"v2e-e", "default", std::nullopt, {{"purelb.io/service-group", "v2e-ipam"}}});
  EXPECT_TRUE(c().WaitIngress("v2e-a", {"10.14.1.10"})) << c().Condition("v2e-a").dump();
  EXPECT_TRUE(c().WaitIngress("v2e-b", {"10.14.3.10", "fd14:3::10"}))
      << c().Condition("v2e-b").dump();
  EXPECT_TRUE(c().WaitIngress("v2e-c", {"10.14.2.10"}, 20s, "v2e-team"))
      << c().Condition("v2e-c", "v2e-team").dump();
  // The annotations follow the status write.
  auto annotations_are = [&](const std::string& svc, const std::string& ns,
                             const std::vector<std::pair<std::string, std::string>>& want) {
    return Eventually([&] {
      for (const auto& [k, v] : want) {
        if (c().Annotation(svc, k, ns) != v) return false;
      }
      return true;
    });
  };
  EXPECT_TRUE(annotations_are("v2e-b", "default",
                              {{"purelb.io/allocated-from", "v2e-remote"},
                               {"purelb.io/pool-type", "remote"},
                               {"purelb.io/skip-ipv6-dad", ""}}));
  EXPECT_TRUE(annotations_are("v2e-c", "v2e-team",
                              {{"purelb.io/allocated-from", "v2e-team"},
                               {"purelb.io/pool-type", "local"},
                               {"purelb.io/skip-ipv6-dad", "true"}}));
  EXPECT_TRUE(annotations_are(
      "v2e-a", "default", {{"purelb.io/allocated-from", "v2e-old"}, {"purelb.io/pool-type", ""}}));
  EXPECT_TRUE(c().WaitReason("v2e-d", "NamespaceDenied", 20s, "v2e-team"))
      << c().Condition("v2e-d", "v2e-team").dump();
  EXPECT_TRUE(c().Ingress("v2e-d", "v2e-team").empty());
  EXPECT_TRUE(c().WaitReason("v2e-e", "NoSuchServiceGroup")) << c().Condition("v2e-e").dump();

  // The allocator's status (exact decimal strings per family), read through v2.
  const k8s::Resource v2res{"purelb.io", "v2", "servicegroups", "ServiceGroup", true};
  EXPECT_TRUE(WaitStatus(v2res, "purelb-system", "v2e-remote", [](const json& st) {
    return st.value("valid", false) && st["ipv4"]["size"] == "10" && st["ipv4"]["inUse"] == "1" &&
           st["ipv6"]["size"] == "16" && st["ipv6"]["inUse"] == "1" &&
           st.value("announce", "") == "Remote" && st.value("allocatedIPv4", "") == "1" &&
           st.value("availableIPv4", "") == "9" && st.value("availableIPv6", "") == "15";
  })) << ConfigStatus(v2res, "purelb-system", "v2e-remote").dump();
  EXPECT_TRUE(WaitStatus(v2res, "purelb-system", "v2e-team", [](const json& st) {
    return st.value("announce", "") == "Local" && st.value("allocatedIPv4", "") == "1" &&
           st["boundNamespaces"] == json::array({"v2e-team"});
  })) << ConfigStatus(v2res, "purelb-system", "v2e-team").dump();
  EXPECT_TRUE(WaitStatus(v2res, "purelb-system", "v2e-old", [](const json& st) {
    return st.value("valid", false) && st["ipv4"]["inUse"] == "1";
  })) << ConfigStatus(v2res, "purelb-system", "v2e-old").dump();
  EXPECT_TRUE(WaitStatus(v2res, "purelb-system", "v2e-ipam", [](const json& st) {
    return !st.value("valid", true) && st["conditions"][0]["status"] == "False" &&
           st.value("message", "").find("external IPAM (provider netbox) is not supported") !=
               std::string::npos;
  })) << ConfigStatus(v2res, "purelb-system", "v2e-ipam").dump();
  // The objects keep the version they were written as, whichever version is read.
  auto team_v1 = c().client().Get(k8s::resources::ServiceGroups(), "purelb-system", "v2e-team");
  ASSERT_TRUE(team_v1.has_value());
  EXPECT_EQ((*team_v1)["apiVersion"], "purelb.io/v1");
  EXPECT_EQ((*team_v1)["spec"]["writtenAs"], "v2");
  EXPECT_EQ((*team_v1)["spec"]["namespaces"], json::array({"v2e-team"}));
  auto old_v2 = c().client().Get(v2res, "purelb-system", "v2e-old");
  ASSERT_TRUE(old_v2.has_value());
  EXPECT_EQ((*old_v2)["spec"]["writtenAs"], "v1");
}

// Multi-pool: a v2 local group gives a Service an address from each range whose subnet a live
// node lease advertises; a subnet that goes live adds one (the node Lease informer requeues the
// Service); purelb.io/re-evaluate is removed.
TEST_F(AllocatorE2E, MultiPoolFollowsNodeLeases) {
  ApplyGroupAs("purelb.io/v2", "mpe", R"(  local:
    multiPool: true
    v4pools:
      - {subnet: 10.15.1.0/24, pool: 10.15.1.10-10.15.1.19}
      - {subnet: 10.15.2.0/24, pool: 10.15.2.10-10.15.2.19}
)");
  k8s::LeaseSpec spec;
  spec.holder_identity = "mpe-n1";
  spec.lease_duration_seconds = 3600;
  spec.renew_time = std::chrono::system_clock::now();
  json lease = k8s::MakeLease("purelb-system", "purelb-node-mpe-n1", spec);
  lease["metadata"]["annotations"] = {{"purelb.io/subnets", "10.15.1.0/24"}};
  auto created = c().client().Create(k8s::resources::Leases(), lease);
  ASSERT_TRUE(created.has_value()) << created.error().message();

  Create(Svc{"mpe-a", "default", std::nullopt, {{"purelb.io/service-group", "mpe"}}});
  EXPECT_TRUE(c().WaitIngress("mpe-a", {"10.15.1.10"})) << c().Condition("mpe-a").dump();

  // The node now also advertises 10.15.2.0/24.
  auto patched = c().client().Patch(
      k8s::resources::Leases(), "purelb-system", "purelb-node-mpe-n1", k8s::PatchType::kMerge,
      json{{"metadata", {{"annotations", {{"purelb.io/subnets", "10.15.1.0/24,10.15.2.0/24"}}}}}},
      "");
  ASSERT_TRUE(patched.has_value()) << patched.error().message();
  EXPECT_TRUE(c().WaitIngress("mpe-a", {"10.15.1.10", "10.15.2.10"}))
      << c().Condition("mpe-a").dump();

  MergePatch("mpe-a", {{"metadata", {{"annotations", {{"purelb.io/re-evaluate", "true"}}}}}});
  EXPECT_TRUE(Eventually([&] { return c().Annotation("mpe-a", "purelb.io/re-evaluate").empty(); }));
  EXPECT_EQ(c().Ingress("mpe-a"), (std::vector<std::string>{"10.15.1.10", "10.15.2.10"}));
}

// purelb.io/v2 ServiceGroup allocation rules on the real API server, one row per behaviour: each
// row applies its own v2 group (remote, so every range is active without node leases), creates
// its Services in order and expects each one's addresses or refusal reason.
TEST_F(AllocatorE2E, PurelbV2AllocationTable) {
  struct Group {
    std::string name;
    std::string what;
    std::string spec;  // spec.remote, flow style
  };
  struct Expect {
    std::string group;
    std::string name;
    std::vector<std::pair<std::string, std::string>> more;  // annotations besides the group
    std::vector<std::string> ingress;                       // empty: refused with `reason`
    std::string reason;
  };
  // A v4pools entry: <net>.10 to <net>.<last> in <net>.0/24.
  auto range = [](const std::string& net, int last = 19) {
    return "{subnet: " + net + ".0/24, pool: " + net + ".10-" + net + "." + std::to_string(last) +
           "}";
  };
  auto v4pools = [](const std::vector<std::string>& ranges) {
    std::string out;
    for (const auto& r : ranges) out += (out.empty() ? "" : ", ") + r;
    return "v4pools: [" + out + "]";
  };
  const std::pair<std::string, std::string> multi_pool_off{"purelb.io/multi-pool", "false"};
  const std::pair<std::string, std::string> shared{"purelb.io/allow-shared-ip", "k"};
  // clang-format off
  const std::vector<Group> groups = {
      {"v2t-bal", "balancePools: each new address from the range with the fewest in use", "balancePools: true, " + v4pools({range("10.16.1"), range("10.16.2")})},
      {"v2t-seq", "without balancePools: the first range until it is full", v4pools({range("10.16.3", 11), range("10.16.4")})},
      {"v2t-ord", "v2 order: the v4pools list before the single v4pool entry", "v4pool: " + range("10.16.5") + ", " + v4pools({range("10.16.6")})},
      {"v2t-mp", "multiPool on a remote group: one address from every range", "multiPool: true, " + v4pools({range("10.16.7"), range("10.16.8")})},
      {"v2t-mpb", "multiPool with balancePools: refused", "multiPool: true, balancePools: true, " + v4pools({range("10.16.9")})},
  };
  // clang-format on
  const std::vector<Expect> services = {
      {"v2t-bal", "v2t-bal-a", {}, {"10.16.1.10"}, ""},
      {"v2t-bal", "v2t-bal-b", {}, {"10.16.2.10"}, ""},
      {"v2t-bal", "v2t-bal-c", {}, {"10.16.1.11"}, ""},
      {"v2t-seq", "v2t-seq-a", {}, {"10.16.3.10"}, ""},
      {"v2t-seq", "v2t-seq-b", {}, {"10.16.3.11"}, ""},
      {"v2t-seq", "v2t-seq-c", {}, {"10.16.4.10"}, ""},
      {"v2t-ord", "v2t-ord-a", {}, {"10.16.6.10"}, ""},
      {"v2t-mp", "v2t-mp-a", {}, {"10.16.7.10", "10.16.8.10"}, ""},
      {"v2t-mp", "v2t-mp-b", {multi_pool_off}, {"10.16.7.11"}, ""},  // the Service turns it off
      {"v2t-mp", "v2t-mp-c", {shared}, {}, "MultiPoolRefused"},      // refused with a sharing key
      {"v2t-mpb", "v2t-mpb-a", {}, {}, "MultiPoolRefused"},
      {"v2t-mpb", "v2t-mpb-b", {multi_pool_off}, {"10.16.9.10"}, ""},
  };
  std::set<std::string> applied;
  for (const auto& e : services) {
    const auto g = std::find_if(groups.begin(), groups.end(),
                                [&](const Group& x) { return x.name == e.group; });
    ASSERT_NE(g, groups.end()) << e.group;
    SCOPED_TRACE(g->what);
    // Each group applied before its first Service.
    if (applied.insert(g->name).second) {
      ASSERT_NO_FATAL_FAILURE(
          ApplyGroupAs("purelb.io/v2", g->name, "  remote: {" + g->spec + "}\n"));
    }
    std::vector<std::pair<std::string, std::string>> annotations = {
        {"purelb.io/service-group", e.group}};
    annotations.insert(annotations.end(), e.more.begin(), e.more.end());
    Create(Svc{e.name, "default", std::string("purelb.io/purelbv2"), annotations});
    if (e.reason.empty()) {
      EXPECT_TRUE(c().WaitIngress(e.name, e.ingress))
          << e.name << " " << c().Condition(e.name).dump();
    } else {
      EXPECT_TRUE(c().WaitReason(e.name, e.reason))
          << e.name << " " << c().Condition(e.name).dump();
      EXPECT_TRUE(c().Ingress(e.name).empty()) << e.name;
    }
  }
}

}  // namespace
}  // namespace pylon::allocator::e2e
