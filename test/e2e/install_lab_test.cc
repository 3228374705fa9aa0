// Pylon installed into the kubelet lab as a user installs it (docs/lab.md "Installing Pylon as a
// user does", LabConfig::install): its images built from the Dockerfile by scripts/image.sh and
// imported into every node's containerd, then `kubectl apply -k` of deploy/ with the BGP component,
// or `helm install` of the chart. The allocator and the agents run as pods that real kubelets start
// under the manifests' ServiceAccounts, probes, resources and securityContext; workloads are echo
// Deployments behind kube-proxy.
#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_lab.h"
#include "lab/address_watch.h"
#include "lab/workloads.h"

namespace pylon::e2e {
namespace {

using namespace std::chrono_literals;

class InstallLabTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->nodes = 2;
    cfg->dev_binary = test_support::DevBinary();
    cfg->helm_binary = PYLON_HELM_BIN;
  }

  void TearDown() override {
    if (lab_ && HasFailure()) {
      std::fprintf(stderr, "---- pods ----\n%s\n",
                   lab().Kubectl({"get", "pods", "-A", "-o", "wide"}).value_or("").c_str());
      for (const auto& p : AgentPods()) {
        auto logs = lab().Kubectl({"logs", "-n", "purelb-system", p.name, "-c", "agent"});
        std::string text = logs.value_or(logs ? "" : logs.error().message());
        if (text.size() > 6000) text = text.substr(text.size() - 6000);
        std::fprintf(stderr, "---- agent %s on %s ----\n%s\n", p.name.c_str(), p.node.c_str(),
                     text.c_str());
      }
    }
    LabTest::TearDown();
  }

  std::vector<lab::RunningPod> AgentPods() {
    return lab::ReadyPods(lab(), "app.kubernetes.io/component=agent", "purelb-system");
  }
  std::vector<lab::RunningPod> AllocatorPods() {
    return lab::ReadyPods(lab(), "app.kubernetes.io/component=allocator", "purelb-system");
  }
  // Waits until every node runs a Ready agent pod, and no other agent pod exists.
  std::vector<lab::RunningPod> WaitAgentPods(Ms timeout = Ms(120000)) {
    std::vector<lab::RunningPod> pods;
    Eventually(
        [&] {
          size_t total = 0;
          pods =
              lab::ReadyPods(lab(), "app.kubernetes.io/component=agent", "purelb-system", &total);
          return pods.size() == lab().topology().nodes().size() && total == pods.size();
        },
        timeout);
    return pods;
  }

  // The echo Deployment "web" and, from seed 000, the ServiceGroup localdual and a dual-stack
  // Service "web" of it: both addresses reached by the client, answered by web's pods, announced.
  std::vector<std::string> SeedFlow() {
    auto image = lab::ImportEchoImage(lab(), test_support::DevBinary());
    EXPECT_TRUE(image) << image.error().message();
    Apply(lab::EchoDeploymentYaml("web", 2));
    auto rollout = lab().Kubectl({"rollout", "status", "deployment/web", "--timeout=180s"});
    EXPECT_TRUE(rollout) << rollout.error().message();
    Apply(kLocalDual);
    Apply(lab::EchoServiceYaml("web", "localdual", "web"));
    auto ips = WaitIngress("web", 2, Ms(30000));
    EXPECT_EQ(ips.size(), 2u) << Service("web").dump(2);
    for (const auto& ip : ips) ExpectWebAnswers(ip);
    EXPECT_TRUE(Eventually(
        [&] {
          auto svc = Service("web");
          return !Announcer(svc, false).empty() && !Announcer(svc, true).empty();
        },
        Ms(30000)))
        << Service("web").dump(2);
    return ips;
  }

  // `ip` answers the client, from a pod of web.
  void ExpectWebAnswers(const std::string& ip) {
    lab::ProbeResult last;
    EXPECT_TRUE(Eventually(
        [&] {
          last = Probe(ip, Ms(1000));
          return last.ok && last.body.rfind("pod=web-", 0) == 0;
        },
        Ms(30000)))
        << ip << ": " << last.error << " " << last.body;
  }

