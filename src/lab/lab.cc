#include "lab/lab.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "lab/files.h"
#include "lab/kube_proxy.h"
#include "lab/netns.h"
#include "lab/pods.h"
#include "lab/responder.h"

namespace pylon::lab {
namespace {

namespace fs = std::filesystem;

LabConfig WithDefaults(LabConfig c) {
  if (c.dir.empty()) c.dir = "/tmp/pylon-lab/" + c.name;
  if (c.binary.empty())
    c.binary = (std::filesystem::path(SelfExe()).parent_path() / "pylon").string();
  if (c.dev_binary.empty()) {
    const auto beside = std::filesystem::path(c.binary).parent_path() / "pylon-dev";
    c.dev_binary = std::filesystem::exists(beside) ? beside.string() : c.binary;
  }
  if (c.deploy_dir.empty()) c.deploy_dir = std::string(PYLON_SOURCE_DIR) + "/deploy";
  if (c.k8s_bin_dir.empty()) c.k8s_bin_dir = K8sBinDir();
  if (c.lab_images_script.empty()) {
    c.lab_images_script = std::string(PYLON_SOURCE_DIR) + "/scripts/lab-images.sh";
  }
  if (c.image_script.empty()) c.image_script = std::string(PYLON_SOURCE_DIR) + "/scripts/image.sh";
  if (c.helm_binary == "helm") {
    const char* env = std::getenv("PYLON_HELM");
    if (env != nullptr && *env != '\0') {
      c.helm_binary = env;
    } else if (*PYLON_HELM_BIN != '\0') {
      c.helm_binary = PYLON_HELM_BIN;
    }
  }
  if (!c.install.empty()) {
    // The DaemonSet and the Deployment run Pylon, as pods of the kubelets; the heartbeat key is
    // theirs to make.
    c.kubelet = true;
    c.start_allocator = false;
    c.start_agents = false;
    c.heartbeat = false;
    if (c.install == "helm" && c.helm_chart.empty()) {
      c.helm_chart = std::string(PYLON_SOURCE_DIR) + "/deploy/helm/pylon";
    }
  }
  if (c.kubelet) c.kube_proxy = true;
  return c;
}

ControlPlaneConfig ControlPlaneFor(const LabConfig& c) {
  ControlPlaneConfig out;
  out.dir = c.dir;
  out.bin_dir = c.k8s_bin_dir;
  if (c.kubelet) {
    out.controllers = true;
    out.kubelet_client_cert = true;
    out.hosts_file = c.dir + "/apiserver-hosts";
    out.advertise_address = kApiAdvertiseAddress;
  }
  return out;
}

}  // namespace

Lab::Lab(LabConfig config)
    : config_(WithDefaults(std::move(config))),
      topology_(config_.name, config_.nodes),
      control_plane_(ControlPlaneFor(config_)) {}

Lab::~Lab() {
  if (!detached_) (void)Down();
}

void Lab::Detach() {
  detached_ = true;
  for (auto& [k, p] : procs_) p.Detach();
  control_plane_.Detach();
}

Status Lab::Spawn(const std::string& key, SpawnOptions opts) {
  opts.log_path = Path(key + ".log");
  auto p = Process::Spawn(opts);
  if (!p) return Fail(p.error().Wrap("start " + key));
  procs_[key] = std::move(*p);
  return WriteState();
}

Status Lab::WriteState() const {
  nlohmann::json st;
  st["name"] = config_.name;
  st["nodes"] = config_.nodes;
  st["kubeconfig"] = Kubeconfig();
  for (const auto& [k, p] : procs_) st["pids"][k] = p.pid();
  for (const auto& [k, pid] : control_plane_.Pids()) st["pids"][k] = pid;
  std::ofstream out(Path("state.json"));
  out << st.dump(2) << "\n";
  if (!out) return Fail(ErrorCode::kSystem, "cannot write " + Path("state.json"));
  return Ok();
}

std::map<std::string, int> Lab::Pids() const {
  std::map<std::string, int> out;
  std::ifstream in(Path("state.json"));
  if (!in) return out;
  try {
    auto st = nlohmann::json::parse(in);
    for (const auto& [k, v] : st.at("pids").items()) out[k] = v.get<int>();
  } catch (const std::exception&) {
  }
  return out;
}

Status Lab::StartApiserver() { return control_plane_.StartApiserver(); }

Status Lab::StopApiserver() { return control_plane_.StopApiserver(); }

Status Lab::SignalApiserver(int sig) { return control_plane_.SignalApiserver(sig); }

Status Lab::StartControlPlane() {
  // A fresh cluster each time: etcd's data of an earlier lab of this name goes.
  std::error_code ec;
  fs::remove_all(Path("etcd"), ec);
  if (config_.kubelet) {
    // The API server reaches each kubelet at <node name>:<its port> (the Hostname address the
    // kubelet reports, its port in daemonEndpoints): every node name is 127.0.0.1 for it, where a
    // forwarder per node listens on that node's kubelet port (StartKubeletNode).
    std::string hosts = "127.0.0.1 localhost\n::1 localhost\n127.0.0.1";
    for (const auto& n : topology_.nodes()) hosts += " " + n.name;
    std::ofstream out(Path("apiserver-hosts"), std::ios::trunc);
    out << hosts << "\n";
    if (!out) return Fail(ErrorCode::kSystem, "cannot write " + Path("apiserver-hosts"));
  }
  if (auto s = control_plane_.Start(); !s) return s;
  if (auto s = WriteState(); !s) return s;
  if (config_.install.empty()) {
    if (auto s = InstallForProcesses(); !s) return s;
  }
  for (const auto& n : topology_.nodes()) {
    std::string node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + n.name +
                       "\n  labels:\n    kubernetes.io/hostname: " + n.name +
                       "\n    kubernetes.io/os: linux\n";
    if (auto s = Apply(node); !s) return s;
    // Status is a subresource: addresses as a kubelet reports them.
    const std::string status = R"({"status":{"addresses":[{"type":"InternalIP","address":")" +
                               n.ipv4 + R"("},{"type":"InternalIP","address":")" + n.ipv6 +
                               R"("},{"type":"Hostname","address":")" + n.name + R"("}]}})";
    if (auto r = Kubectl(
            {"patch", "node", n.name, "--subresource=status", "--type=merge", "-p", status});
        !r) {
      return Fail(r.error());
    }
  }
  // API forwarders: host unix socket → API server; in every node 127.0.0.1:6443 → the socket.
  const std::string sock = Path("api.sock");
  fs::remove(sock, ec);
  SpawnOptions host;
  host.argv = {"socat", "UNIX-LISTEN:" + sock + ",fork,unlink-early,mode=600",
               "TCP:127.0.0.1:" + std::to_string(control_plane_.port())};
  if (auto s = Spawn("api-forward", host); !s) return s;
  for (const auto& n : topology_.nodes()) {
    SpawnOptions o;
    o.netns = n.netns;
    o.argv = {"socat",
              "TCP-LISTEN:" + std::to_string(kNodeApiPort) + ",bind=127.0.0.1,fork,reuseaddr",
              "UNIX-CONNECT:" + sock};
    if (auto s = Spawn("api-forward-" + n.name, o); !s) return s;
  }
  if (!WaitForPath(sock, std::chrono::seconds(5))) {
    return Fail(ErrorCode::kUnavailable,
                "API forwarder did not start; see " + Path("api-forward.log"));
  }
  return Ok();
}

