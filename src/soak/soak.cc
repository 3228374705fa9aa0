#include "soak/soak.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common/json.h"
#include "common/log.h"
#include "faultproxy/proxy.h"
#include "lab/command.h"
#include "lab/lab.h"
#include "lab/neighbor_probe.h"
#include "lab/netns.h"
#include "lab/process.h"
#include "lab/responder.h"
#include "lab/service_state.h"
#include "soak/checks.h"

namespace pylon::soak {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
using lab::Say;

// The port in every node where the agents reach the fault proxy (the lab's own forwarder, to the
// API server directly, is on Lab::kNodeApiPort).
constexpr int kNodeProxyPort = 6444;
// Services s0 .. s9, each with one pod (p0 .. p9) on node (i % nodes) + 1.
constexpr int kServices = 10;

// A config object of the soak: three ServiceGroups and a Lace LoadBalancerClass. Pools grow and
// shrink by prefix length (size 0..2); each has a second range that only requested addresses use
// (dynamic allocation takes the first range first), so a request collides only with itself.
struct ConfigDef {
  const char* name;
  bool lace;
  bool is_virtual;
  const char* v4_dynamic;    // base of the dynamic range (/29, /28, /27)
  const char* v4_requested;  // /28
  const char* v6_dynamic;    // base (/125, /124, /123)
  const char* v6_requested;  // /124
};
constexpr ConfigDef kConfigs[] = {
    {"sa", false, false, "192.0.2.64", "192.0.2.96", "2001:db8:1::a:0", "2001:db8:1::b:0"},
    {"sb", false, false, "192.0.2.128", "192.0.2.160", "2001:db8:1::c:0", "2001:db8:1::d:0"},
    {"sv", false, true, "203.0.113.0", "203.0.113.32", "2001:db8:beef::", "2001:db8:beef::1:0"},
    {"c1", true, false, "192.0.2.192", "192.0.2.240", "2001:db8:1::e:0", "2001:db8:1::f:0"},
};
constexpr int kConfigCount = 4;

struct ConfigState {
  bool exists = true;
  bool valid = true;
  int size = 1;
};

// What the soak wants of one Service name.
struct ServiceState {
  bool exists = false;
  int config = 0;  // index in kConfigs
  bool v6_primary = false;
  int policy = 0;  // 0 SingleStack, 1 PreferDualStack, 2 RequireDualStack
  bool requested = false;
  int share = 0;  // 0 none, 1 "k1", 2 "k2"
  bool local_etp = false;
};

const char* const kPolicies[] = {"SingleStack", "PreferDualStack", "RequireDualStack"};

// The address a Service requests: offset i + 1 in its config's requested range.
std::string RequestedAddress(const ConfigDef& c, int i, bool v6) {
  auto ip = net::IpAddress::Parse(v6 ? c.v6_requested : c.v4_requested);
  if (!ip) return "";
  return net::IpAddress::FromValue(ip->family(), ip->value() + static_cast<unsigned>(i + 1))
      .ToString();
}

std::string ConfigYaml(const ConfigDef& c, const ConfigState& s, bool valid) {
  const std::string v4len = std::to_string(29 - s.size), v6len = std::to_string(125 - s.size);
  if (c.lace) {
    std::string y =
        "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata:\n  name: " +
        std::string(c.name) + "\nspec:\n  mode: l2\n  ipv4Pools:\n  - cidr: " + c.v4_dynamic + "/" +
        v4len + "\n";
    // Invalid: a pool with both cidr and start/end.
    if (!valid) y += "    start: 192.0.2.250\n    end: 192.0.2.251\n";
    y += "  - cidr: " + std::string(c.v4_requested) +
         "/28\n  ipv6Pools:\n  - cidr: " + c.v6_dynamic + "/" + v6len +
         "\n  - cidr: " + c.v6_requested + "/124\n";
    return y;
  }
  const std::string v4subnet = c.is_virtual ? "203.0.113.0/24" : "192.0.2.0/24";
  const std::string v6subnet = c.is_virtual ? "2001:db8:beef::/64" : "2001:db8:1::/64";
  const std::string v4agg = c.is_virtual ? "/32" : "default";
  const std::string v6agg = c.is_virtual ? "/128" : "default";
  // Invalid: the first pool outside its subnet (the typo of docs/reliability.md).
  const std::string first_subnet = valid ? v4subnet : "10.255.255.0/24";
  return "apiVersion: purelb.io/v1\nkind: ServiceGroup\nmetadata:\n  name: " + std::string(c.name) +
         "\n  namespace: purelb-system\nspec:\n  local:\n    v4pools:\n    - pool: " +
         c.v4_dynamic + "/" + v4len + "\n      subnet: " + first_subnet +
         "\n      aggregation: " + v4agg + "\n    - pool: " + c.v4_requested +
         "/28\n      subnet: " + v4subnet + "\n      aggregation: " + v4agg +
         "\n    v6pools:\n    - pool: " + c.v6_dynamic + "/" + v6len +
         "\n      subnet: " + v6subnet + "\n      aggregation: " + v6agg +
         "\n    - pool: " + c.v6_requested + "/124\n      subnet: " + v6subnet +
         "\n      aggregation: " + v6agg + "\n";
}

// Leader election of both allocator replicas: a killed leader is replaced within seconds.
std::vector<std::string> AllocatorTiming() {
  return {"--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s"};
}

// Whether `pid` runs (not gone, not a zombie).
bool Alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

std::string ServiceName(int i) { return "s" + std::to_string(i); }
int ServicePort(int i) { return 8000 + i; }

std::string ServiceYaml(int i, const ServiceState& s) {
  const ConfigDef& c = kConfigs[s.config];
  std::string ann;
  if (!c.lace) ann += "    purelb.io/service-group: " + std::string(c.name) + "\n";
  if (s.share > 0) ann += "    purelb.io/allow-shared-ip: k" + std::to_string(s.share) + "\n";
  if (s.requested) {
    std::string ips = RequestedAddress(c, i, s.v6_primary);
    if (s.policy > 0) ips += "," + RequestedAddress(c, i, !s.v6_primary);
    ann += std::string("    ") +
           (c.lace ? "loadbalancer.lace-cni.io/loadBalancerIPs" : "purelb.io/addresses") + ": \"" +
           ips + "\"\n";
  }
  const char* first = s.v6_primary ? "IPv6" : "IPv4";
  const char* second = s.v6_primary ? "IPv4" : "IPv6";
  std::string y = "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + ServiceName(i) +
                  "\n  namespace: default\n";
  if (!ann.empty()) y += "  annotations:\n" + ann;
  y += "spec:\n  type: LoadBalancer\n";
  if (c.lace) y += "  loadBalancerClass: lace-cni.io/" + std::string(c.name) + "\n";
  y += "  externalTrafficPolicy: " + std::string(s.local_etp ? "Local" : "Cluster") + "\n";
  y += "  ipFamilyPolicy: " + std::string(kPolicies[s.policy]) + "\n  ipFamilies:\n  - " + first +
       "\n";
  if (s.policy > 0) y += "  - " + std::string(second) + "\n";
  y += "  selector:\n    app: " + ServiceName(i) +
       "\n  ports:\n  - port: " + std::to_string(ServicePort(i)) +
       "\n    protocol: TCP\n    targetPort: 8080\n";
  return y;
}

bool IsVirtual(const std::string& ip) {
  return ip.rfind("203.0.113.", 0) == 0 || ip.rfind("2001:db8:beef:", 0) == 0;
}

// Whether `ip` is in one of the soak's pools (largest sizes): the addresses that may appear on a
// node only while a Service holds them.
bool InSoakPools(const std::string& text) {
  static const std::vector<net::Prefix> prefixes = [] {
    std::vector<net::Prefix> out;
    for (const auto& c : kConfigs) {
      out.push_back(*net::Prefix::Parse(std::string(c.v4_dynamic) + "/27"));
      out.push_back(*net::Prefix::Parse(std::string(c.v4_requested) + "/28"));
      out.push_back(*net::Prefix::Parse(std::string(c.v6_dynamic) + "/123"));
      out.push_back(*net::Prefix::Parse(std::string(c.v6_requested) + "/124"));
    }
    return out;
  }();
  auto ip = net::IpAddress::Parse(text);
  if (!ip) return false;
  for (const auto& p : prefixes) {
    if (p.Contains(*ip)) return true;
  }
  return false;
}

struct Violation {
  double t_s;
  std::string what;
};

class Soak {
 public:
  explicit Soak(const SoakOptions& o) : o_(o), rng_(o.seed) {}
  ~Soak() { TearDown(); }

