// The lab's real kube-apiserver as a user meets it, and everything Pylon writes read back from it.
// kubectl (of the server's release) as the user types it: create namespace, apply -f with default
// validation, get -w, describe, auth can-i. Then every kind of object Pylon writes, read back:
// Service status and annotations, ServiceGroup and LoadBalancerClass status (sizes as exact
// decimal strings), L2Advertisements, node Leases and their annotations, Events. And no request
// of the allocator or an agent was refused as invalid or forbidden (the audit log). Needs root.
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

std::string InDemo(std::string yaml) {
  const std::string from = "namespace: default";
  yaml.replace(yaml.find(from), from.size(), "namespace: demo");
  return yaml;
}

class RealServerTest : public LabTest {
 protected:
  std::string Kubectl(const std::vector<std::string>& args) {
    auto r = lab().Kubectl(args);
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? *r : "";
  }
  Json Get(const std::vector<std::string>& args) { return GetJson(args); }
};

TEST_F(RealServerTest, KubectlAsAUserAndEverythingPylonWritesReadsBack) {
  EXPECT_NE(Kubectl({"create", "namespace", "demo"}).find("namespace/demo created"),
            std::string::npos);

  // `kubectl get -w` while the Service is created and allocated (bounded by timeout(1)).
  std::string watched;
  std::thread watcher([&] {
    (void)lab::RunCommand({"timeout", "25", lab().KubectlBinary(), "--kubeconfig",
                           lab().Kubeconfig(), "get", "services", "-n", "demo", "-w"},
                          &watched, "", /*merge_stderr=*/false);
  });
  Apply(kLocalDual);  // Lab::Apply: kubectl apply -f, default validation
  Apply(kPublicClass);
  Apply(InDemo(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec)));
  Apply(InDemo(ServiceYaml("lace", "",
                           std::string("  loadBalancerClass: lace-cni.io/public\n") + kDualSpec)));
  Json web, lace;
  ASSERT_TRUE(Eventually([&] {
    web = Service("web", "demo");
    lace = Service("lace", "demo");
    return IngressIps(web).size() == 2 && IngressIps(lace).size() == 2 &&
           !Announcer(web, false).empty() && !Announcer(web, true).empty();
  })) << web.dump(2)
      << "\n"
      << lace.dump(2);
  watcher.join();
  const auto web_ips = IngressIps(web);
  EXPECT_NE(watched.find(web_ips[0]), std::string::npos) << "get -w printed:\n" << watched;

  // Service: status, condition and annotations as the allocator and the agents wrote them.
  for (const auto& i : web.at("status").at("loadBalancer").at("ingress")) {
    EXPECT_EQ(i.value("ipMode", ""), "VIP") << i.dump();
  }
  bool allocated = false;
  for (const auto& c : web.at("status").value("conditions", Json::array())) {
    if (c.value("type", "") == "purelb.io/AddressAllocated") {
      allocated = c.value("status", "") == "True" && c.value("reason", "") == "Allocated" &&
                  !c.value("lastTransitionTime", "").empty();
    }
  }
  EXPECT_TRUE(allocated) << web.at("status").dump();
  EXPECT_EQ(Annotation(web, "purelb.io/allocated-by"), "Pylon");
  EXPECT_EQ(Annotation(web, "purelb.io/allocated-from"), "localdual");
  EXPECT_EQ(Annotation(lace, "purelb.io/allocated-from"), "public");

  // describe shows the addresses and the events of both components.
  EXPECT_TRUE(Eventually([&] {
    const std::string d = Kubectl({"describe", "service", "web", "-n", "demo"});
    return d.find("LoadBalancer Ingress:") != std::string::npos &&
           d.find(web_ips[0]) != std::string::npos &&
           d.find("AddressAssigned") != std::string::npos &&
           d.find("AnnouncingLocal") != std::string::npos;
  })) << Kubectl({"describe", "service", "web", "-n", "demo"});

  // ServiceGroup and LoadBalancerClass status: exact decimal strings (the /126 has 4 addresses,
  // both Services' IPv6 from the class's 5-address range).
  Json sg, cls;
  EXPECT_TRUE(Eventually([&] {
    sg = Get({"get", "servicegroup", "localdual", "-n", "purelb-system"});
    cls = Get({"get", "loadbalancerclass", "public"});
    return sg.contains("status") && cls.contains("status") &&
           sg["status"].value("ipv4", Json::object()).value("inUse", "") == "1" &&
           cls["status"].value("ipv6", Json::object()).value("inUse", "") == "1";
  })) << sg.dump(2)
      << "\n"
      << cls.dump(2);
  EXPECT_EQ(sg["status"]["ipv4"].value("size", ""), "5");
  EXPECT_EQ(sg["status"]["ipv6"].value("size", ""), "4");
  EXPECT_EQ(sg["status"].value("valid", false), true);
  EXPECT_EQ(cls["status"]["ipv4"].value("size", ""), "5");
  ASSERT_TRUE(sg["status"].contains("conditions"));
  EXPECT_EQ(sg["status"]["conditions"][0].value("type", ""), "Valid");
  // Printer columns of the CRDs.
  const std::string sg_table = Kubectl({"get", "servicegroups", "-n", "purelb-system"});
  EXPECT_NE(sg_table.find("localdual"), std::string::npos) << sg_table;
  EXPECT_NE(sg_table.find("AGE"), std::string::npos) << sg_table;

  // L2Advertisements of the lace Service: one per address, naming its node.
  Json adv;
  EXPECT_TRUE(Eventually([&] {
    adv = Get({"get", "l2advertisements.lace-cni.io"});
    return adv.contains("items") && adv["items"].size() == 2;
  })) << adv.dump(2);

  // Node Leases with the annotations the agents publish.
  Json leases = Get({"get", "leases", "-n", "purelb-system"});
  std::set<std::string> with_subnets;
  for (const auto& l : leases.value("items", Json::array())) {
    const std::string name = l.at("metadata").value("name", "");
    if (name.rfind("purelb-node-", 0) != 0) continue;
    if (!Annotation(l, "purelb.io/subnets").empty()) with_subnets.insert(name);
  }
  EXPECT_EQ(with_subnets.size(), 3u) << leases.dump(2);

  // auth can-i, as the ServiceAccounts the components run as.
  auto can = [&](const std::string& sa, const std::vector<std::string>& what) {
    std::vector<std::string> argv = {lab().KubectlBinary(), "--kubeconfig", lab().Kubeconfig(),
                                     "auth", "can-i"};
    argv.insert(argv.end(), what.begin(), what.end());
    argv.push_back("--as=system:serviceaccount:purelb-system:" + sa);
    std::string out;
    (void)lab::RunCommand(argv, &out, "", /*merge_stderr=*/false);
    return out.rfind("yes", 0) == 0;
  };
  EXPECT_TRUE(can("allocator", {"update", "services", "--subresource=status"}));
  EXPECT_FALSE(can("agent", {"update", "services", "--subresource=status"}));
  EXPECT_TRUE(can("agent", {"create", "leases", "-n", "purelb-system"}));
  EXPECT_FALSE(can("agent", {"delete", "services"}));

  // No request of the allocator or an agent was refused as malformed, invalid or forbidden.
  EXPECT_GT(ExpectNoRefusedComponentRequests(), 0);
}

}  // namespace
}  // namespace pylon::e2e