  // How many warnings each agent pod logged in the last `window`.
  std::map<std::string, int> AgentWarnings(std::chrono::seconds window) {
    std::map<std::string, int> out;
    for (const auto& p : AgentPods()) {
      auto logs = lab().Kubectl({"logs", "-n", "purelb-system", p.name, "-c", "agent",
                                 "--since=" + std::to_string(window.count()) + "s"});
      EXPECT_TRUE(logs) << logs.error().message();
      std::istringstream in(logs.value_or(""));
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        if (line.find(" level=warn ") != std::string::npos) ++n;
      }
      out[p.name + " (" + p.node + ")"] = n;
    }
    return out;
  }

  std::string OtherNode(const std::string& node) {
    for (const auto& n : lab().topology().nodes()) {
      if (n.name != node) return n.name;
    }
    return "";
  }
};

class KustomizeInstallTest : public InstallLabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    InstallLabTest::Configure(cfg);
    cfg->install = "kustomize";
    cfg->bgp = true;
  }
  // Every router session (dynamic "node<i>" / "nodesix<i>") Established, one per node and family.
  bool AllSessionsUp() {
    auto out = lab().RouterBird("show protocols");
    if (!out) return false;
    int up = 0;
    std::istringstream in(*out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("node", 0) == 0 && line.find("Established") != std::string::npos) ++up;
    }
    return up == 2 * static_cast<int>(lab().topology().nodes().size());
  }
  lab::ProbeResult WanProbe(const std::string& ip) {
    auto r =
        lab::InNetns(lab().topology().WanNetns(), [&] { return lab::ProbeOnce(ip, 80, Ms(1000)); });
    if (!r) return lab::ProbeResult{false, "", r.error().message()};
    return *r;
  }
};