  int Run();

 private:
  // --- decisions (deterministic from the seed) ---
  std::uint64_t Draw(std::uint64_t n) { return rng_() % n; }
  void Decide();
  void Log(const std::string& line);
  void Count(const std::string& kind) { ++faults_[kind]; }

  // --- set-up and tear-down ---
  Status SetUp();
  Status StartProxyPath();
  Status StartReplica2();
  void TearDown();

  // --- actions ---
  void ServiceChurn();
  void ConfigEdit();
  void ProxyFault();
  void ApplyService(int i, const std::string& why, bool ask);
  void DeleteService(int i);
  void ApplyConfig(int c, bool valid);
  void DeleteConfig(int c);
  void Schedule(int after_steps, const std::string& what, std::function<void()> undo);
  void RunDue(bool all);
  // What a Deployment and a DaemonSet do: restart a component that exited on its own (an
  // allocator exits when it loses its lease) and that the soak did not stop.
  void Supervise();
  bool ApiUsable() const { return !apiserver_stopped_ && !apiserver_hung_; }
  int DisruptedNode() const;

  // --- checks ---
  Result<ApiView> ReadApi();
  void ContinuousCheck();
  // One pass of every check that must hold once the faults have stopped; the failures.
  std::vector<std::string> SettledCheck();
  void Violate(const std::string& what);
  double Elapsed() const { return std::chrono::duration<double>(SteadyClock::now() - t0_).count(); }
  void PrintTable(double setup_s);

  SoakOptions o_;
  std::mt19937_64 rng_;
  std::unique_ptr<lab::Lab> lab_;
  std::unique_ptr<faultproxy::FaultProxy> proxy_;
  std::vector<lab::Process> forwarders_;
  std::ofstream decisions_;
  // What each quiet phase still waits for, each time that changes (not part of the digest).
  std::ofstream quiet_log_;
  std::uint64_t digest_ = 1469598103934665603ull;  // FNV-1a of the decision log
  int decision_count_ = 0;
  int step_ = 0;

