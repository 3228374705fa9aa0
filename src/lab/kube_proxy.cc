#include "lab/kube_proxy.h"

#include <signal.h>

#include <thread>

#include "lab/files.h"
#include "lab/lab.h"
#include "lab/netns.h"
#include "lab/responder.h"

namespace pylon::lab {

std::vector<std::string> KubeProxyArgv(const std::string& binary, const std::string& kubeconfig,
                                       const std::string& node, const std::string& mode) {
  return {binary, "--kubeconfig=" + kubeconfig, "--hostname-override=" + node,
          "--proxy-mode=" + mode, std::string("--cluster-cidr=") + kClusterCidrs,
          "--healthz-bind-address=0.0.0.0:" + std::to_string(kKubeProxyHealthzPort),
          "--metrics-bind-address=127.0.0.1:10249",
          // Node IPs only (the Node objects' InternalIPs): NodePorts and the health check
          // ports of externalTrafficPolicy Local Services listen there.
          "--nodeport-addresses=primary", "--conntrack-max-per-core=0", "--oom-score-adj=0",
          "--v=2"};
}

// --- Lab's kube-proxy members (lab.h) ---

Status Lab::StartKubeProxy() {
  const std::string bin = control_plane_.Binary("kube-proxy");
  if (access(bin.c_str(), X_OK) != 0) {
    return Fail(ErrorCode::kNotFound, "no kube-proxy in \"" + config_.k8s_bin_dir +
                                          "\" (scripts/k8s-components.sh builds it)");
  }
  if (config_.proxy_mode != "nftables" && config_.proxy_mode != "iptables") {
    return Fail(ErrorCode::kInvalidArgument,
                "proxy mode \"" + config_.proxy_mode + "\": nftables or iptables");
  }
  if (auto s = Apply(kKubeProxyRbac); !s) return s;
  if (auto s = WriteNodeKubeconfig("kubeconfig-kube-proxy", "kube-system", "kube-proxy"); !s) {
    return s;
  }
  if (auto s = SetUpPodRouting(topology_); !s) return s;
  pod_routing_ = true;
  for (const auto& n : topology_.nodes()) {
    if (auto s = SpawnKubeProxy(n); !s) return s;
  }
  // Ready when /healthz answers 200 on every node: kube-proxy has synced its rules once.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (const auto& n : topology_.nodes()) {
    if (auto s = WaitKubeProxyHealthy(n, deadline); !s) return s;
  }
  return Ok();
}

Status Lab::SpawnKubeProxy(const LabNode& n) {
  SpawnOptions o;
  o.netns = n.netns;
  o.argv = KubeProxyArgv(control_plane_.Binary("kube-proxy"), Path("kubeconfig-kube-proxy"), n.name,
                         config_.proxy_mode);
  return Spawn("kube-proxy-" + n.name, o);
}

Status Lab::WaitKubeProxyHealthy(const LabNode& n, std::chrono::steady_clock::time_point deadline) {
  const std::string key = "kube-proxy-" + n.name;
  std::string last;
  while (true) {
    auto it = procs_.find(key);
    if (it == procs_.end() || !it->second.running()) {
      return Fail(ErrorCode::kUnavailable, "kube-proxy on " + n.name + " exited; " +
                                               Path(key + ".log") + ":" +
                                               LogTail(Path(key + ".log")));
    }
    auto r = InNetns(n.netns, [] {
      return ProbeOnce("127.0.0.1", kKubeProxyHealthzPort, std::chrono::milliseconds(1000),
                       "/healthz");
    });
    if (r && r->ok) return Ok();
    last = r ? (r->error + " " + r->body) : r.error().message();
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(ErrorCode::kUnavailable,
                  "kube-proxy on " + n.name + " not healthy after 60 s (/healthz: " + last + "); " +
                      Path(key + ".log") + ":" + LogTail(Path(key + ".log")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Status Lab::SignalKubeProxy(const std::string& node, int sig) {
  auto it = procs_.find("kube-proxy-" + node);
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no kube-proxy running on " + node);
  return it->second.Signal(sig);
}

Status Lab::RestartKubeProxy(const std::string& node) {
  const LabNode* n = FindNode(node);
  if (!n) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  if (!kube_proxy_running_) {
    return Fail(ErrorCode::kUnavailable, "kube-proxy does not run in lab " + config_.name);
  }
  if (auto it = procs_.find("kube-proxy-" + node); it != procs_.end()) {
    it->second.Stop(std::chrono::milliseconds(2000));
    procs_.erase(it);
  }
  if (auto s = SpawnKubeProxy(*n); !s) return s;
  if (auto s = WriteState(); !s) return s;
  return WaitKubeProxyHealthy(*n, std::chrono::steady_clock::now() + std::chrono::seconds(60));
}

void Lab::StopKubeProxy() {
  const std::string bin = control_plane_.Binary("kube-proxy");
  for (const auto& n : topology_.nodes()) {
    auto it = procs_.find("kube-proxy-" + n.name);
    if (it != procs_.end()) {
      it->second.Stop(std::chrono::milliseconds(2000));
      procs_.erase(it);
    }
    // Rules a kube-proxy left (it does not remove them when it exits) would reject traffic to
    // Services without endpoints instead of letting the node's responder answer.
    if (access(bin.c_str(), X_OK) == 0) (void)RunCommand({bin, "--cleanup"}, nullptr, n.netns);
  }
  (void)WriteState();
}

}  // namespace pylon::lab
