// The kubelet lab (docs/lab.md "Kubelet lab"): containerd and a real kubelet on every node, the
// controllers and the scheduler in the control plane. The nodes go Ready, a Deployment of the
// lab's echo image (scripts/lab-images.sh) is scheduled on both nodes by the scheduler, started
// by the kubelets and answers over the pod network from every node; `kubectl logs` reaches a
// kubelet, `kubectl delete pod` is followed by a replacement; the `kubernetes` Service answers in
// the nodes; teardown restores the kernel settings the kubelets rewrote.
#include <fstream>

#include "e2e_lab.h"
#include "lab/kubelet.h"
#include "lab/workloads.h"

namespace pylon::e2e {
namespace {

class KubeletLabTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->kubelet = true;
    cfg->nodes = 2;
    // This test is about the kubelets: Pylon's own processes would only take CPU.
    cfg->start_allocator = false;
    cfg->start_agents = false;
    cfg->dev_binary = test_support::DevBinary();
  }

  void TearDown() override {
    if (lab_ && HasFailure()) {
      // What the runtime said, for a failure seen only in CI (the lab's directory stays, but CI's
      // machine does not).
      for (const auto& n : lab().topology().nodes()) {
        for (const std::string log : {"kubelet-", "containerd-"}) {
          std::ifstream f(lab().Path(log + n.name + ".log"));
          std::vector<std::string> lines;
          for (std::string line; std::getline(f, line);) lines.push_back(line);
          std::fprintf(stderr, "---- %s%s (last lines) ----\n", log.c_str(), n.name.c_str());
          for (size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i) {
            std::fprintf(stderr, "%s\n", lines[i].c_str());
          }
        }
      }
    }
    LabTest::TearDown();
  }

  // Waits for `count` ready pods (and no others of the Deployment).
  std::vector<lab::RunningPod> WaitEchoPods(size_t count, Ms timeout) {
    std::vector<lab::RunningPod> pods;
    Eventually(
        [&] {
          size_t total = 0;
          pods = lab::ReadyPods(lab(), "app=echo", "default", &total);
          return pods.size() == count && total == count;
        },
        timeout);
    return pods;
  }

  // Every address of `pod` answers with its name and node, from every node of the lab.
  void ExpectAnswersFromEveryNode(const lab::RunningPod& pod) {
    ASSERT_FALSE(pod.ips.empty()) << pod.name;
    for (const auto& node : lab().topology().nodes()) {
      for (const auto& ip : pod.ips) {
        lab::ProbeResult last;
        const bool ok = Eventually(
            [&] {
              auto r = lab::InNetns(node.netns, [&] { return lab::ProbeOnce(ip, 8080, Ms(1000)); });
              last = r ? *r : lab::ProbeResult{false, "", r.error().message()};
              return last.ok;
            },
            Ms(20000));
        EXPECT_TRUE(ok) << "from " << node.name << " to " << pod.name << " at " << ip << ": "
                        << last.error;
        EXPECT_EQ(last.body, "pod=" + pod.name + " node=" + pod.node) << ip;
      }
    }
  }
};

TEST_F(KubeletLabTest, DeploymentRunsOnKubeletsAnswersLogsAndReplacesDeletedPod) {
  // Up waited for every Node to be Ready; the kubelets report the lab's addresses.
  for (const auto& n : lab().topology().nodes()) {
    Json node = GetJson({"get", "node", n.name});
    std::string addresses;
    for (const auto& a : node["status"].value("addresses", Json::array())) {
      addresses += a.value("address", "") + " ";
    }
    EXPECT_NE(addresses.find(n.ipv4 + " "), std::string::npos) << n.name << ": " << addresses;
    EXPECT_EQ(
        node["status"]["nodeInfo"].value("containerRuntimeVersion", "").rfind("containerd://", 0),
        0u)
        << node.dump();
  }

  // The `kubernetes` Service answers in every node (TLS: a plain HTTP request gets a 400).
  for (const auto& n : lab().topology().nodes()) {
    lab::ProbeResult last;
    EXPECT_TRUE(Eventually(
        [&] {
          auto r = lab::InNetns(n.netns, [] { return lab::ProbeOnce("10.96.0.1", 443, Ms(1000)); });
          last = r ? *r : lab::ProbeResult{};
          return last.status == 400;
        },
        Ms(30000)))
        << n.name << ": " << last.error << " " << last.status;
  }

  auto image = lab::ImportEchoImage(lab(), test_support::DevBinary());
  ASSERT_TRUE(image) << image.error().message();
  Apply(lab::EchoDeploymentYaml("echo", 2));
  auto rollout = lab().Kubectl({"rollout", "status", "deployment/echo", "--timeout=180s"});
  ASSERT_TRUE(rollout) << rollout.error().message() << "\n"
                       << lab().Kubectl({"describe", "pods", "-l", "app=echo"}).value_or("");
  auto pods = WaitEchoPods(2, Ms(30000));
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_NE(pods[0].node, pods[1].node) << "the scheduler spreads the pods over both nodes";
  for (const auto& p : pods) {
    EXPECT_EQ(p.ips.size(), 2u) << p.name << ": one address per family";
    ExpectAnswersFromEveryNode(p);
  }

  // The API server reaches the kubelet for the container's log.
  auto logs = lab().Kubectl({"logs", pods[0].name});
  ASSERT_TRUE(logs) << logs.error().message();
  EXPECT_NE(logs->find("answering on port 8080"), std::string::npos) << *logs;

  // A deleted pod is stopped by its kubelet and replaced.
  const auto t0 = std::chrono::steady_clock::now();
  auto deleted = lab().Kubectl({"delete", "pod", pods[0].name, "--timeout=60s"});
  ASSERT_TRUE(deleted) << deleted.error().message();
  std::printf("kubectl delete pod: %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now() - t0).count()));
  auto after = WaitEchoPods(2, Ms(90000));
  ASSERT_EQ(after.size(), 2u);
  for (const auto& p : after) {
    EXPECT_NE(p.name, pods[0].name);
    if (p.name != pods[1].name) ExpectAnswersFromEveryNode(p);
  }
}

}  // namespace
}  // namespace pylon::e2e
