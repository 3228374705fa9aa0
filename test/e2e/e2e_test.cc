// End to end: a lab per test (pylon apiserver, the allocator, one agent per node in network
// namespaces, a client host) driven with the real kubectl; reachability is checked from the client
// with HTTP (every node answers with its name). Needs root.
#include <signal.h>

#include <algorithm>
#include <set>

#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

// Seed 000's example in the lab's documentation ranges (local addresses on LAN A).
const char* kLocalDual = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: localdual
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 192.0.2.225-192.0.2.229
      subnet: 192.0.2.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:1:0:8000::4/126
      subnet: 2001:db8:1::/64
)";

// Pools on no node's subnet: virtual addresses, on kube-lb0 of every node.
const char* kVirtual = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: virt
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 203.0.113.10-203.0.113.20
      subnet: 203.0.113.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:beef::10-2001:db8:beef::20
      subnet: 2001:db8:beef::/64
)";

// Seed 002's class `public`, adapted: pools inside the lab's LAN B (nodes hold .11-.13 / ::11-13).
const char* kPublicClass = R"(apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: public
spec:
  mode: l2
  ipv4Pools:
  - start: 198.51.100.5
    end: 198.51.100.9
  ipv6Pools:
  - start: 2001:db8:f00d::5
    end: 2001:db8:f00d::9
)";

std::string ServiceYaml(const std::string& name, const std::string& annotations,
                        const std::string& extra_spec, int port = 80) {
  return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name +
         "\n  namespace: default\n  annotations:\n" + annotations +
         "spec:\n  type: LoadBalancer\n  selector:\n    app: " + name + "\n" + extra_spec +
         "  ports:\n  - port: " + std::to_string(port) +
         "\n    protocol: TCP\n    targetPort: 8080\n";
}

const char* kDualSpec = "  ipFamilyPolicy: RequireDualStack\n  ipFamilies:\n  - IPv4\n  - IPv6\n";

bool IsV6(const std::string& ip) { return ip.find(':') != std::string::npos; }

std::string NodeOf(const std::vector<std::string>& nodes) {
  return nodes.size() == 1 ? nodes[0] : "";
}

TEST_F(LabTest, ServiceGroupDualStackReachableOverBothFamilies) {
  Apply(kLocalDual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  EXPECT_NE(IsV6(ips[0]), IsV6(ips[1])) << "one address per family";
  for (const auto& ip : ips) {
    EXPECT_TRUE(EventuallyReachable(ip)) << ip;
    // Exactly one node holds it, the one the annotation names.
    auto svc = Service("web");
    EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip).size() == 1; })) << ip;
    EXPECT_EQ(NodeOf(NodesWith("eth0", ip)), Announcer(Service("web"), IsV6(ip))) << ip;
    EXPECT_EQ(Probe(ip).body, Announcer(Service("web"), IsV6(ip))) << ip;
  }
}

TEST_F(LabTest, LaceClassRequestedAddressesReachable) {
  Apply(kPublicClass);
  Apply(ServiceYaml("web",
                    "    loadbalancer.lace-cni.io/loadBalancerIPs: "
                    "\"198.51.100.7,2001:db8:f00d::7\"\n",
                    std::string("  loadBalancerClass: lace-cni.io/public\n") + kDualSpec));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  std::set<std::string> got(ips.begin(), ips.end());
  EXPECT_EQ(got, (std::set<std::string>{"198.51.100.7", "2001:db8:f00d::7"}));
  for (const auto& ip : ips) {
    EXPECT_TRUE(EventuallyReachable(ip)) << ip;
    EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip).size() == 1; })) << ip;
  }
  // One L2Advertisement per address, naming the node that holds it.
  EXPECT_TRUE(Eventually([&] {
    auto adv = GetJson({"get", "l2advertisements.lace-cni.io"});
    return adv.contains("items") && adv["items"].size() == 2;
  }));
}

TEST_F(LabTest, VirtualAddressesOnEveryNodeKubeLb0) {
  Apply(kVirtual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: virt\n", kDualSpec));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  for (const auto& ip : ips) {
    EXPECT_TRUE(Eventually([&] { return NodesWith("kube-lb0", ip).size() == 3; }))
        << ip << " on " << NodesWith("kube-lb0", ip).size() << " nodes";
    EXPECT_TRUE(NodesWith("eth0", ip).empty()) << ip;
  }
  // No dummy link kind on this kernel: kube-lb0 is the bridge fallback.
  for (const auto& n : lab().topology().nodes()) {
    std::string out;
    auto rc = lab::RunCommand({"ip", "-d", "link", "show", "kube-lb0"}, &out, n.netns);
    ASSERT_TRUE(rc && *rc == 0) << out;
    EXPECT_NE(out.find("\n    bridge "), std::string::npos) << n.name << ": " << out;
  }
}