// `kubectl apply -k` (deploy/ with components/bgp, BIRD as the agents' sidecar): the pods come
// Ready from the images; seed 000's dual-stack flow; a routed address through the BIRD sidecars
// with strict ARP holding on the wire; a quiet steady state; a frozen announcer failed over; a
// `kubectl rollout restart daemonset/agent` that completes with every pod Ready and moves
// nothing; and an announcer excluded from load balancing, drained without a flow reset.
TEST_F(KustomizeInstallTest, SeedFlowBgpStrictArpFailoverAndRolloutRestart) {
  auto agents = WaitAgentPods();
  ASSERT_EQ(agents.size(), 2u) << lab().Kubectl({"get", "pods", "-A"}).value_or("");
  for (const auto& p : agents) {
    // prepare-node, the agent and the BIRD sidecar, from the images the Dockerfile built.
    EXPECT_EQ(std::set<std::string>(p.images.begin(), p.images.end()),
              (std::set<std::string>{"pylon:" PYLON_VERSION, "pylon-bird:" PYLON_VERSION}))
        << p.name;
  }
  EXPECT_EQ(AllocatorPods().size(), 2u);

  const auto local = SeedFlow();
  ASSERT_EQ(local.size(), 2u);

  // BGP through the BIRD sidecars: the routed addresses reach web's pods from behind the router.
  ASSERT_TRUE(Eventually([&] { return AllSessionsUp(); }, Ms(60000)))
      << lab().RouterBird("show protocols").value_or("");
  Apply(lab::kRoutedServiceGroup);
  Apply(lab::EchoServiceYaml("routed", "routed", "web"));
  const auto virtuals = WaitIngress("routed", 2, Ms(30000));
  ASSERT_EQ(virtuals.size(), 2u) << Service("routed").dump(2);
  for (const auto& ip : virtuals) {
    lab::ProbeResult last;
    EXPECT_TRUE(Eventually(
        [&] {
          last = WanProbe(ip);
          return last.ok && last.body.rfind("pod=web-", 0) == 0;
        },
        Ms(60000)))
        << ip << ": " << last.error << " " << last.body;
  }
  // Strict ARP (the init container prepare-node): every node holds the virtual addresses on
  // kube-lb0, and none answers the client's ARP or NS for them on its eth0.
  for (const auto& ip : virtuals) {
    EXPECT_EQ(NodesWith("kube-lb0", ip).size(), 2u) << ip;
    for (int round = 0; round < 3; ++round) {
      EXPECT_TRUE(Answerers(ip, Ms(200)).empty()) << ip << " answered by " << Macs(Answerers(ip));
    }
  }
  EXPECT_GT(ExpectNoRefusedComponentRequests(), 0);

  // Steady state: no agent logs more than 10 warnings in a minute.
  std::this_thread::sleep_for(60s);
  for (const auto& [pod, warnings] : AgentWarnings(60s)) {
    std::printf("FIGURE install steady-state warnings per minute %s: %d\n", pod.c_str(), warnings);
    EXPECT_LE(warnings, 10) << pod;
  }

  // A failover: the IPv4 announcer of web frozen (its switch port, kubelet, containerd and every
  // container stopped); the other node takes the address and the client reaches web again.
  const std::string v4 = IsV6(local[0]) ? local[1] : local[0];
  const std::string announcer = Announcer(Service("web"), false);
  const std::string other = OtherNode(announcer);
  ASSERT_FALSE(other.empty()) << announcer;
  // Installed as users do, with no key file: heartbeats on by default, so the other node answers
  // ARP for the address well within a second (loosely: 2 s, on a busy machine; the figure is
  // `pylon-dev lab failover`'s, in docs/failover.md). Timed from before the freeze starts.
  const auto frozen_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(lab().FreezeNode(announcer, true));
  double handover_ms = -1;
  EXPECT_TRUE(Eventually(
      [&] {
        if (Answerers(v4) != std::vector<packet::MacAddress>{NodeMac(other)}) return false;
        handover_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frozen_at)
                .count();
        return true;
      },
      Ms(30000)));
  std::printf("frozen announcer -> the other node answers ARP: %.0f ms\n", handover_ms);
  EXPECT_GE(handover_ms, 0);
  EXPECT_LT(handover_ms, 2000) << "sub-second failover is the default install's";
  EXPECT_TRUE(Eventually([&] { return Announcer(Service("web"), false) == other; }, Ms(30000)))
      << Service("web").dump(2);
  EXPECT_TRUE(Eventually([&] { return OnlyAnswerer(v4, NodeMac(other), 3); }, Ms(30000)));
  ExpectWebAnswers(v4);
  ASSERT_TRUE(lab().FreezeNode(announcer, false));
  ASSERT_EQ(WaitAgentPods().size(), 2u);

  // `kubectl rollout restart daemonset/agent`: every agent pod replaced, each Ready, the
  // addresses still answering. What the client saw of the IPv4 address meanwhile: 20 long-lived
  // flows, the 10 ms prober, who answered ARP.
  std::set<std::string> before;
  for (const auto& p : AgentPods()) before.insert(p.name);
  auto watch = lab::AddressWatch::Start(lab(), v4, 80, lab::kEchoFlowPort, 20);
  ASSERT_TRUE(watch) << watch.error().message();
  auto restart = lab().Kubectl({"rollout", "restart", "daemonset/agent", "-n", "purelb-system"});
  ASSERT_TRUE(restart) << restart.error().message();
  ASSERT_TRUE(lab().WaitRollout("daemonset/agent", 240s));
  const auto after = WaitAgentPods();
  ASSERT_EQ(after.size(), 2u);
  for (const auto& p : after) EXPECT_EQ(before.count(p.name), 0u) << p.name << " not replaced";
  std::this_thread::sleep_for(2s);  // the last agent settled
  const auto seen = (*watch)->Stop();
  std::printf(
      "FIGURE install rollout-restart %s: moved %d, two answering %d of %d rounds, requests "
      "failed %d of %d, flows broken %d of %d (stalled %d, longest echo wait %.0f ms)\n",
      v4.c_str(), seen.moves, seen.double_answers, seen.rounds, seen.failed, seen.requests,
      seen.streams.broken, seen.streams.opened, seen.streams.stalled, seen.streams.longest_wait_ms);
  // An agent restart moves nothing (docs/failover.md "Lifecycle"): the restarted agents adopt
  // what their predecessors left on the NIC; no established flow is reset.
  EXPECT_EQ(seen.moves, 0);
  EXPECT_EQ(seen.double_answers, 0);
  EXPECT_EQ(seen.streams.broken, 0);
  for (const auto& ip : local) ExpectWebAnswers(ip);

  // A planned move (docs/failover.md "The drain of a planned move"): the IPv4 announcer labelled
  // exclude-from-external-load-balancers. The address moves once, with no request failed and no
  // established flow reset: the new holder sends the packets of the flows it does not know on to
  // the old one, whose kube-proxy still tracks them.
  const std::string holder = Announcer(Service("web"), false);
  const std::string successor = OtherNode(holder);
  ASSERT_FALSE(successor.empty()) << holder;
  auto drain_watch = lab::AddressWatch::Start(lab(), v4, 80, lab::kEchoFlowPort, 20);
  ASSERT_TRUE(drain_watch) << drain_watch.error().message();
  std::this_thread::sleep_for(1s);
  const std::string exclude = "node.kubernetes.io/exclude-from-external-load-balancers";
  ASSERT_TRUE(lab().Kubectl({"label", "node", holder, exclude + "=true"}));
  EXPECT_TRUE(Eventually([&] { return Announcer(Service("web"), false) == successor; }, Ms(30000)))
      << Service("web").dump(2);
  EXPECT_TRUE(Eventually([&] { return OnlyAnswerer(v4, NodeMac(successor), 3); }, Ms(30000)));
  std::this_thread::sleep_for(3s);  // the flows keep talking through the new holder
  const auto drained = (*drain_watch)->Stop();
  std::printf(
      "FIGURE install exclude-label %s: moved %d, two answering %d of %d rounds, requests "
      "failed %d of %d, flows broken %d of %d (stalled %d, longest echo wait %.0f ms)\n",
      v4.c_str(), drained.moves, drained.double_answers, drained.rounds, drained.failed,
      drained.requests, drained.streams.broken, drained.streams.opened, drained.streams.stalled,
      drained.streams.longest_wait_ms);
  // Both nodes may answer ARP for a moment (the new holder adds the address while the old one
  // withdraws it, each on seeing the label): both carry its traffic then, so it is not counted.
  EXPECT_EQ(drained.moves, 1);
  EXPECT_EQ(drained.failed, 0);
  EXPECT_EQ(drained.streams.opened, 20);
  EXPECT_EQ(drained.streams.broken, 0);
  (void)lab().Kubectl({"label", "node", holder, exclude + "-"});
}

