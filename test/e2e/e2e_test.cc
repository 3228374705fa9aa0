// End to end: a lab per test (etcd + kube-apiserver, the allocator, one agent per node in network
// namespaces, a client host) driven with the real kubectl; reachability is checked from the client
// with HTTP (every node answers with its name). Needs root.
#include <signal.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/json.h"
#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

// Pools on no node's subnet: virtual addresses, on kube-lb0 of every node.
const std::string kVirtual = test_support::ServiceGroupYaml(
    "purelb.io/v1", "virt", std::string("  local:\n") + kVirtualPools);

// Service "web" of ServiceGroup `group`, externalTrafficPolicy Local.
std::string EtpLocalWeb(const std::string& group) {
  return ServiceYaml("web", "    purelb.io/service-group: " + group + "\n",
                     "  externalTrafficPolicy: Local\n");
}

// Seed 002's class `public`, adapted: pools inside the lab's LAN B (nodes hold .11-.13 / ::11-13).
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
    // Exactly one node holds it, the one the annotation names, and that node answers. Polled
    // together: the annotation is written after the address is added, and a 3-node lab may
    // still be settling its membership.
    std::string holder, announcer, answer;
    EXPECT_TRUE(Eventually([&] {
      auto nodes = NodesWith("eth0", ip);
      holder = nodes.size() == 1 ? NodeOf(nodes) : "";
      announcer = Announcer(Service("web"), IsV6(ip));
      answer = Probe(ip).body;
      return !holder.empty() && holder == announcer && answer == holder;
    })) << ip
        << ": held by '" << holder << "', annotation '" << announcer << "', answered by '" << answer
        << "'";
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

// Where an address on no node's subnet goes depends on its ServiceGroup's version and kind: a v1
// `local` group and a v2 `remote` group put it on kube-lb0 of every node; a v2 `local` group never
// announces it anywhere and says so with a Warning event on the Service.
TEST_F(LabTest, AddressOnNoNodeSubnetPerGroupVersion) {
  struct Row {
    std::string group;
    std::string api;
    std::string kind;  // spec.<kind>
    std::string pool;  // in 203.0.113.0/24, on no node's subnet
    size_t on_kube_lb0;
  };
  const Row rows[] = {
      {"nsv1", "v1", "local", "203.0.113.30-203.0.113.31", 3},
      {"nsv2r", "v2", "remote", "203.0.113.40-203.0.113.41", 3},
      {"nsv2l", "v2", "local", "203.0.113.50-203.0.113.51", 0},
  };
  for (const auto& r : rows) {
    Apply("apiVersion: purelb.io/" + r.api + "\nkind: ServiceGroup\nmetadata:\n  name: " + r.group +
          "\n  namespace: purelb-system\nspec:\n  " + r.kind +
          ":\n    v4pools:\n    - pool: " + r.pool + "\n      subnet: 203.0.113.0/24\n");
    Apply(ServiceYaml("web-" + r.group, "    purelb.io/service-group: " + r.group + "\n", ""));
  }
  for (const auto& r : rows) {
    SCOPED_TRACE(r.group);
    const std::string svc = "web-" + r.group;
    auto ips = WaitIngress(svc, 1);
    ASSERT_EQ(ips.size(), 1u);
    if (r.on_kube_lb0 > 0) {
      EXPECT_TRUE(Eventually([&] { return NodesWith("kube-lb0", ips[0]).size() == r.on_kube_lb0; }))
          << ips[0] << " on " << NodesWith("kube-lb0", ips[0]).size() << " nodes";
    } else {
      EXPECT_TRUE(Eventually([&] {
        Json ev = GetJson({"get", "events", "-n", "default", "--field-selector",
                           "involvedObject.name=" + svc + ",reason=NoNodeOnSubnet"});
        const Json* items = Find(ev, {"items"});
        return items != nullptr && items->is_array() && !items->empty();
      })) << "no NoNodeOnSubnet event for "
          << svc;
      EXPECT_TRUE(NodesWith("kube-lb0", ips[0]).empty()) << ips[0];
    }
    EXPECT_TRUE(NodesWith("eth0", ips[0]).empty()) << ips[0];
  }
}

