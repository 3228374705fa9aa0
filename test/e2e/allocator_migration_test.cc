// Migration from a PureLB v2 install (PureLB 0.15-0.17) to Pylon on kube-apiserver: PureLB's
// v2-only CRDs with its ServiceGroups, and Services as PureLB left them (class
// purelb.io/purelbv2, its annotations, addresses in status); then Pylon's CRDs applied over
// PureLB's and `pylon allocator` started (docs/migrate-from-purelb.md). Not one address changes;
// the Services stay PureLB-branded; new Services get free addresses around them.
#include <gtest/gtest.h>

#include <map>

#include "allocator_harness.h"
#include "support/manifests.h"
#include "support/purelb_v2_crd.h"

namespace pylon::allocator::e2e {
namespace {

// PureLB's CRD as its v2-only install has it (test/support/purelb_v2_crd.h).
json PurelbV2OnlyCrd(Cluster& c, const std::string& file) {
  auto out = c.Kubectl({"create", "--dry-run=client", "-o", "json", "-f",
                        std::string(PYLON_SOURCE_DIR) + "/deploy/crds/" + file});
  EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().message());
  if (!out) return nullptr;
  json crd = pylon::testing::PurelbV2OnlyCrd(json::parse(*out, nullptr, false));
  EXPECT_TRUE(crd.is_object()) << file;
  return crd;
}

TEST(MigrationE2E, PurelbV2InstallKeepsEveryAddress) {
  ClusterOptions opts;
  opts.install_crds = false;
  Cluster c("migration", opts);
  // --- PureLB v2 as it runs today.
  for (const char* f : {"servicegroups.purelb.io.yaml", "lbnodeagents.purelb.io.yaml"}) {
    json crd = PurelbV2OnlyCrd(c, f);
    ASSERT_TRUE(crd.is_object());
    ASSERT_TRUE(c.Apply(crd.dump()).has_value()) << f;
  }
  ASSERT_TRUE(c.Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"})
                  .has_value());
  ASSERT_TRUE(c.Kubectl({"create", "namespace", "tenant-a"}).has_value());
  ASSERT_TRUE(c.Apply(test_support::ServiceGroupYaml("purelb.io/v2", "default", R"(  local:
    v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.240-192.0.2.250, aggregation: default}]
    v6pools: [{subnet: 'fd00:1::/64', pool: 'fd00:1::f0-fd00:1::ff', aggregation: default}]
)") + R"(---
apiVersion: purelb.io/v2
kind: ServiceGroup
metadata: {name: bgp, namespace: purelb-system}
spec:
  remote:
    v4pools: [{subnet: 203.0.113.0/24, pool: 203.0.113.0/28, aggregation: /32}]
---
apiVersion: purelb.io/v2
kind: ServiceGroup
metadata: {name: tenant, namespace: purelb-system}
spec:
  local:
    v4pools: [{subnet: 198.51.100.0/24, pool: 198.51.100.10-198.51.100.19}]
  namespaces: [tenant-a]
  enforceNamespaces: true
---
apiVersion: purelb.io/v2
kind: LBNodeAgent
metadata: {name: default, namespace: purelb-system}
spec:
  local: {localInterface: default, dummyInterface: kube-lb0}
)")
                  .has_value());