  ConfigState configs_[kConfigCount];
  ServiceState services_[kServices];
  AddressBook book_;
  std::map<std::string, packet::MacAddress> node_mac_;
  std::map<std::string, std::string> mac_node_;

  struct Pending {
    int due_step;
    std::string what;
    std::function<void()> undo;
  };
  std::vector<Pending> pending_;
  bool allocator_down_[2] = {false, false};
  lab::Process replica2_;  // the second allocator replica (the lab runs the first)
  bool apiserver_stopped_ = false;
  bool apiserver_hung_ = false;
  std::set<int> node_down_;  // nodes with a fault in force (agent down, frozen, link down)

  std::map<std::string, int> faults_;
  std::map<std::string, int> restarts_;  // by the soak as Kubernetes would, not decisions
  std::map<std::string, long> checks_;
  std::vector<Violation> violations_;
  std::map<std::string, double> duplicate_since_;  // address -> first seen unshared (s)
  int phases_ = 0, converged_phases_ = 0;
  std::vector<double> convergence_s_;
  SteadyClock::time_point t0_;
  std::string first_failure_;
};

void Soak::Log(const std::string& line) {
  const std::string l = "step " + std::to_string(step_) + ": " + line;
  for (unsigned char ch : l) {
    digest_ ^= ch;
    digest_ *= 1099511628211ull;
  }
  ++decision_count_;
  decisions_ << l << "\n";
  decisions_.flush();
}

void Soak::Violate(const std::string& what) {
  violations_.push_back({Elapsed(), what});
  Say("  VIOLATION t=" + std::to_string(static_cast<int>(Elapsed())) + "s seed " +
      std::to_string(o_.seed) + ": " + what);
}

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

int Soak::DisruptedNode() const { return node_down_.empty() ? -1 : *node_down_.begin(); }

void Soak::Schedule(int after_steps, const std::string& what, std::function<void()> undo) {
  pending_.push_back({step_ + after_steps, what, std::move(undo)});
}

void Soak::RunDue(bool all) {
  // In order of scheduling: the API server comes back before what needs it.
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const Pending& a, const Pending& b) { return a.due_step < b.due_step; });
  std::vector<Pending> keep;
  std::vector<Pending> due;
  for (auto& p : pending_) (all || p.due_step <= step_ ? due : keep).push_back(std::move(p));
  pending_ = std::move(keep);
  for (auto& p : due) {
    Log("undo " + p.what);
    p.undo();
  }
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

void Soak::ApplyService(int i, const std::string& why, bool ask) {
  Log("service " + ServiceName(i) + " " + why);
  if (ask) book_.Ask(ServiceName(i));
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  if (auto s = lab_->Apply(ServiceYaml(i, services_[i])); !s) {
    Count("edit refused by API");
    log::Info("soak: service edit refused",
              {{"service", ServiceName(i)}, {"error", s.error().message()}});
    // The API keeps the Service as it was; so does the model, by recreating it as wanted.
    (void)lab_->Kubectl({"delete", "service", "-n", "default", ServiceName(i), "--wait=true"});
    book_.Ask(ServiceName(i));
    (void)lab_->Apply(ServiceYaml(i, services_[i]));
  }
}

void Soak::DeleteService(int i) {
  Log("service " + ServiceName(i) + " delete");
  book_.Ask(ServiceName(i));
  services_[i].exists = false;
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  (void)lab_->Kubectl(
      {"delete", "service", "-n", "default", ServiceName(i), "--wait=false", "--ignore-not-found"});
}

void Soak::ServiceChurn() {
  const int i = static_cast<int>(Draw(kServices));
  const int op = static_cast<int>(Draw(7));
  // Parameters, drawn whatever the op (the sequence stays the same).
  ServiceState fresh;
  fresh.exists = true;
  fresh.config = static_cast<int>(Draw(kConfigCount));
  fresh.v6_primary = Draw(4) == 0;
  fresh.policy = static_cast<int>(Draw(3));
  fresh.requested = Draw(4) == 0;
  fresh.share = static_cast<int>(Draw(3));
  fresh.local_etp = Draw(3) == 0;
  const int group = static_cast<int>(Draw(3));  // a ServiceGroup: sa, sb, sv
  if (!ApiUsable()) {
    Log("service " + ServiceName(i) + " op " + std::to_string(op) + " skipped: API down");
    return Count("skipped (API down)");
  }
  ServiceState& s = services_[i];
  if (!s.exists || op == 0) {
    if (s.exists) {
      DeleteService(i);
      if (ApiUsable()) {
        (void)lab_->Kubectl({"wait", "--for=delete", "service/" + ServiceName(i), "-n", "default",
                             "--timeout=10s"});
      }
    }
    s = fresh;
    Count("svc create");
    ApplyService(i, "create", true);
    return;
  }
  switch (op) {
    case 1:
      Count("svc delete");
      DeleteService(i);
      return;
    case 2:
      s.policy = fresh.policy == s.policy ? (s.policy + 1) % 3 : fresh.policy;
      Count("svc ipFamilyPolicy");
      ApplyService(i, std::string("policy ") + kPolicies[s.policy], true);
      return;
    case 3:
      s.requested = !s.requested;
      Count("svc request address");
      ApplyService(i, s.requested ? "request addresses" : "drop requested addresses", true);
      return;
    case 4:
      s.share = fresh.share == s.share ? (s.share + 1) % 3 : fresh.share;
      Count("svc share key");
      ApplyService(i, "share key " + std::to_string(s.share), true);
      return;
    case 5:
      s.local_etp = !s.local_etp;
      Count("svc switch ETP");
      ApplyService(i, std::string("ETP ") + (s.local_etp ? "Local" : "Cluster"), false);
      return;
    default:
      if (kConfigs[s.config].lace) {  // the class is immutable: ETP instead
        s.local_etp = !s.local_etp;
        Count("svc switch ETP");
        ApplyService(i, std::string("ETP ") + (s.local_etp ? "Local" : "Cluster"), false);
        return;
      }
      s.config = group == s.config ? (group + 1) % 3 : group;
      Count("svc change group");
      ApplyService(i, std::string("group ") + kConfigs[s.config].name, true);
      return;
  }
}