Status Lab::StartAllocator() {
  SpawnOptions o;
  o.argv = {config_.binary, "allocator",     "--kubeconfig",   Path("kubeconfig-allocator"),
            "--namespace",  "purelb-system", "--metrics-addr", "127.0.0.1:0"};
  o.argv.insert(o.argv.end(), config_.allocator_args.begin(), config_.allocator_args.end());
  return Spawn("allocator", o);
}

Status Lab::StopAllocator() {
  auto it = procs_.find("allocator");
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no allocator running");
  it->second.Stop();
  procs_.erase(it);
  return WriteState();
}

Status Lab::StartAgent(const std::string& node) {
  const LabNode* n = FindNode(node);
  if (!n) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  SpawnOptions o;
  o.netns = n->netns;
  o.argv = {config_.binary, "agent", "--kubeconfig", Path("kubeconfig-agent"),
            "--node-name",  node,    "--namespace",  "purelb-system"};
  // Nodes of a lab share one filesystem: each agent keeps its record of the addresses it added in
  // the lab directory (the default, /run/pylon/agent-addresses, would be shared by all of them).
  o.argv.insert(o.argv.end(), {"--state-file", Path("agent-addresses-" + node)});
  // The agent leaves the election while its node's kube-proxy fails /healthz (on by default):
  // without kube-proxy in the lab, turn the check off (agent_args may still turn it back on).
  if (!kube_proxy_running_) o.argv.push_back("--kube-proxy-check=off");
  if (config_.bgp) {
    o.argv.insert(o.argv.end(), {"--bird-socket", BirdSocket(node), "--bird-config",
                                 BirdConfig(node), "--bgp-status-interval", "1s"});
  }
  o.argv.insert(o.argv.end(), config_.agent_args.begin(), config_.agent_args.end());
  o.env = {"PURELB_LEASE_DURATION=" + config_.lease_duration,
           "PURELB_RENEW_DEADLINE=" + config_.renew_deadline,
           "PURELB_RETRY_PERIOD=" + config_.retry_period, "PURELB_POD_UID=" + AgentPodUid(node)};
  return Spawn("agent-" + node, o);
}