  // Services as PureLB v2 allocated them: addresses that are NOT the first free ones, so a fresh
  // allocation would differ.
  struct Old {
    Svc svc;
    std::vector<std::string> ips;
    std::string from, pool_type;
  };
  auto svc = [](std::string name, std::string ns,
                std::vector<std::pair<std::string, std::string>> ann,
                std::vector<std::string> families = {}, std::string policy = "") {
    return Svc{std::move(name), std::move(ns),       std::string("purelb.io/purelbv2"),
               std::move(ann),  std::move(families), std::move(policy)};
  };
  std::vector<Old> olds = {
      {svc("web", "default", {}), {"192.0.2.243"}, "default", "local"},
      {svc("dual", "default", {}, {"IPv4", "IPv6"}, "RequireDualStack"),
       {"192.0.2.247", "fd00:1::f7"},
       "default",
       "local"},
      {svc("routed", "default", {{"purelb.io/service-group", "bgp"}}),
       {"203.0.113.9"},
       "bgp",
       "remote"},
      {svc("pinned", "default", {{"purelb.io/addresses", "192.0.2.249"}}),
       {"192.0.2.249"},
       "default",
       "local"},
      {svc("tenant-web", "tenant-a", {}), {"198.51.100.15"}, "tenant", "local"},
      {svc("share-a", "default", {{"purelb.io/allow-shared-ip", "k"}}),
       {"192.0.2.245"},
       "default",
       "local"},
  };
  olds[5].svc.ports = {{"TCP", 80}};
  Old share_b{svc("share-b", "default", {{"purelb.io/allow-shared-ip", "k"}}),
              {"192.0.2.245"},
              "default",
              "local"};
  share_b.svc.ports = {{"TCP", 443}};
  olds.push_back(share_b);
  for (Old& o : olds) {
    o.svc.annotations.push_back({"purelb.io/allocated-by", "PureLB"});
    o.svc.annotations.push_back({"purelb.io/allocated-from", o.from});
    o.svc.annotations.push_back({"purelb.io/pool-type", o.pool_type});
    auto created = c.client().Create(k8s::resources::Services(), o.svc.ToJson());
    ASSERT_TRUE(created.has_value()) << o.svc.name << ": " << created.error().message();
    json st = *created;
    json ing = json::array();
    for (const auto& ip : o.ips) ing.push_back({{"ip", ip}, {"ipMode", "VIP"}});
    st["status"] = {{"loadBalancer", {{"ingress", ing}}}};
    auto written = c.client().UpdateStatus(k8s::resources::Services(), st);
    ASSERT_TRUE(written.has_value()) << o.svc.name << ": " << written.error().message();
  }

  // --- The migration: Pylon's CRDs over PureLB's, then Pylon's allocator.
  const std::string deploy = std::string(PYLON_SOURCE_DIR) + "/deploy";
  auto crds = c.Kubectl({"apply", "-f", deploy + "/crds"});
  ASSERT_TRUE(crds.has_value()) << crds.error().message();
  ASSERT_TRUE(c.Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"})
                  .has_value());
  const int replica = c.StartAllocator("solo");
  ASSERT_TRUE(Eventually(
      [&] { return c.AllocatorLog(replica).find("became leader") != std::string::npos; }, 60s))
      << c.AllocatorLog(replica);
  // The groups are read as the v2 objects they were written as, and are in force.
  for (const char* g : {"default", "bgp", "tenant"}) {
    EXPECT_TRUE(Eventually([&] {
      auto o = c.client().Get(k8s::resources::ServiceGroups(), "purelb-system", g);
      if (!o || FindString(*o, {"spec", "writtenAs"}).value_or("") != "v2") return false;
      auto st = o->find("status");
      return st != o->end() && st->is_object() && st->value("valid", false);
    })) << g;
  }
  // A Service created now gets a free address, never one of the adopted ones: next-fit continues
  // after the highest address restored (192.0.2.249).
  Svc fresh{"fresh", "default", std::string("purelb.io/purelbv2")};
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), fresh.ToJson()).has_value());
  EXPECT_TRUE(c.WaitIngress("fresh", {"192.0.2.250"})) << c.Condition("fresh").dump();
  // Every adopted Service: the same addresses, still PureLB's, its condition True.
  for (const Old& o : olds) {
    EXPECT_TRUE(Eventually([&] {
      json cond = c.Condition(o.svc.name, o.svc.ns);
      return cond.is_object() && cond.value("status", "") == "True";
    })) << o.svc.name
        << ": " << c.Condition(o.svc.name, o.svc.ns).dump();
    EXPECT_EQ(c.Ingress(o.svc.name, o.svc.ns), o.ips) << o.svc.name;
    EXPECT_EQ(c.Annotation(o.svc.name, "purelb.io/allocated-by", o.svc.ns), "PureLB") << o.svc.name;
    EXPECT_EQ(c.Annotation(o.svc.name, "purelb.io/allocated-from", o.svc.ns), o.from) << o.svc.name;
    EXPECT_EQ(c.Annotation(o.svc.name, "purelb.io/pool-type", o.svc.ns), o.pool_type) << o.svc.name;
  }
  EXPECT_EQ(c.AllocatorLog(replica).find("rebuild: address not restored"), std::string::npos)
      << c.AllocatorLog(replica);
}

}  // namespace
}  // namespace pylon::allocator::e2e