TEST_F(LabTest, EtpLocalVirtualAddressOnlyOnNodeWithEndpoint) {
  Apply(kVirtual);
  Apply(EtpLocalWeb("virt"));
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

// purelb.io/node-affinity: service-endpoints (PureLB 0.17): a local address is announced by a
// node hosting one of the Service's endpoints, and follows the endpoints when they move.
TEST_F(LabTest, NodeAffinityServiceEndpointsFollowsTheEndpoints) {
  Apply(kLocalDual);
  Apply(ServiceYaml("web",
                    "    purelb.io/service-group: localdual\n"
                    "    purelb.io/node-affinity: service-endpoints\n",
                    ""));
  auto ips = WaitIngress("web", 1);
  ASSERT_EQ(ips.size(), 1u);
  auto slice_on = [](const std::string& node) {
    return "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-abc\n"
           "  namespace: default\n  labels:\n    kubernetes.io/service-name: web\n"
           "addressType: IPv4\nendpoints:\n- addresses: [\"10.244.9.5\"]\n"
           "  conditions: {ready: true, serving: true, terminating: false}\n  nodeName: " +
           node + "\nports:\n- port: 8080\n  protocol: TCP\n";
  };
  for (const std::string node : {"node3", "node1", "node2"}) {
    SCOPED_TRACE(node);
    Apply(slice_on(node));
    EXPECT_TRUE(Eventually([&] {
      return NodesWith("eth0", ips[0]) == std::vector<std::string>{node} &&
             Announcer(Service("web"), false) == node;
    })) << "holders: "
        << NodesWith("eth0", ips[0]).size() << ", announcing " << Announcer(Service("web"), false);
  }
}

// The seed's default (--etp-local=reset): externalTrafficPolicy Local on a local address is reset
// to Cluster by the winner, with a Normal event, and the address is announced.
TEST_F(LabTest, EtpLocalOnLocalAddressIsResetToClusterWithAnEvent) {
  Apply(kLocalDual);
  Apply(EtpLocalWeb("localdual"));
  auto ips = WaitIngress("web", 1);
  ASSERT_EQ(ips.size(), 1u);
  EXPECT_TRUE(Eventually([&] {
    return GetJson({"get", "service", "web"})["spec"].value("externalTrafficPolicy", "") ==
           "Cluster";
  }));
  std::string events;
  EXPECT_TRUE(Eventually([&] {
    auto out = lab().Kubectl({"get", "events", "--field-selector",
                              "involvedObject.name=web,reason=ExternalTrafficPolicy"});
    events = out.value_or("");
    return events.find("Local -> Cluster") != std::string::npos;
  })) << events;
  EXPECT_TRUE(EventuallyReachable(ips[0]));
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
  EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", v4).size() == 1; }));
}

// The agents give their addresses a short valid lifetime (3 s, the agent's minimum; the lab's
// lease is 3 s too, so this only makes the intent explicit).
class AddressLifetimeTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override { cfg->agent_args = {"--address-lifetime", "3s"}; }
};

// A SIGKILLed agent cannot withdraw: its node's kernel keeps the address, and answers ARP / NS
// for it, until the valid lifetime the agent gave it runs out. After that the new winner is the
// only one answering (asked from the client; answers told apart by the nodes' eth0 MACs).
TEST_F(AddressLifetimeTest, SigkilledWinnerStopsAnsweringArpAndNsAfterLifetime) {
  Apply(kLocalDual);
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  // Settled: each address on exactly its announcer, which alone answers for it on the wire.
  std::map<std::string, std::string> holder;
  for (const auto& ip : ips) {
    ASSERT_TRUE(Eventually([&] {
      auto nodes = NodesWith("eth0", ip);
      if (nodes.size() != 1 || nodes[0] != Announcer(Service("web"), IsV6(ip))) return false;
      holder[ip] = nodes[0];
      return OnlyAnswerer(ip, NodeMac(nodes[0]), 2);
    })) << ip;
  }
  const std::string v4 = IsV6(ips[0]) ? ips[1] : ips[0];
  const std::string victim = holder[v4];
  const auto victim_mac = NodeMac(victim);
  ASSERT_TRUE(lab().SignalAgent(victim, SIGKILL));
  for (const auto& ip : ips) {
    if (holder[ip] != victim) continue;
    // Lifetime 3 s; the deadline leaves room for the kernel's lifetime worker and a loaded CI.
    std::vector<std::string> now;
    EXPECT_TRUE(Eventually(
        [&] {
          now = NodesWith("eth0", ip);
          return now.size() == 1 && now[0] != victim && OnlyAnswerer(ip, NodeMac(now[0]));
        },
        Ms(12000)))
        << ip << ": holders " << ::testing::PrintToString(now) << ", answered by "
        << Macs(Answerers(ip)) << " (dead node " << victim << " " << victim_mac.ToString() << ")";
  }
  // An address the killed node did not hold is still answered by its holder alone.
  for (const auto& ip : ips) {
    if (holder[ip] != victim) {
      EXPECT_TRUE(OnlyAnswerer(ip, NodeMac(holder[ip]))) << ip;
    }
  }
  EXPECT_TRUE(Eventually([&] {
    auto a = Announcer(Service("web"), false);
    return !a.empty() && a != victim;
  }));
}

}  // namespace
}  // namespace pylon::e2e