std::string Lab::AgentPodUid(const std::string& node) {
  // UUID-shaped: "1ab00000-0000-4000-8000-" and the last 12 hex digits of the node name's bytes
  // (distinct for the lab's names, node1 .. node99).
  std::string hex;
  for (unsigned char c : node) {
    static constexpr char kDigits[] = "0123456789abcdef";
    hex += kDigits[c >> 4];
    hex += kDigits[c & 0xf];
  }
  if (hex.size() < 12) hex.insert(0, 12 - hex.size(), '0');
  return "1ab00000-0000-4000-8000-" + hex.substr(hex.size() - 12);
}

const LabNode* Lab::FindNode(const std::string& name) const {
  for (const auto& x : topology_.nodes()) {
    if (x.name == name) return &x;
  }
  return nullptr;
}

Status Lab::SignalAgent(const std::string& node, int sig) {
  auto it = procs_.find("agent-" + node);
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no agent running on " + node);
  return it->second.Signal(sig);
}

bool Lab::WaitAgentExit(const std::string& node, int timeout_ms) {
  auto it = procs_.find("agent-" + node);
  if (it == procs_.end()) return true;
  if (!it->second.Wait(std::chrono::milliseconds(timeout_ms))) return false;
  procs_.erase(it);
  (void)WriteState();
  return true;
}

Result<std::string> Lab::Kubectl(const std::vector<std::string>& args) const {
  return control_plane_.Kubectl(args);
}

Result<std::string> Lab::Helm(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"env", "HELM_CACHE_HOME=" + Path("helm/cache"),
                                   "HELM_CONFIG_HOME=" + Path("helm/config"),
                                   "HELM_DATA_HOME=" + Path("helm/data"), config_.helm_binary};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--kubeconfig", Kubeconfig()});
  return RunCommandChecked(argv);
}

Status Lab::Apply(const std::string& manifest) const {
  static int counter = 0;
  std::string file = Path("manifest-" + std::to_string(++counter) + ".yaml");
  {
    std::ofstream out(file);
    out << manifest;
  }
  auto r = Kubectl({"apply", "-f", file});
  if (!r) return Fail(r.error());
  return Ok();
}

// What `kubectl apply -k deploy` installs, but the workloads (the lab runs the allocator and the
// agents itself), and their ServiceAccounts' kubeconfigs.
Status Lab::InstallForProcesses() {
  // What `kubectl apply -k deploy` installs, but the workloads: the lab runs the allocator and
  // the agents itself. Default validation, as a user applies them.
  const std::string& d = config_.deploy_dir;
  if (!config_.helm_chart.empty()) {
    if (auto r = Helm(
            {"install", "pylon", config_.helm_chart, "-n", "purelb-system", "--create-namespace"});
        !r) {
      return Fail(r.error());
    }
  } else if (auto r = Kubectl({"apply", "-f", d + "/namespace.yaml", "-f", d + "/crds", "-f",
                               d + "/rbac-allocator.yaml", "-f", d + "/rbac-agent.yaml"});
             !r) {
    return Fail(r.error());
  }
  if (auto r = Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"});
      !r) {
    return Fail(r.error());
  }
  // The components authenticate as the ServiceAccounts deploy/ creates (TokenRequest API).
  if (auto s = control_plane_.WriteServiceAccountKubeconfig(Path("kubeconfig-allocator"),
                                                            "purelb-system", "allocator");
      !s) {
    return s;
  }
  return WriteNodeKubeconfig("kubeconfig-agent", "purelb-system", "agent");
}

Status Lab::WriteNodeKubeconfig(const std::string& file, const std::string& ns,
                                const std::string& account) {
  const std::string node_server = "https://127.0.0.1:" + std::to_string(kNodeApiPort);
  return control_plane_.WriteServiceAccountKubeconfig(Path(file), ns, account, node_server);
}

Status Lab::SetNodeLink(const std::string& node, bool up) {
  const LabNode* n = FindNode(node);
  if (!n) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  if (auto s = topology_.SetNodeLink(*n, up); !s) return s;
  if (up && pod_routing_) return SetUpPodRouting(topology_);
  return Ok();
}

Status Lab::SetUpHeartbeat() {
  std::string help;
  (void)RunCommand({config_.binary, "agent", "--help"}, &help);
  if (help.find("--heartbeat-key-secret") == std::string::npos) {
    log::Info("agent has no --heartbeat-key-secret; heartbeats off in the lab");
    return Ok();
  }
  // As the DaemonSet runs it (deploy/agent.yaml): no key anywhere; the first agent creates the
  // Secret pylon-heartbeat-key with a random key, the others read it.
  config_.agent_args.push_back("--heartbeat-key-secret");
  config_.agent_args.push_back("pylon-heartbeat-key");
  return Ok();
}

