// The Helm chart in the lab (docs/helm.md): `helm install` makes the namespace, CRDs and RBAC in
// place of `kubectl apply -k deploy`, the lab's allocator and agents run as the chart's
// ServiceAccounts, seed 000's flow works, and `helm uninstall` removes the release but leaves the
// CRDs, the ServiceGroups and the Services' addresses. The chart's Deployment and DaemonSet are
// created but never run: the lab has no kubelet, it runs the components itself.
#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

class HelmLabTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->helm_chart = std::string(PYLON_SOURCE_DIR) + "/deploy/helm/pylon";
    cfg->helm_binary = PYLON_HELM_BIN;
  }
  bool Exists(const std::vector<std::string>& args) { return lab().Kubectl(args).has_value(); }
};

TEST_F(HelmLabTest, SeedFlowBetweenHelmInstallAndUninstall) {
  auto status = lab().Helm({"status", "pylon", "-n", "purelb-system"});
  ASSERT_TRUE(status) << status.error().message();
  EXPECT_NE(status->find("STATUS: deployed"), std::string::npos) << *status;
  EXPECT_TRUE(Exists({"get", "daemonset", "agent", "-n", "purelb-system"}));

  Apply(kLocalDual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  for (const auto& ip : ips) EXPECT_TRUE(EventuallyReachable(ip)) << ip;
  EXPECT_TRUE(Eventually([&] {
    auto svc = GetJson({"get", "service", "web"});
    auto ann = svc["metadata"].value("annotations", Json::object());
    return ann.contains("purelb.io/announcing-IPv4") && ann.contains("purelb.io/announcing-IPv6");
  }));
  // Everything the components asked for, the chart's RBAC allowed.
  EXPECT_GT(ExpectNoRefusedComponentRequests(), 0);

  auto un = lab().Helm({"uninstall", "pylon", "-n", "purelb-system"});
  ASSERT_TRUE(un) << un.error().message();
  EXPECT_TRUE(Eventually([&] {
    return !Exists({"get", "serviceaccount", "agent", "-n", "purelb-system"});
  }));
  EXPECT_FALSE(Exists({"get", "daemonset", "agent", "-n", "purelb-system"}));
  // Helm never deletes what crds/ installed: the CRDs, the ServiceGroup and the addresses stay.
  EXPECT_TRUE(Exists({"get", "crd", "servicegroups.purelb.io"}));
  EXPECT_TRUE(Exists({"get", "servicegroup", "localdual", "-n", "purelb-system"}));
  auto svc = GetJson({"get", "service", "web"});
  EXPECT_EQ(svc["status"]["loadBalancer"]["ingress"].size(), 2u) << svc.dump();
}

}  // namespace
}  // namespace pylon::e2e