void Soak::ApplyConfig(int c, bool valid) {
  configs_[c].exists = true;
  configs_[c].valid = valid;
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  if (auto s = lab_->Apply(ConfigYaml(kConfigs[c], configs_[c], valid)); !s) {
    Count("edit refused by API");
    log::Warn("soak: config edit refused",
              {{"config", kConfigs[c].name}, {"error", s.error().message()}});
  }
}

void Soak::DeleteConfig(int c) {
  configs_[c].exists = false;
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  const ConfigDef& d = kConfigs[c];
  if (d.lace) {
    (void)lab_->Kubectl({"delete", "loadbalancerclasses.lace-cni.io", d.name, "--wait=false"});
  } else {
    (void)lab_->Kubectl(
        {"delete", "servicegroups.purelb.io", d.name, "-n", "purelb-system", "--wait=false"});
  }
}

void Soak::ConfigEdit() {
  const int c = static_cast<int>(Draw(kConfigCount));
  const int op = static_cast<int>(Draw(5));
  ConfigState& st = configs_[c];
  const std::string name = kConfigs[c].name;
  if (!ApiUsable()) {
    Log("config " + name + " op " + std::to_string(op) + " skipped: API down");
    return Count("skipped (API down)");
  }
  switch (op) {
    case 0:
    case 1: {
      const int size = op == 0 ? std::min(st.size + 1, 2) : std::max(st.size - 1, 0);
      const bool shrink = size < st.size;
      st.size = size;
      Log("config " + name + (op == 0 ? " grow" : " shrink") + " to size " + std::to_string(size));
      Count(op == 0 ? "config pool grown" : "config pool shrunk");
      // Addresses outside the new pools are evicted and re-assigned (docs/allocator.md): the
      // operator asked for that on every Service of the object.
      if (shrink) {
        for (int i = 0; i < kServices; ++i) {
          if (services_[i].config == c) book_.Ask(ServiceName(i));
        }
      }
      ApplyConfig(c, true);
      return;
    }
    case 2:
      Log("config " + name + " invalid");
      Count("config invalid applied");
      ApplyConfig(c, false);
      return;
    case 3:
      Log("config " + name + " fixed");
      Count("config fixed");
      ApplyConfig(c, true);
      return;
    default:
      if (st.exists) {
        Log("config " + name + " delete");
        Count("config deleted");
        DeleteConfig(c);
      } else {
        Log("config " + name + " add");
        Count("config added");
        ApplyConfig(c, true);
      }
      return;
  }
}

void Soak::ProxyFault() {
  static const double kErrorRates[] = {0, 0.05, 0.1, 0.2};
  static const int kCodes[] = {500, 503, 429};
  static const double kConflictRates[] = {0, 0.1, 0.2};
  static const int kLatencies[] = {0, 0, 50, 200};
  faultproxy::FaultSettings f;
  f.error_rate = kErrorRates[Draw(4)];
  f.error_code = kCodes[Draw(3)];
  f.conflict_rate = kConflictRates[Draw(3)];
  f.latency_ms = kLatencies[Draw(4)];
  Log("proxy faults " + f.ToJson().dump());
  if (f.error_rate > 0) Count(f.error_code == 429 ? "api 429" : "api 5xx");
  if (f.conflict_rate > 0) Count("api 409");
  if (f.latency_ms > 0) Count("api latency");
  (void)proxy_->faults().Set(f);
}