class HelmInstallTest : public InstallLabTest {
 protected:
  void SetUp() override {
    if (std::string(PYLON_HELM_BIN).empty()) GTEST_SKIP() << "no helm configured (scripts/helm.sh)";
    InstallLabTest::SetUp();
  }
  void Configure(lab::LabConfig* cfg) override {
    InstallLabTest::Configure(cfg);
    cfg->install = "helm";
  }
};

// `helm install` from the chart with the Dockerfile's image; seed 000's flow; `helm upgrade` to an
// image with a new tag built locally rolls every pod onto it and keeps the addresses; `helm
// uninstall` removes the workloads.
TEST_F(HelmInstallTest, InstallUpgradeToANewImageAndUninstall) {
  auto status = lab().Helm({"status", "pylon", "-n", "purelb-system"});
  ASSERT_TRUE(status) << status.error().message();
  EXPECT_NE(status->find("STATUS: deployed"), std::string::npos) << *status;
  ASSERT_EQ(WaitAgentPods().size(), 2u);
  const auto ips = SeedFlow();
  ASSERT_EQ(ips.size(), 2u);

  const std::string tag = PYLON_VERSION "-upgrade";
  ASSERT_TRUE(lab().BuildAndImportPylonImages({"pylon"}, tag));
  auto up = lab().Helm({"upgrade", "pylon", lab().config().helm_chart, "-n", "purelb-system",
                        "--reuse-values", "--set", "image.tag=" + tag});
  ASSERT_TRUE(up) << up.error().message();
  ASSERT_TRUE(lab().WaitRollout("deployment/allocator", 240s));
  ASSERT_TRUE(lab().WaitRollout("daemonset/agent", 240s));
  const std::string image = "pylon:" + tag;
  std::vector<lab::RunningPod> agents;
  EXPECT_TRUE(Eventually(
      [&] {
        agents = WaitAgentPods(Ms(1000));
        if (agents.size() != 2) return false;
        for (const auto& p : agents) {
          if (p.images != std::vector<std::string>{image, image}) return false;  // init + agent
        }
        return true;
      },
      Ms(120000)));
  for (const auto& p : AllocatorPods()) {
    EXPECT_EQ(p.images, std::vector<std::string>{image}) << p.name;
  }
  EXPECT_EQ(IngressIps(Service("web")), ips) << "an upgrade keeps every address";
  for (const auto& ip : ips) ExpectWebAnswers(ip);
  EXPECT_GT(ExpectNoRefusedComponentRequests(), 0);

  auto un = lab().Helm({"uninstall", "pylon", "-n", "purelb-system", "--wait"});
  ASSERT_TRUE(un) << un.error().message();
  EXPECT_TRUE(Eventually(
      [&] {
        size_t total = 1;
        lab::ReadyPods(lab(), "app.kubernetes.io/name=pylon", "purelb-system", &total);
        return total == 0;
      },
      Ms(120000)))
      << lab().Kubectl({"get", "pods", "-n", "purelb-system"}).value_or("");
  EXPECT_FALSE(lab().Kubectl({"get", "daemonset", "agent", "-n", "purelb-system"}));
}

}  // namespace
}  // namespace pylon::e2e
