// The soak's lab: set-up (the lab, the fault proxy on the components' API path, the second
// allocator replica), tear-down, and the supervision a Deployment and a DaemonSet would give.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "common/log.h"
#include "lab/command.h"
#include "lab/netns.h"
#include "soak/runner.h"

namespace pylon::soak {

namespace {

// Whether `pid` runs (not gone, not a zombie).
bool Alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

}  // namespace

Status Soak::SetUp() {
  lab::LabConfig cfg;
  cfg.name = o_.name;
  cfg.nodes = o_.nodes;
  cfg.binary = o_.pylon;
  cfg.k8s_bin_dir = o_.k8s_bin_dir;
  cfg.dev_binary = lab::SelfExe();
  cfg.kube_proxy = true;
  cfg.start_allocator = false;
  cfg.start_agents = false;
  // Leader changes within seconds (both replicas; the default lease is 15 s).
  cfg.allocator_args = AllocatorTiming();
  cfg.allocator_args.insert(cfg.allocator_args.end(), {"--identity", "soak-replica-1"});
  // The product's default node lease (docs/agent.md), and failure detection a little slower than
  // the default 100 ms x 3: the soak runs for hours on shared machines whose load reaches 15-30
  // per core pair, where a starved agent misses 300 ms of heartbeats without having failed.
  cfg.lease_duration = "10s";
  cfg.renew_deadline = "7s";
  cfg.retry_period = "2s";
  cfg.agent_args = {"--heartbeat-interval",        "250ms", "--heartbeat-miss-count",     "4",
                    "--kube-proxy-check-interval", "2s",    "--kube-proxy-check-timeout", "2s"};
  lab_ = std::make_unique<lab::Lab>(cfg);
  if (auto s = lab_->Up(); !s) return s;
  if (!lab_->kube_proxy_running()) {
    return Fail(ErrorCode::kUnavailable,
                "kube-proxy does not run in the lab: " + lab_->kube_proxy_problem());
  }
  decisions_.open(lab_->Path("soak-decisions.log"), std::ios::trunc);
  quiet_log_.open(lab_->Path("soak-quiet.log"), std::ios::trunc);
  for (const auto& n : lab_->topology().nodes()) {
    auto mac = lab::InterfaceMacIn(n.netns, "eth0");
    if (!mac) return Fail(mac.error());
    node_mac_[n.name] = *mac;
    mac_node_[mac->ToString()] = n.name;
  }
  if (auto s = StartProxyPath(); !s) return s;
  for (int c = 0; c < kConfigCount; ++c) {
    if (auto s = lab_->Apply(ConfigYaml(kConfigs[c], configs_[c], true)); !s) return s;
  }
  const auto& nodes = lab_->topology().nodes();
  for (int i = 0; i < kServices; ++i) {
    const auto& node = nodes[static_cast<size_t>(i) % nodes.size()].name;
    if (auto s = lab_->AddPod(node, "p" + std::to_string(i), ServiceName(i), 8080); !s) return s;
  }
  if (auto s = lab_->StartAllocator(); !s) return s;
  if (auto s = StartReplica2(); !s) return s;
  for (const auto& n : nodes) {
    if (auto s = lab_->StartAgent(n.name); !s) return s;
  }
  return Ok();
}

// The components' API traffic through the fault proxy: the allocator's kubeconfig names the
// proxy; in every node a socat on 127.0.0.1:kNodeProxyPort forwards to a unix socket in the lab
// directory, which a socat on the host forwards to the proxy (as the lab does for the API
// server itself, src/lab/lab.h). kube-proxy and the soak's own kubectl go to the API server
// directly.
Status Soak::StartProxyPath() {
  lab::ControlPlane& cp = lab_->control_plane();
  std::ifstream ca(cp.CaFile());
  std::stringstream pem;
  pem << ca.rdbuf();
  faultproxy::ProxyOptions po;
  po.upstream = cp.Server();
  po.upstream_ca_pem = pem.str();
  po.etcd = cp.EtcdEndpoint();
  auto proxy = faultproxy::FaultProxy::Start(po);
  if (!proxy) return Fail(proxy.error().Wrap("fault proxy"));
  proxy_ = std::move(*proxy);
  const std::string sock = lab_->Path("soak-proxy.sock");
  ::unlink(sock.c_str());
  lab::SpawnOptions host;
  host.argv = {"socat", "UNIX-LISTEN:" + sock + ",fork,unlink-early,mode=600",
               "TCP:127.0.0.1:" + std::to_string(proxy_->port())};
  host.log_path = lab_->Path("soak-proxy-forward.log");
  auto hp = lab::Process::Spawn(host);
  if (!hp) return Fail(hp.error());
  forwarders_.push_back(std::move(*hp));
  for (const auto& n : lab_->topology().nodes()) {
    lab::SpawnOptions o;
    o.netns = n.netns;
    o.argv = {"socat",
              "TCP-LISTEN:" + std::to_string(kNodeProxyPort) + ",bind=127.0.0.1,fork,reuseaddr",
              "UNIX-CONNECT:" + sock};
    o.log_path = lab_->Path("soak-proxy-forward-" + n.name + ".log");
    auto p = lab::Process::Spawn(o);
    if (!p) return Fail(p.error());
    forwarders_.push_back(std::move(*p));
  }
  for (int i = 0; i < 250 && access(sock.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(Ms(20));
  }
  if (auto s = cp.WriteServiceAccountKubeconfig(lab_->Path("kubeconfig-allocator"), "purelb-system",
                                                "allocator", proxy_->Url());
      !s) {
    return s;
  }
  return cp.WriteServiceAccountKubeconfig(lab_->Path("kubeconfig-agent"), "purelb-system", "agent",
                                          "http://127.0.0.1:" + std::to_string(kNodeProxyPort));
}

Status Soak::StartReplica2() {
  lab::SpawnOptions o;
  o.argv = {
      lab_->config().binary, "allocator",     "--kubeconfig",   lab_->Path("kubeconfig-allocator"),
      "--namespace",         "purelb-system", "--metrics-addr", "127.0.0.1:0",
      "--identity",          "soak-replica-2"};
  const auto timing = AllocatorTiming();
  o.argv.insert(o.argv.end(), timing.begin(), timing.end());
  o.log_path = lab_->Path("allocator-2.log");
  auto p = lab::Process::Spawn(o);
  if (!p) return Fail(p.error());
  replica2_ = std::move(*p);
  return Ok();
}

void Soak::TearDown() {
  replica2_.Stop(Ms(2000));
  if (apiserver_hung_ && lab_) (void)lab_->SignalApiserver(SIGCONT);
  for (auto& p : forwarders_) p.Stop(Ms(1000));
  forwarders_.clear();
  if (proxy_) proxy_->Stop();
  proxy_.reset();
  if (lab_) (void)lab_->Down();
  lab_.reset();
}

void Soak::Supervise() {
  const auto pids = lab_->Pids();
  auto gone = [&](const std::string& key) {
    auto it = pids.find(key);
    return it == pids.end() || !Alive(it->second);
  };
  if (!allocator_down_[0] && gone("allocator")) {
    ++restarts_["allocator exited, restarted (its Deployment)"];
    (void)lab_->StopAllocator();
    if (auto s = lab_->StartAllocator(); !s) {
      log::Warn("soak: allocator restart", {{"error", s.error().message()}});
    }
  }
  if (!allocator_down_[1] && !replica2_.running()) {
    ++restarts_["allocator exited, restarted (its Deployment)"];
    (void)StartReplica2();
  }
  const auto& nodes = lab_->topology().nodes();
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const std::string& name = nodes[static_cast<size_t>(i)].name;
    if (node_down_.count(i) || !gone("agent-" + name)) continue;
    ++restarts_["agent exited, restarted (its DaemonSet)"];
    (void)lab_->WaitAgentExit(name, 1000);
    (void)lab_->StartAgent(name);
  }
}

}  // namespace pylon::soak