void Soak::Decide() {
  const auto& nodes = lab_->topology().nodes();
  const int r = static_cast<int>(Draw(100));
  const int node = static_cast<int>(Draw(nodes.size()));
  const int hold = 1 + static_cast<int>(Draw(8));  // steps until the fault is undone
  const std::string nname = nodes[static_cast<size_t>(node)].name;
  const bool node_busy = DisruptedNode() >= 0;
  if (r < 25) return ServiceChurn();
  if (r < 38) return ConfigEdit();
  if (r < 54) return ProxyFault();
  if (r < 60) {
    Log("cut watches");
    Count("api watches cut");
    (void)proxy_->CutWatches();
    return;
  }
  if (r < 64) {
    Log("compact");
    if (!ApiUsable()) return Count("skipped (API down)");
    Count("api compaction (410)");
    (void)proxy_->Compact();
    return;
  }
  if (r < 70) {
    // Two replicas under leader election: killing the leader is a leader change.
    const int replica = static_cast<int>(Draw(2));
    Log("allocator replica " + std::to_string(replica + 1) + " kill -9, restart in " +
        std::to_string(hold / 2 + 1));
    if (allocator_down_[replica]) return Count("skipped (busy)");
    Count("allocator kill -9");
    if (replica == 0) {
      const auto pids = lab_->Pids();
      if (auto it = pids.find("allocator"); it != pids.end()) ::kill(it->second, SIGKILL);
      (void)lab_->StopAllocator();
    } else {
      (void)replica2_.Signal(SIGKILL);
      replica2_.Stop(Ms(2000));
    }
    allocator_down_[replica] = true;
    Schedule(hold / 2 + 1, "allocator replica " + std::to_string(replica + 1) + " start",
             [this, replica] {
               if (auto s = replica == 0 ? lab_->StartAllocator() : StartReplica2(); !s) {
                 log::Warn("soak: allocator start", {{"error", s.error().message()}});
               }
               allocator_down_[replica] = false;
             });
    return;
  }
  if (r < 82) {
    const bool term = Draw(2) == 0;
    Log(std::string("agent ") + nname + (term ? " SIGTERM" : " SIGKILL") + ", restart in " +
        std::to_string(hold));
    if (node_busy) return Count("skipped (busy)");
    Count(term ? "agent SIGTERM" : "agent SIGKILL");
    (void)lab_->SignalAgent(nname, term ? SIGTERM : SIGKILL);
    node_down_.insert(node);
    Schedule(hold, "agent " + nname + " start", [this, nname, node] {
      if (!lab_->WaitAgentExit(nname, 10000)) {
        (void)lab_->SignalAgent(nname, SIGKILL);
        (void)lab_->WaitAgentExit(nname, 5000);
      }
      (void)lab_->StartAgent(nname);
      node_down_.erase(node);
    });
    return;
  }
  if (r < 87) {
    Log("freeze " + nname + " for " + std::to_string(hold));
    if (node_busy) return Count("skipped (busy)");
    Count("node freeze");
    (void)lab_->FreezeNode(nname, true);
    node_down_.insert(node);
    Schedule(hold, "thaw " + nname, [this, nname, node] {
      (void)lab_->FreezeNode(nname, false);
      node_down_.erase(node);
    });
    return;
  }
  if (r < 91) {
    Log("link down " + nname + " for " + std::to_string(hold));
    if (node_busy) return Count("skipped (busy)");
    Count("node link down");
    (void)lab_->SetNodeLink(nname, false);
    node_down_.insert(node);
    Schedule(hold, "link up " + nname, [this, nname, node] {
      (void)lab_->SetNodeLink(nname, true);
      node_down_.erase(node);
    });
    return;
  }
  if (r < 96) {
    Log("API server stop for " + std::to_string(hold + 2));
    if (!ApiUsable()) return Count("skipped (busy)");
    Count("API server stopped");
    (void)lab_->StopApiserver();
    apiserver_stopped_ = true;
    Schedule(hold + 2, "API server start", [this] {
      if (auto s = lab_->StartApiserver(); !s) {
        log::Warn("soak: API server restart", {{"error", s.error().message()}});
      }
      apiserver_stopped_ = false;
    });
    return;
  }
  Log("API server hang for " + std::to_string(hold));
  if (!ApiUsable()) return Count("skipped (busy)");
  Count("API server hung (SIGSTOP)");
  (void)lab_->SignalApiserver(SIGSTOP);
  apiserver_hung_ = true;
  Schedule(hold, "API server SIGCONT", [this] {
    (void)lab_->SignalApiserver(SIGCONT);
    apiserver_hung_ = false;
  });
}

Result<ApiView> Soak::ReadApi() {
  ApiView v;
  auto svcs = lab::GetJson(*lab_, {"get", "services", "-n", "default"});
  if (!svcs) return Fail(svcs.error());
  v.services = ParseServices(*svcs);
  auto groups = lab::GetJson(*lab_, {"get", "servicegroups.purelb.io", "-n", "purelb-system"});
  if (!groups) return Fail(groups.error());
  v.configs = ParseConfigs(*groups, "ServiceGroup");
  auto classes = lab::GetJson(*lab_, {"get", "loadbalancerclasses.lace-cni.io"});
  if (!classes) return Fail(classes.error());
  auto cl = ParseConfigs(*classes, "LoadBalancerClass");
  v.configs.insert(v.configs.end(), cl.begin(), cl.end());
  auto l2 = lab::GetJson(*lab_, {"get", "l2advertisements.lace-cni.io"});
  if (!l2) return Fail(l2.error());
  v.l2_node = ParseL2Advertisements(*l2);
  return v;
}