TEST_F(LabTest, EtpLocalVirtualAddressOnlyOnNodeWithEndpoint) {
  Apply(kVirtual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: virt\n",
                    "  externalTrafficPolicy: Local\n"));
  auto ips = WaitIngress("web", 1);
  ASSERT_EQ(ips.size(), 1u);
  Apply(R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: default
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
endpoints:
- addresses: ["10.244.2.5"]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node2
ports:
- port: 8080
  protocol: TCP
)");
  EXPECT_TRUE(Eventually([&] {
    return NodesWith("kube-lb0", ips[0]) == std::vector<std::string>{"node2"};
  })) << "holders: "
      << NodesWith("kube-lb0", ips[0]).size();
}

TEST_F(LabTest, SharingRequestedAndReleaseOnDelete) {
  Apply(kLocalDual);
  const std::string ann =
      "    purelb.io/service-group: localdual\n    purelb.io/allow-shared-ip: k1\n";
  Apply(ServiceYaml("a", ann, "", 80));
  Apply(ServiceYaml("b", ann, "", 8080));
  auto a = WaitIngress("a", 1);
  auto b = WaitIngress("b", 1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a, b) << "one sharing key, distinct ports: one address";
  // A requested address in the same group is claimed exactly.
  Apply(ServiceYaml(
      "c", "    purelb.io/service-group: localdual\n    purelb.io/addresses: 192.0.2.228\n", ""));
  EXPECT_EQ(WaitIngress("c", 1), std::vector<std::string>{"192.0.2.228"});
  EXPECT_TRUE(EventuallyReachable("192.0.2.228"));
  EXPECT_TRUE(EventuallyReachable(a[0]));

  // Release on delete: the shared address stays while one user remains, then leaves every node.
  ASSERT_TRUE(lab().Kubectl({"delete", "service", "a"}));
  EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", a[0]).size() == 1; }));
  ASSERT_TRUE(lab().Kubectl({"delete", "service", "b", "c"}));
  EXPECT_TRUE(Eventually(
      [&] { return NodesWith("eth0", a[0]).empty() && NodesWith("eth0", "192.0.2.228").empty(); }));
  EXPECT_TRUE(Eventually([&] { return !Probe(a[0], Ms(100)).ok; }));
}

TEST_F(LabTest, AllocatorRestartKeepsAddresses) {
  Apply(kLocalDual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  auto before = WaitIngress("web", 2);
  ASSERT_EQ(before.size(), 2u);
  ASSERT_TRUE(lab().StopAllocator());
  ASSERT_TRUE(lab().StartAllocator());
  // The restarted allocator serves new Services, without handing out the old addresses again.
  Apply(ServiceYaml("web2", "    purelb.io/service-group: localdual\n", kDualSpec));
  auto other = WaitIngress("web2", 2);
  ASSERT_EQ(other.size(), 2u);
  for (const auto& ip : other) {
    EXPECT_EQ(std::count(before.begin(), before.end(), ip), 0) << ip;
  }
  EXPECT_EQ(IngressIps(Service("web")), before);
  for (const auto& ip : before) EXPECT_TRUE(EventuallyReachable(ip)) << ip;
}

TEST_F(LabTest, AgentRestartNoDuplicate) {
  Apply(kLocalDual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", ""));
  auto ips = WaitIngress("web", 1);
  ASSERT_EQ(ips.size(), 1u);
  std::string winner;
  ASSERT_TRUE(Eventually([&] {
    winner = Announcer(Service("web"), false);
    return !winner.empty() && NodesWith("eth0", ips[0]).size() == 1;
  }));
  ASSERT_TRUE(lab().SignalAgent(winner, SIGTERM));
  ASSERT_TRUE(lab().WaitAgentExit(winner, 10000));
  ASSERT_TRUE(lab().StartAgent(winner));
  // Whether it stays or moves, exactly one node holds it and that node is the announcer.
  EXPECT_TRUE(Eventually([&] {
    auto holders = NodesWith("eth0", ips[0]);
    return holders.size() == 1 && holders[0] == Announcer(Service("web"), false);
  }));
  EXPECT_TRUE(EventuallyReachable(ips[0]));
  // And it stays that way over a few renewals (no second holder appears).
  for (int i = 0; i < 20; ++i) {
    EXPECT_LE(NodesWith("eth0", ips[0]).size(), 1u);
    std::this_thread::sleep_for(Ms(100));
  }
}

TEST_F(LabTest, FailoverOnSigtermClientRecovers) {
  Apply(kLocalDual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  const std::string v4 = IsV6(ips[0]) ? ips[1] : ips[0];
  std::string winner;
  ASSERT_TRUE(Eventually([&] {
    winner = Announcer(Service("web"), false);
    return !winner.empty() && Probe(v4).body == winner;
  }));
  ASSERT_TRUE(lab().SignalAgent(winner, SIGTERM));
  std::string now;
  EXPECT_TRUE(Eventually(
      [&] {
        now = Probe(v4).body;
        return !now.empty() && now != winner;
      },
      Ms(10000)))
      << "still answered by " << now;
  EXPECT_TRUE(lab().WaitAgentExit(winner, 10000));
  EXPECT_TRUE(Eventually([&] {
    auto a = Announcer(Service("web"), false);
    return !a.empty() && a != winner;
  }));
  EXPECT_TRUE(NodesWith("eth0", v4).size() == 1);
}

}  // namespace
}  // namespace pylon::e2e
