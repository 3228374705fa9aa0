// The kubelet lab's members of Lab (lab.h; docs/lab.md "Kubelet lab"): every node's containerd
// and kubelet, the images they run, and their tear-down. One node's runtime itself is kubelet.h.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "lab/files.h"
#include "lab/lab.h"
#include "lab/netns.h"

namespace pylon::lab {
namespace {

namespace fs = std::filesystem;

// The kernel settings the kubelets rewrite, as they were before (restored at tear-down).
constexpr const char* kKernelSettingsFile = "kernel-settings.saved";

}  // namespace

KubeletNode Lab::KubeletNodeOf(const LabNode& node) const {
  KubeletNode k;
  k.lab = config_.name;
  k.node = node.name;
  k.index = NodeIndex(topology_, node.name);
  k.dir = Path("kubelet-" + node.name);
  k.ipv4 = node.ipv4;
  k.ipv6 = node.ipv6;
  k.ca_file = control_plane_.CaFile();
  k.kubeconfig = Path("kubeconfig-kubelet");
  if (auto it = kubelet_ports_.find(node.name); it != kubelet_ports_.end()) {
    k.kubelet_port = it->second;
  }
  return k;
}

Result<std::string> Lab::BuildImage(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"bash", config_.lab_images_script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = RunCommandChecked(argv);
  if (!out) return Fail(out.error());
  std::string text = *out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string path =
      text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  if (access(path.c_str(), R_OK) != 0) {
    return Fail(ErrorCode::kNotFound, config_.lab_images_script + " printed no archive: " + text);
  }
  return path;
}

Status Lab::ImportImage(const std::string& archive, const std::string& base_name) const {
  for (const auto& n : topology_.nodes()) {
    std::vector<std::string> argv = {
        "ctr",    "--address", KubeletNodeOf(n).ContainerdSocket(), "--namespace", "k8s.io",
        "images", "import"};
    if (!base_name.empty()) argv.insert(argv.end(), {"--base-name", base_name});
    argv.push_back(archive);
    if (auto r = RunCommandChecked(argv); !r) {
      return Fail(r.error().Wrap("import " + archive + " on " + n.name));
    }
  }
  return Ok();
}

Status Lab::SignalKubelet(const std::string& node, int sig) {
  auto it = procs_.find("kubelet-" + node);
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no kubelet running on " + node);
  return it->second.Signal(sig);
}

Status Lab::StartKubelets() {
  if (auto s = Apply(kKubeletRbac); !s) return s;
  if (auto s = WriteNodeKubeconfig("kubeconfig-kubelet", "kube-system", "pylon-lab-kubelet"); !s) {
    return s;
  }
  auto pause = BuildImage({"pause"});
  if (!pause) return Fail(pause.error().Wrap("pause image"));
  // The kubelets rewrite these at start; Down writes them back. An earlier file of this lab (a
  // crash before its `lab down`) holds the values from before that lab: keep it.
  if (!fs::exists(Path(kKernelSettingsFile))) {
    auto saved = ReadKernelSettings(KubeletKernelSettingKeys());
    if (!saved) return Fail(saved.error());
    std::ofstream out(Path(kKernelSettingsFile), std::ios::trunc);
    out << FormatKernelSettings(*saved);
    out.close();
    if (!out) return Fail(ErrorCode::kSystem, "cannot write " + Path(kKernelSettingsFile));
  }
  for (const auto& n : topology_.nodes()) {
    // The kubelet listens on 0.0.0.0:<port> in the node, where any socket on that port (an
    // outgoing connection from an ephemeral port, say) would make it fail: a port below the
    // ephemeral range, and not one of the lab's fixed ones (all below 20000).
    auto port = FreeLoopbackPortIn(20000, 29999);
    if (!port) return Fail(port.error());
    kubelet_ports_[n.name] = *port;
    if (auto s = StartKubeletNode(n, *pause); !s) return Fail(s.error().Wrap(n.name));
  }
  return WaitNodesReady(std::chrono::seconds(120));
}

Status Lab::StartKubeletNode(const LabNode& n, const std::string& pause_archive) {
  const KubeletNode k = KubeletNodeOf(n);
  if (auto s = PrepareKubeletNode(k); !s) return s;
  // The `kubernetes` Service's endpoint (kApiAdvertiseAddress:<API server port>) in this node.
  if (auto r = RunCommandChecked(
          {"ip", "addr", "replace", std::string(kApiAdvertiseAddress) + "/32", "dev", "lo"},
          n.netns);
      !r) {
    return Fail(r.error());
  }
  const std::string api_port = std::to_string(control_plane_.port());
  SpawnOptions endpoint;
  endpoint.netns = n.netns;
  endpoint.argv = {"socat",
                   "TCP-LISTEN:" + api_port + ",bind=" + kApiAdvertiseAddress + ",fork,reuseaddr",
                   "UNIX-CONNECT:" + Path("api.sock")};
  if (auto s = Spawn("api-endpoint-" + n.name, endpoint); !s) return s;
  // The API server's way to this kubelet: 127.0.0.1:<port> on the host → kubelet.sock → the
  // same port in the node.
  const std::string port = std::to_string(k.kubelet_port);
  SpawnOptions in_node;
  in_node.netns = n.netns;
  in_node.argv = {"socat", "UNIX-LISTEN:" + k.KubeletSocket() + ",fork,unlink-early,mode=600",
                  "TCP:127.0.0.1:" + port};
  if (auto s = Spawn("kubelet-in-" + n.name, in_node); !s) return s;
  SpawnOptions on_host;
  on_host.argv = {"socat", "TCP-LISTEN:" + port + ",bind=127.0.0.1,fork,reuseaddr",
                  "UNIX-CONNECT:" + k.KubeletSocket()};
  if (auto s = Spawn("kubelet-out-" + n.name, on_host); !s) return s;

  SpawnOptions containerd;
  containerd.netns = n.netns;
  containerd.argv = ContainerdArgv(k);
  if (auto s = Spawn("containerd-" + n.name, containerd); !s) return s;
  if (!WaitForPath(k.ContainerdSocket(), std::chrono::seconds(20))) {
    return Fail(ErrorCode::kUnavailable, "containerd did not start; " +
                                             Path("containerd-" + n.name + ".log") + ":" +
                                             LogTail(Path("containerd-" + n.name + ".log")));
  }
  if (auto r = RunCommandChecked({"ctr", "--address", k.ContainerdSocket(), "--namespace", "k8s.io",
                                  "images", "import", pause_archive});
      !r) {
    return Fail(r.error().Wrap("import the pause image"));
  }
  SpawnOptions kubelet;
  kubelet.netns = n.netns;
  kubelet.argv = KubeletArgv(control_plane_.Binary("kubelet"), k);
  return Spawn("kubelet-" + n.name, kubelet);
}

Status Lab::WaitNodesReady(std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string not_ready;
  while (true) {
    not_ready.clear();
    auto out = Kubectl({"get", "nodes", "-o", "json"});
    nlohmann::json nodes = out ? nlohmann::json::parse(*out, nullptr, false) : nlohmann::json();
    for (const auto& n : topology_.nodes()) {
      bool ready = false;
      if (nodes.is_object()) {
        for (const auto& item : nodes.value("items", nlohmann::json::array())) {
          const auto meta = item.value("metadata", nlohmann::json::object());
          if (meta.value("name", "") != n.name) continue;
          const auto status = item.value("status", nlohmann::json::object());
          for (const auto& c : status.value("conditions", nlohmann::json::array())) {
            if (c.value("type", "") == "Ready" && c.value("status", "") == "True") ready = true;
          }
        }
      }
      if (ready) continue;
      not_ready += " " + n.name;
      auto it = procs_.find("kubelet-" + n.name);
      if (it == procs_.end() || !it->second.running()) {
        return Fail(ErrorCode::kUnavailable, "the kubelet of " + n.name + " exited; " +
                                                 Path("kubelet-" + n.name + ".log") + ":" +
                                                 LogTail(Path("kubelet-" + n.name + ".log"), 15));
      }
    }
    if (not_ready.empty()) return Ok();
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string first = not_ready.substr(1, not_ready.find(' ', 1) - 1);
      return Fail(ErrorCode::kUnavailable, "nodes not Ready after " +
                                               std::to_string(timeout.count()) + " s:" + not_ready +
                                               "; " + Path("kubelet-" + first + ".log") + ":" +
                                               LogTail(Path("kubelet-" + first + ".log"), 15));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

Status Lab::TearDownKubelets() {
  std::vector<KubeletNode> nodes;
  std::error_code ec;
  for (auto it = fs::directory_iterator(config_.dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code dec;
    if (name.rfind("kubelet-", 0) != 0 || !it->is_directory(dec)) continue;
    KubeletNode k;
    k.lab = config_.name;
    k.node = name.substr(std::string("kubelet-").size());
    k.dir = it->path().string();
    nodes.push_back(k);
  }
  const auto recorded = Pids();
  auto stop = [&](const std::string& key) {
    if (auto it = procs_.find(key); it != procs_.end()) {
      it->second.Stop(std::chrono::milliseconds(5000));
      procs_.erase(it);
    } else if (auto pid = recorded.find(key);
               pid != recorded.end() && pid->second > 0 && kill(pid->second, 0) == 0) {
      Process::Adopt(pid->second).Stop(std::chrono::milliseconds(5000));
    }
  };
  for (const auto& k : nodes) stop("kubelet-" + k.node);
  for (const auto& k : nodes) stop("containerd-" + k.node);
  if (!nodes.empty()) RemoveAgentHostFiles();
  Status first = Ok();
  for (const auto& k : nodes) {
    if (auto s = TearDownKubeletNode(k); !s && first) first = Fail(s.error().Wrap(k.node));
  }
  kubelet_ports_.clear();
  if (fs::exists(Path(kKernelSettingsFile))) {
    std::ifstream in(Path(kKernelSettingsFile));
    std::stringstream text;
    text << in.rdbuf();
    auto saved = ParseKernelSettings(text.str());
    Status restored = saved ? WriteKernelSettings(*saved) : Status(Fail(saved.error()));
    if (restored) {
      fs::remove(Path(kKernelSettingsFile), ec);
    } else if (first) {
      first = Fail(
          restored.error().Wrap("kernel settings (kept in " + Path(kKernelSettingsFile) + ")"));
    }
  }
  // No WriteState here: in `lab down` from another process this object's procs_ is empty, and the
  // state file still names the processes Down stops next.
  return first;
}

}  // namespace pylon::lab