void Soak::ContinuousCheck() {
  if (!ApiUsable()) return;
  auto svcs = lab::GetJson(*lab_, {"get", "services", "-n", "default"});
  if (!svcs) return;
  const auto services = ParseServices(*svcs);
  ++checks_["addresses unchanged unless asked"];
  for (const auto& m : book_.Observe(services)) Violate(m);
  ++checks_["no unshared duplicate (continuous)"];
  const auto dups = UnsharedDuplicates(services);
  for (auto it = duplicate_since_.begin(); it != duplicate_since_.end();) {
    it = dups.count(it->first) ? std::next(it) : duplicate_since_.erase(it);
  }
  for (const auto& [ip, holders] : dups) {
    auto [it, fresh] = duplicate_since_.emplace(ip, Elapsed());
    if (!fresh && Elapsed() - it->second > static_cast<double>(o_.grace.count())) {
      std::string h;
      for (const auto& x : holders) h += " " + x;
      Violate(ip + " held by" + h + " for more than " + std::to_string(o_.grace.count()) + " s");
      it->second = Elapsed();  // reported once per grace period
    }
  }
}

std::vector<std::string> Soak::SettledCheck() {
  std::vector<std::string> fail;
  auto view = ReadApi();
  if (!view) return {"API not readable: " + view.error().message()};
  ++checks_["addresses unchanged unless asked"];
  for (const auto& m : book_.Observe(view->services)) Violate(m);

  ++checks_["no unshared duplicate"];
  for (const auto& [ip, holders] : UnsharedDuplicates(view->services)) {
    std::string h;
    for (const auto& x : holders) h += " " + x;
    fail.push_back(ip + " held by" + h);
  }
  ++checks_["config status inUse"];
  for (const auto& m : StatusMismatches(*view)) fail.push_back(m);
  for (const auto& m : PendingRequests(*view)) fail.push_back(m);

  // What every node has on eth0 and kube-lb0, of the soak's pools.
  std::map<std::string, std::set<std::string>> on_eth0, on_lb;  // ip -> nodes
  for (const auto& n : lab_->topology().nodes()) {
    std::string out;
    auto rc = lab::RunCommand({"ip", "-j", "addr", "show"}, &out, n.netns, false);
    if (!rc || *rc != 0) {
      fail.push_back("ip addr in " + n.name + " failed");
      continue;
    }
    auto j = ParseJson(out, "ip -j addr");
    if (!j) continue;
    for (const auto& link : *j) {
      const std::string ifname = link.value("ifname", "");
      if (!link.contains("addr_info")) continue;
      for (const auto& a : link["addr_info"]) {
        const std::string ip = a.value("local", "");
        if (!InSoakPools(ip)) continue;
        (ifname == "kube-lb0" ? on_lb : on_eth0)[ip].insert(n.name);
      }
    }
  }
  std::set<std::string> held;
  for (const auto& s : view->services) held.insert(s.ips.begin(), s.ips.end());
  ++checks_["no address on a node that no Service holds"];
  for (const auto* m : {&on_eth0, &on_lb}) {
    for (const auto& [ip, nodes] : *m) {
      if (held.count(ip)) continue;
      std::string ns;
      for (const auto& n : nodes) ns += " " + n;
      fail.push_back(ip + " on" + ns + " but no Service holds it");
    }
  }

  // Served or explained; for local addresses, the announcer alone holds and answers them.
  std::map<std::string, std::string> pod_node;
  for (const auto& p : lab_->pods()) pod_node[p.service] = p.node;
  std::vector<std::pair<std::string, std::string>> local;  // ip, expected node
  for (const auto& s : view->services) {
    ++checks_["served or explained"];
    if (s.ips.empty()) {
      if (s.allocated == false && !s.reason.empty()) continue;
      fail.push_back("Service " + s.name + " has no address and no AddressAllocated=False reason");
      continue;
    }
    for (const auto& ip : s.ips) {
      if (IsVirtual(ip)) {
        if (!on_lb.count(ip)) fail.push_back(s.name + " " + ip + " on no node's kube-lb0");
        continue;
      }
      std::string node;
      if (!s.class_name.empty()) {
        auto it = view->l2_node.find(ip);
        node = it == view->l2_node.end() ? "" : it->second;
      } else {
        node = IsV6(ip) ? s.announcer_v6 : s.announcer_v4;
      }
      if (node.empty()) {
        fail.push_back(s.name + " " + ip + " has no announcing node");
        continue;
      }
      if (s.etp == "Local" && pod_node.count(s.name) && pod_node[s.name] != node) {
        fail.push_back(s.name + " " + ip + " (ETP Local) announced by " + node +
                       ", its endpoint is on " + pod_node[s.name]);
      }
      const auto& holders = on_eth0[ip];
      if (holders.size() != 1 || !holders.count(node)) {
        std::string hs;
        for (const auto& h : holders) hs += " " + h;
        fail.push_back(s.name + " " + ip + " announced by " + node +
                       ", on eth0 of:" + (hs.empty() ? " none" : hs));
      }
      local.emplace_back(ip, node);
      ++checks_["HTTP through the address"];
      bool ok = false;
      std::string err;
      for (int attempt = 0; attempt < 3 && !ok; ++attempt) {
        auto r = lab::InNetns(lab_->topology().ClientNetns(),
                              [&] { return lab::ProbeOnce(ip, s.port, Ms(500)); });
        ok = r && r->ok;
        err = r ? r->error : r.error().message();
      }
      if (!ok)
        fail.push_back(s.name + " " + ip + ":" + std::to_string(s.port) + " no answer: " + err);
    }
  }
  // The wire: who answers ARP / NS for each local address.
  auto asked = lab::InNetns(lab_->topology().ClientNetns(), [&] {
    std::vector<std::string> out;
    auto v4 = lab::NeighborProber::Open("eth0", *net::IpAddress::Parse(lab::kObserverIpv4),
                                        lab::kObserverMac);
    auto v6 = lab::NeighborProber::Open("eth0", *net::IpAddress::Parse(lab::kObserverIpv6),
                                        lab::kObserverMac);
    if (!v4 || !v6) return std::vector<std::string>{"neighbor prober: cannot open"};
    for (const auto& [ip, node] : local) {
      ++checks_["one node answers ARP/NS, the announcer"];
      auto addr = net::IpAddress::Parse(ip);
      if (!addr) continue;
      auto& prober = IsV6(ip) ? *v6 : *v4;
      Result<std::vector<packet::MacAddress>> macs = std::vector<packet::MacAddress>{};
      for (int attempt = 0; attempt < 3; ++attempt) {
        macs = prober.Ask(*addr, Ms(60));
        if (macs && macs->size() == 1) break;
      }
      if (!macs) {
        out.push_back("ARP/NS for " + ip + ": " + macs.error().message());
        continue;
      }
      std::string who;
      for (const auto& m : *macs) {
        auto it = mac_node_.find(m.ToString());
        who += " " + (it == mac_node_.end() ? m.ToString() : it->second);
      }
      if (macs->size() != 1 || (*macs)[0] != node_mac_[node]) {
        out.push_back(ip + " announced by " + node +
                      ", answered by:" + (who.empty() ? " nobody" : who));
      }
    }
    return out;
  });
  if (!asked) {
    fail.push_back("neighbor probe: " + asked.error().message());
  } else {
    fail.insert(fail.end(), asked->begin(), asked->end());
  }
  return fail;
}