Status Lab::Up() {
  if (auto s = ValidateLabName(config_.name); !s) return s;
  std::error_code ec;
  fs::create_directories(config_.dir, ec);
  if (ec) return Fail(ErrorCode::kSystem, "create " + config_.dir + ": " + ec.message());
  if (config_.heartbeat) {
    if (auto s = SetUpHeartbeat(); !s) return s;
  }
  // Before any namespace exists: a machine without the Kubernetes binaries fails at once.
  if (auto s = control_plane_.CheckBinaries(); !s) return s;
  if (!config_.install.empty() && config_.install != "kustomize" && config_.install != "helm") {
    return Fail(ErrorCode::kInvalidArgument,
                "install \"" + config_.install + "\": expected kustomize or helm");
  }
  if (config_.kubelet) {
    if (access(control_plane_.Binary("kubelet").c_str(), X_OK) != 0) {
      return Fail(ErrorCode::kNotFound,
                  "no kubelet in \"" + config_.k8s_bin_dir + "\": run scripts/k8s-components.sh");
    }
    const KubeletNode probe;
    for (const std::string& f :
         {std::string("/usr/bin/containerd"), probe.runc, probe.cni_bin_dir + "/bridge",
          probe.cni_bin_dir + "/host-local", probe.cni_bin_dir + "/loopback"}) {
      if (access(f.c_str(), X_OK) != 0) {
        return Fail(ErrorCode::kNotFound,
                    "no " + f +
                        ": the kubelet lab needs Debian's containerd, runc and "
                        "containernetworking-plugins (scripts/deps.sh installs them)");
      }
    }
  }
  if (auto s = topology_.Up(); !s) return s;
  auto fail = [this](const Error& e) {
    (void)Down();
    return Fail(e);
  };
  if (auto s = StartControlPlane(); !s) return fail(s.error());
  for (const auto& n : topology_.nodes()) {
    SpawnOptions o;
    o.netns = n.netns;
    o.argv = {config_.dev_binary, "lab", "serve", "--port", "80", "--text", n.name};
    if (auto s = Spawn("serve-" + n.name, o); !s) return fail(s.error());
  }
  if (config_.kube_proxy) {
    if (auto s = StartKubeProxy(); !s && config_.kubelet) {
      return fail(s.error().Wrap("kube-proxy (the kubelet lab needs it)"));
    } else if (!s) {
      kube_proxy_problem_ = s.error().message();
      StopKubeProxy();
      log::Warn(
          "kube-proxy cannot run in this lab; going on without it (the nodes' responders "
          "answer on port 80 as without --kube-proxy)",
          {{"lab", config_.name}, {"reason", kube_proxy_problem_}});
    } else {
      kube_proxy_running_ = true;
      log::Info("kube-proxy running on every node",
                {{"lab", config_.name}, {"mode", config_.proxy_mode}});
    }
  }
  if (config_.bgp && config_.install.empty()) {
    if (auto s = StartBgp(); !s) return fail(s.error());
  }
  if (config_.kubelet) {
    if (auto s = StartKubelets(); !s) return fail(s.error());
  }
  if (!config_.install.empty()) {
    if (auto s = InstallPylon(); !s)
      return fail(s.error().Wrap("install (" + config_.install + ")"));
    if (config_.bgp) {
      if (auto s = StartBgp(); !s) return fail(s.error());
    }
  }
  if (config_.start_allocator) {
    if (auto s = StartAllocator(); !s) return fail(s.error());
  }
  if (config_.start_agents) {
    for (const auto& n : topology_.nodes()) {
      if (auto s = StartAgent(n.name); !s) return fail(s.error());
    }
  }
  return WriteState();
}

Status Lab::Down() {
  // The kubelets and their containers first: they use the API server, the network and mounts.
  auto kubelets = TearDownKubelets();
  // Processes this object started, then any recorded by another `pylon-dev lab` process.
  for (auto& [k, p] : procs_) p.Stop(std::chrono::milliseconds(2000));
  procs_.clear();
  pods_.clear();
  pod_routing_ = false;
  kube_proxy_running_ = false;
  control_plane_.Stop();
  for (const auto& [k, pid] : Pids()) {
    if (pid > 0 && kill(pid, 0) == 0) {
      Process p = Process::Adopt(pid);
      p.Stop(std::chrono::milliseconds(2000));
    }
  }
  auto s = topology_.Down();
  std::error_code ec;
  fs::remove(Path("api.sock"), ec);
  fs::remove(Path("state.json"), ec);
  fs::remove_all(Path("etcd"), ec);
  if (!s) return s;
  return kubelets;
}

}  // namespace pylon::lab
