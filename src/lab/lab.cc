#include "lab/lab.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"

namespace pylon::lab {
namespace {

namespace fs = std::filesystem;

bool WaitForFile(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (fs::exists(path, ec) && fs::file_size(path, ec) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

Lab::Lab(LabConfig config) : config_(std::move(config)), topology_(config_.name, config_.nodes) {
  if (config_.dir.empty()) config_.dir = "/tmp/pylon-lab/" + config_.name;
  if (config_.binary.empty()) config_.binary = SelfExe();
  if (config_.crds_dir.empty()) config_.crds_dir = std::string(PYLON_SOURCE_DIR) + "/deploy/crds";
}

Lab::~Lab() {
  if (!detached_) (void)Down();
}

void Lab::Detach() {
  detached_ = true;
  for (auto& [k, p] : procs_) p.Detach();
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

Status Lab::StartApiserver() {
  SpawnOptions o;
  o.argv = {config_.binary,
            "apiserver",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig-out",
            Kubeconfig(),
            "--listen-unix",
            Path("api.sock"),
            "--kubeconfig-unix-out",
            Path("kubeconfig-internal"),
            "--audit-log",
            Path("audit.log")};
  std::error_code ec;
  fs::remove(Kubeconfig(), ec);
  fs::remove(Path("kubeconfig-internal"), ec);
  fs::remove(Path("api.sock"), ec);
  if (auto s = Spawn("apiserver", o); !s) return s;
  if (!WaitForFile(Kubeconfig(), std::chrono::seconds(15)) ||
      !WaitForFile(Path("kubeconfig-internal"), std::chrono::seconds(5))) {
    return Fail(ErrorCode::kUnavailable,
                "the API server did not start; see " + Path("apiserver.log"));
  }
  return Ok();
}

Status Lab::StopApiserver() {
  auto it = procs_.find("apiserver");
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no apiserver running");
  it->second.Stop();
  procs_.erase(it);
  return WriteState();
}

Status Lab::SignalApiserver(int sig) {
  auto it = procs_.find("apiserver");
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no apiserver running");
  return it->second.Signal(sig);
}

Status Lab::StartAllocator() {
  SpawnOptions o;
  o.argv = {config_.binary, "allocator",     "--kubeconfig",   Kubeconfig(),
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
  const LabNode* n = nullptr;
  for (const auto& x : topology_.nodes()) {
    if (x.name == node) n = &x;
  }
  if (!n) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  SpawnOptions o;
  o.netns = n->netns;
  o.argv = {config_.binary, "agent", "--kubeconfig", Path("kubeconfig-internal"),
            "--node-name",  node,    "--namespace",  "purelb-system"};
  // Nodes of a lab share one filesystem: each agent keeps its record of the addresses it added in
  // the lab directory (the default, /run/pylon/agent-addresses, would be shared by all of them).
  o.argv.insert(o.argv.end(), {"--state-file", Path("agent-addresses-" + node)});
  o.argv.insert(o.argv.end(), config_.agent_args.begin(), config_.agent_args.end());
  o.env = {"PURELB_LEASE_DURATION=" + config_.lease_duration,
           "PURELB_RENEW_DEADLINE=" + config_.renew_deadline,
           "PURELB_RETRY_PERIOD=" + config_.retry_period};
  return Spawn("agent-" + node, o);
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
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", Kubeconfig(), "--cache-dir",
                                   Path("kubectl-cache")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommandChecked(argv);
}

Status Lab::Apply(const std::string& manifest) const {
  static int counter = 0;
  std::string file = Path("manifest-" + std::to_string(++counter) + ".yaml");
  {
    std::ofstream out(file);
    out << manifest;
  }
  auto r = Kubectl({"apply", "--validate=false", "-f", file});
  if (!r) return Fail(r.error());
  return Ok();
}

Status Lab::SetUpHeartbeat() {
  std::string help;
  (void)RunCommand({config_.binary, "agent", "--help"}, &help);
  if (help.find("--heartbeat-key-file") == std::string::npos) {
    log::Info("agent has no --heartbeat-key-file; heartbeats off in the lab");
    return Ok();
  }
  std::ifstream rnd("/dev/urandom", std::ios::binary);
  unsigned char bytes[32] = {};
  rnd.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  if (!rnd) return Fail(ErrorCode::kSystem, "cannot read /dev/urandom");
  static const char* kHex = "0123456789abcdef";
  std::string key;
  for (unsigned char b : bytes) {
    key += kHex[b >> 4];
    key += kHex[b & 15];
  }
  const std::string file = Path("heartbeat.key");
  {
    std::ofstream out(file, std::ios::trunc);
    out << "# pylon lab heartbeat key\n" << key << "\n";
    if (!out) return Fail(ErrorCode::kSystem, "cannot write " + file);
  }
  chmod(file.c_str(), 0600);
  config_.agent_args.push_back("--heartbeat-key-file");
  config_.agent_args.push_back(file);
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
  if (auto s = topology_.Up(); !s) return s;
  auto fail = [this](const Error& e) {
    (void)Down();
    return Fail(e);
  };
  if (auto s = StartApiserver(); !s) return fail(s.error());
  if (auto r = Kubectl({"apply", "--validate=false", "-f", config_.crds_dir}); !r) {
    return fail(r.error());
  }
  std::string nodes;
  for (const auto& n : topology_.nodes()) {
    nodes += "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + n.name +
             "\n  labels:\n    kubernetes.io/hostname: " + n.name +
             "\nstatus:\n  addresses:\n  - type: InternalIP\n    address: " + n.ipv4 +
             "\n  - type: InternalIP\n    address: " + n.ipv6 + "\n---\n";
  }
  if (auto s = Apply(nodes); !s) return fail(s.error());
  for (const auto& n : topology_.nodes()) {
    SpawnOptions o;
    o.netns = n.netns;
    o.argv = {config_.binary, "lab", "serve", "--port", "80", "--text", n.name};
    if (auto s = Spawn("serve-" + n.name, o); !s) return fail(s.error());
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
  // Processes this object started, then any recorded by another `pylon lab` process.
  for (auto& [k, p] : procs_) p.Stop(std::chrono::milliseconds(2000));
  procs_.clear();
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
  return s;
}

}  // namespace pylon::lab