void Soak::PrintTable(double setup_s) {
  std::printf(
      "\n== pylon-dev soak: seed %llu, %.0f s of phases (%d quiet phases, each but the first after "
      "a fault phase), lab set-up "
      "%.0f s ==\n",
      static_cast<unsigned long long>(o_.seed), Elapsed(), phases_, setup_s);
  std::printf("decisions: %d, digest %016llx (the same seed gives the same digest)\n",
              decision_count_, static_cast<unsigned long long>(digest_));
  std::printf("\n| fault / action | count |\n| --- | ---: |\n");
  for (const auto& [k, v] : faults_) std::printf("| %s | %d |\n", k.c_str(), v);
  for (const auto& [k, v] : restarts_) std::printf("| %s | %d |\n", k.c_str(), v);
  std::printf("\n| invariant check | made |\n| --- | ---: |\n");
  for (const auto& [k, v] : checks_) std::printf("| %s | %ld |\n", k.c_str(), v);
  double worst = 0;
  for (double c : convergence_s_) worst = std::max(worst, c);
  std::printf("\nquiet phases converged: %d of %d (slowest %.1f s, bound %lld s)\n",
              converged_phases_, phases_, worst, static_cast<long long>(o_.bound.count()));
  std::printf("\n| violation (t s) | seed | what |\n| ---: | ---: | --- |\n");
  for (const auto& v : violations_) {
    std::printf("| %.0f | %llu | %s |\n", v.t_s, static_cast<unsigned long long>(o_.seed),
                v.what.c_str());
  }
  if (violations_.empty())
    std::printf("| - | %llu | none |\n", static_cast<unsigned long long>(o_.seed));
  std::fflush(stdout);
}

