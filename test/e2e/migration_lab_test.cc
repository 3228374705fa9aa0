// Migration from a running PureLB v2 install (PureLB 0.15-0.17) to Pylon in the lab, agents
// included (docs/migrate-from-purelb.md, "From PureLB 0.15-0.17"): PureLB's v2-only CRDs, its
// ServiceGroup, and a Service as PureLB left it (class purelb.io/purelbv2, its annotations in the
// v2 forms, both addresses in status, announced by a node that is not the hash winner). Then the
// migration's step 3: Pylon's CRDs applied over PureLB's, its allocator and agents started. Not
// one address changes, each stays on the node PureLB's announcing annotation names (the election
// is sticky on it), the client reaches it there, and a new Service gets a free address with the
// v2 announcing form.
#include "e2e_lab.h"
#include "election/hash.h"
#include "support/purelb_v2_crd.h"

namespace pylon::e2e {
namespace {

class MigrationLabTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->start_allocator = false;  // PureLB is stopped (migration step 2)
    cfg->start_agents = false;
  }
  // A node that does NOT win `ip` by the hash: stickiness, not the hash, must keep it there.
  std::string HashLoser(const std::string& ip) {
    std::string best, loser;
    election::Digest best_digest{};
    for (const auto& n : lab().topology().nodes()) {
      auto d = *election::ElectionDigest(n.name, ip);
      if (best.empty() || d < best_digest) {
        if (!best.empty()) loser = best;
        best = n.name;
        best_digest = d;
      } else {
        loser = n.name;
      }
    }
    return loser;
  }
};

TEST_F(MigrationLabTest, PurelbV2InstallTakenOverByPylonsAgentsWithoutAnAddressChanging) {
  // --- PureLB v2 as it runs today (its controllers stopped).
  auto del = lab().Kubectl({"delete", "crd", "servicegroups.purelb.io", "lbnodeagents.purelb.io"});
  ASSERT_TRUE(del) << del.error().message();
  for (const char* f : {"servicegroups.purelb.io.yaml", "lbnodeagents.purelb.io.yaml"}) {
    auto out = lab().Kubectl({"create", "--dry-run=client", "-o", "json", "-f",
                              std::string(PYLON_SOURCE_DIR) + "/deploy/crds/" + f});
    ASSERT_TRUE(out) << out.error().message();
    Json crd = pylon::testing::PurelbV2OnlyCrd(Json::parse(*out, nullptr, false));
    ASSERT_TRUE(crd.is_object()) << f;
    Apply(crd.dump());
  }
  ASSERT_TRUE(lab().Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd",
                             "servicegroups.purelb.io", "lbnodeagents.purelb.io"}));
  Apply(test_support::ServiceGroupYaml("purelb.io/v2", "default", R"(  local:
    v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.240-192.0.2.250, aggregation: default}]
    v6pools: [{subnet: '2001:db8:1::/64', pool: '2001:db8:1::f0-2001:db8:1::ff', aggregation: default}]
)"));
  const std::string ip4 = "192.0.2.241", ip6 = "2001:db8:1::f1";
  const std::string node4 = HashLoser(ip4), node6 = HashLoser(ip6);
  const std::string ann4 = node4 + ",eth0," + ip4, ann6 = node6 + ",eth0," + ip6;
  Apply(
      "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\n"
      "  annotations:\n    purelb.io/allocated-by: PureLB\n    purelb.io/allocated-from: default\n"
      "    purelb.io/pool-type: local\n    purelb.io/announcing-IPv4: " +
      ann4 + "\n    purelb.io/announcing-IPv6: " + ann6 +
      "\nspec:\n  type: LoadBalancer\n  loadBalancerClass: purelb.io/purelbv2\n" + kDualSpec +
      "  selector: {app: web}\n  ports:\n  - {port: 80, targetPort: 8080, protocol: TCP}\n");
  auto st = lab().Kubectl({"patch", "service", "web", "--subresource=status", "--type=merge", "-p",
                           R"({"status":{"loadBalancer":{"ingress":[{"ip":")" + ip4 +
                               R"(","ipMode":"VIP"},{"ip":")" + ip6 + R"(","ipMode":"VIP"}]}}})"});
  ASSERT_TRUE(st) << st.error().message();

  // --- Migration step 3: Pylon's CRDs over PureLB's, then its allocator and agents.
  auto crds = lab().Kubectl({"apply", "-f", std::string(PYLON_SOURCE_DIR) + "/deploy/crds/"});
  ASSERT_TRUE(crds) << crds.error().message();
  // As the migration steps say: v1 served again before the components start (they read v1).
  ASSERT_TRUE(lab().Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd",
                             "servicegroups.purelb.io", "lbnodeagents.purelb.io"}));
  ASSERT_TRUE(Eventually([&] {
    return lab().Kubectl({"get", "-A", "servicegroups.v1.purelb.io"}).has_value() &&
           lab().Kubectl({"get", "-A", "lbnodeagents.v1.purelb.io"}).has_value();
  }));
  ASSERT_TRUE(lab().StartAllocator());
  for (const auto& n : lab().topology().nodes()) ASSERT_TRUE(lab().StartAgent(n.name)) << n.name;

  EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip4) == std::vector<std::string>{node4}; },
                         Ms(30000)))
      << ip4 << " should stay on " << node4;
  EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip6) == std::vector<std::string>{node6}; },
                         Ms(30000)))
      << ip6 << " should stay on " << node6;
  for (const auto& [ip, node] : {std::pair{ip4, node4}, std::pair{ip6, node6}}) {
    lab::ProbeResult r;
    EXPECT_TRUE(Eventually([&] {
      r = Probe(ip);
      return r.ok && r.body == node;
    })) << ip
        << ": " << r.body << r.error;
  }
  // The group is Pylon's now and still reads as v2; the Service kept its addresses and PureLB's
  // annotations (in the v2 forms, which the winners find already right).
  auto sg = GetJson({"get", "servicegroups.v2.purelb.io", "default", "-n", "purelb-system"});
  EXPECT_EQ(sg["apiVersion"], "purelb.io/v2");
  EXPECT_TRUE(Eventually([&] {
    auto g = GetJson({"get", "servicegroup", "default", "-n", "purelb-system"});
    return g.contains("status") && g["status"].value("valid", false);
  })) << GetJson({"get", "servicegroup", "default", "-n", "purelb-system"}).dump();
  auto svc = Service("web");
  EXPECT_EQ(IngressIps(svc), (std::vector<std::string>{ip4, ip6}));
  EXPECT_EQ(Annotation(svc, "purelb.io/allocated-by"), "PureLB");
  EXPECT_EQ(Annotation(svc, "purelb.io/announcing-IPv4"), ann4);
  EXPECT_EQ(Annotation(svc, "purelb.io/announcing-IPv6"), ann6);

  // A new Service after the migration: a free address of the group, the v2 announcing form.
  Apply(ServiceYaml("fresh", "    purelb.io/service-group: default\n", ""));
  auto fresh = WaitIngress("fresh", 1);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_NE(fresh[0], ip4);
  EXPECT_TRUE(EventuallyReachable(fresh[0]));
  std::string announcing;
  EXPECT_TRUE(Eventually([&] {
    announcing = Annotation(Service("fresh"), "purelb.io/announcing-IPv4");
    return announcing.size() > fresh[0].size() &&
           announcing.compare(announcing.size() - fresh[0].size() - 1, std::string::npos,
                              "," + fresh[0]) == 0;
  })) << announcing;
  EXPECT_GT(ExpectNoRefusedComponentRequests(), 0);
}

}  // namespace
}  // namespace pylon::e2e