int Soak::Run() {
  const auto setup_start = SteadyClock::now();
  Say("soak: seed " + std::to_string(o_.seed) + ", lab " + o_.name + ", setting up");
  if (auto s = SetUp(); !s) {
    std::fprintf(stderr, "pylon-dev soak: lab set-up failed: %s\n", s.error().message().c_str());
    return cli::kExitFailure;
  }
  // The initial Services: each name exists with probability 3/4.
  for (int i = 0; i < kServices; ++i) {
    const bool create = Draw(4) != 0;
    if (!create) continue;
    ServiceState& s = services_[i];
    s.exists = true;
    s.config = static_cast<int>(Draw(kConfigCount));
    s.v6_primary = Draw(4) == 0;
    s.policy = static_cast<int>(Draw(3));
    s.requested = Draw(4) == 0;
    s.share = static_cast<int>(Draw(3));
    s.local_etp = Draw(3) == 0;
    ApplyService(i, "create", true);
  }
  const double setup_s = std::chrono::duration<double>(SteadyClock::now() - setup_start).count();
  t0_ = SteadyClock::now();
  const auto end = t0_ + o_.duration;
  // First a quiet phase: the initial state must converge too.
  bool quiet = true;
  while (!lab::Stopping()) {
    if (!quiet) {
      if (SteadyClock::now() + o_.fault_phase / 2 > end) break;
      Say("soak: t=" + std::to_string(static_cast<int>(Elapsed())) + "s fault phase");
      Log("fault phase");
      // A fixed number of steps per phase, whatever they take: phases hold the same decisions
      // on every run of a seed.
      const long steps = std::max<long>(
          1, static_cast<long>(std::chrono::duration_cast<Ms>(o_.fault_phase) / o_.step));
      auto next = SteadyClock::now();
      for (long k = 0; k < steps && !lab::Stopping(); ++k) {
        RunDue(false);
        Supervise();
        Decide();
        if (step_ % 2 == 0) ContinuousCheck();
        ++step_;
        next = std::max(next + o_.step, SteadyClock::now());
        std::this_thread::sleep_until(next);
      }
      // The faults stop.
      Log("quiet phase");
      RunDue(true);
      (void)proxy_->faults().Set({});
      for (int c = 0; c < kConfigCount; ++c) {
        if (!configs_[c].exists || !configs_[c].valid) ApplyConfig(c, true);
      }
    }
    quiet = false;
    ++phases_;
    const auto q0 = SteadyClock::now();
    std::vector<std::string> last;
    bool converged = false;
    while (SteadyClock::now() - q0 < o_.bound && !lab::Stopping()) {
      Supervise();
      ContinuousCheck();
      std::vector<std::string> now = SettledCheck();
      if (now != last) {
        const double at = std::chrono::duration<double>(SteadyClock::now() - q0).count();
        char head[64];
        std::snprintf(head, sizeof head, "t=%.0fs quiet +%.1f s: ", Elapsed(), at);
        quiet_log_ << head << (now.empty() ? std::string("settled") : now.front());
        if (now.size() > 1) quiet_log_ << " (and " << now.size() - 1 << " more)";
        quiet_log_ << "\n";
        quiet_log_.flush();
      }
      last = std::move(now);
      if (last.empty()) {
        converged = true;
        break;
      }
      std::this_thread::sleep_for(Ms(1000));
    }
    const double took = std::chrono::duration<double>(SteadyClock::now() - q0).count();
    if (converged) {
      ++converged_phases_;
      convergence_s_.push_back(took);
      book_.ClearAsks();
      char line[96];
      std::snprintf(line, sizeof line, "soak: t=%.0fs converged in %.1f s", Elapsed(), took);
      Say(line);
    } else if (!lab::Stopping()) {
      for (const auto& f : last) {
        Violate("not settled " + std::to_string(o_.bound.count()) + " s after the faults: " + f);
      }
      book_.ClearAsks();
    }
    if (!o_.keep_going && !violations_.empty()) break;
    if (SteadyClock::now() + o_.fault_phase / 2 > end) break;
  }
  PrintTable(setup_s);
  if (!violations_.empty()) {
    std::printf("\nlogs (kept after the lab is torn down): %s\n", lab_->config().dir.c_str());
  }
  return violations_.empty() ? cli::kExitOk : cli::kExitFailure;
}

}  // namespace

int RunSoak(const SoakOptions& options) {
  Soak soak(options);
  return soak.Run();
}

int SoakCommand(int argc, char** argv) {
  SoakOptions o;
  Duration duration = o.duration, fault = o.fault_phase, bound = o.bound, grace = o.grace,
           step = o.step;
  auto app = cli::NewCommand(
      "pylon-dev soak",
      "Random faults on a lab (kube-proxy, pods) for --duration from --seed, invariants checked\n"
      "against the API and the wire; one table per run; exit 1 on any violation\n"
      "(docs/reliability.md). Needs root.");
  app->add_option("--seed", o.seed, "seed of the decisions (the same seed, the same decisions)");
  cli::AddDuration(*app, "--duration", &duration, "fault and quiet phases, set-up excluded");
  cli::AddDuration(*app, "--fault-phase", &fault, "length of one fault phase");
  cli::AddDuration(*app, "--bound", &bound, "convergence allowed once the faults stop");
  cli::AddDuration(*app, "--grace", &grace, "an unshared duplicate tolerated this long in faults");
  cli::AddDuration(*app, "--step", &step, "one decision per step");
  app->add_option("--name", o.name, "the lab's name: 1-12 characters of [a-z0-9]");
  app->add_option("--nodes", o.nodes, "nodes in the lab")->check(CLI::Range(2, 6));
  app->add_option("--pylon,--binary", o.pylon, "the pylon binary (default: beside this one)")
      ->type_name("PATH");
  app->add_option("--k8s-bin-dir", o.k8s_bin_dir, "Kubernetes binaries (default: the build's)")
      ->type_name("DIR");
  bool stop_first = false;
  app->add_flag("--stop-at-first", stop_first, "stop at the first violation");
  if (auto code = cli::Parse(*app, argc, argv)) return *code;
  if (auto s = lab::ValidateLabName(o.name); !s) return cli::UsageError(*app, s.error().message());
  if (geteuid() != 0) return cli::UsageError(*app, "needs root (network namespaces)");
  using std::chrono::duration_cast;
  o.duration = duration_cast<std::chrono::seconds>(duration);
  o.fault_phase = duration_cast<std::chrono::seconds>(fault);
  o.bound = duration_cast<std::chrono::seconds>(bound);
  o.grace = duration_cast<std::chrono::seconds>(grace);
  o.step = duration_cast<Ms>(step);
  o.keep_going = !stop_first;
  log::SetComponent("soak");
  lab::InstallStopSignals();
  return RunSoak(o);
}

}  // namespace pylon::soak
