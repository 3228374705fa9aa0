// The lab's BGP side (LabConfig::bgp; docs/bgp.md "Lab"): BIRD 2 on the gateway as the upstream
// router, peering with every node through dynamic neighbours (one range per family), with BFD
// and multipath routes into its kernel; BIRD 2 on every node, configured by that node's agent;
// a WAN client behind the gateway.
#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "lab/files.h"
#include "lab/lab.h"

namespace pylon::lab {

namespace fs = std::filesystem;

namespace {

// A session that went down (BFD, hold timer) is accepted again after `error wait time`: BIRD's
// default of 60 s would keep a thawed node out for a minute.
std::string RouterConfig() {
  const std::string as = std::to_string(Lab::kRouterAsn);
  return "# The lab's upstream router (pylon lab --bgp): every node peers with it.\n"
         "router id 192.0.2.1;\n"
         "log stderr all;\n"
         "debug protocols { states, events };\n"
         "protocol device { }\n"
         "protocol kernel k4 {\n  ipv4 { import none; export all; };\n  merge paths on limit "
         "64;\n}\n"
         "protocol kernel k6 {\n  ipv6 { import none; export all; };\n  merge paths on limit "
         "64;\n}\n"
         "protocol bfd { interface \"br0\" { interval 100 ms; multiplier 3; }; }\n"
         "protocol bgp nodes {\n"
         "  local 192.0.2.1 as " +
         as +
         ";\n"
         "  neighbor range 192.0.2.0/24 external;\n"
         "  dynamic name \"node\";\n"
         "  bfd on;\n"
         "  error wait time 1, 5;\n"
         "  ipv4 { import all; export none; };\n"
         "}\n"
         "protocol bgp nodes6 {\n"
         "  local 2001:db8:f00d::1 as " +
         as +
         ";\n"
         "  neighbor range 2001:db8:f00d::/64 external;\n"
         "  dynamic name \"nodesix\";\n"
         "  bfd on;\n"
         "  error wait time 1, 5;\n"
         "  ipv6 { import all; export none; };\n"
         "}\n";
}

// What the lab creates for its agents: the router as a peer of every node, in both families,
// with BFD at 100 ms x 3. IPv6 peers on LAN B: on LAN A a node has only a /128 (seed 000's
// shape), and BIRD starts a direct (single-hop) session only with a neighbour inside one of the
// interface's prefixes ("Waiting for ... to become my neighbor"); such a node needs ebgpMultiHop.
std::string DefaultObjects() {
  const std::string peer = std::to_string(Lab::kRouterAsn);
  const std::string mine = std::to_string(Lab::kNodeAsn);
  return "apiVersion: lace-cni.io/v1alpha1\nkind: BFDProfile\nmetadata:\n  name: lab-fast\n"
         "spec:\n  receiveInterval: 100\n  transmitInterval: 100\n  detectMultiplier: 3\n"
         "---\n"
         "apiVersion: lace-cni.io/v1alpha1\nkind: BGPPeer\nmetadata:\n  name: lab-router\n"
         "spec:\n  peerAddress: 192.0.2.1\n  peerASN: " +
         peer + "\n  myASN: " + mine +
         "\n  bfdProfile: lab-fast\n"
         "---\n"
         "apiVersion: lace-cni.io/v1alpha1\nkind: BGPPeer\nmetadata:\n  name: lab-router-v6\n"
         "spec:\n  peerAddress: 2001:db8:f00d::1\n  peerASN: " +
         peer + "\n  myASN: " + mine + "\n  bfdProfile: lab-fast\n";
}

std::string FindBird() {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/sbin"}) {
    std::string p = std::string(dir) + "/bird";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

}  // namespace

std::string Lab::BirdSocket(const std::string& node) const { return Path("bird-" + node + ".ctl"); }
std::string Lab::BirdConfig(const std::string& node) const {
  return Path("bird-" + node + ".conf");
}

Status Lab::StartNodeBird(const std::string& node) {
  const LabNode* n = FindNode(node);
  if (!n) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  const std::string bird = FindBird();
  if (bird.empty()) return Fail(ErrorCode::kNotFound, "no bird binary (Debian package bird2)");
  // A configuration BIRD can start with; the agent replaces it at once (src/agent/bgp_sync.h).
  std::error_code ec;
  if (!fs::exists(BirdConfig(node), ec)) {
    if (auto s = WriteTextFile(
            BirdConfig(node), "router id " + n->ipv4 + ";\nlog stderr all;\nprotocol device { }\n");
        !s) {
      return s;
    }
  }
  SpawnOptions o;
  o.netns = n->netns;
  o.argv = {bird, "-f",
            "-c", BirdConfig(node),
            "-s", BirdSocket(node),
            "-P", Path("bird-" + node + ".pid")};
  return Spawn("bird-" + node, o);
}

Status Lab::SignalNodeBird(const std::string& node, int sig) {
  auto it = procs_.find("bird-" + node);
  if (it == procs_.end()) return Fail(ErrorCode::kNotFound, "no BIRD running on " + node);
  return it->second.Signal(sig);
}

Status Lab::StopNodeBird(const std::string& node) {
  auto it = procs_.find("bird-" + node);
  if (it == procs_.end()) return Ok();
  it->second.Stop(std::chrono::milliseconds(2000));
  procs_.erase(it);
  return WriteState();
}

Status Lab::StartBgp() {
  const std::string bird = FindBird();
  if (bird.empty()) {
    return Fail(ErrorCode::kNotFound,
                "--bgp needs BIRD 2 (Debian package bird2; scripts/deps.sh installs it)");
  }
  if (auto s = topology_.AddWan(); !s) return s;
  // Installed as a user does (config().install), the agents' pods run BIRD as their sidecar and
  // the install brought its RBAC; the lab adds only the router and the BGP objects.
  const bool own_birds = config_.install.empty();
  if (own_birds) {
    if (auto r =
            Kubectl({"apply", "-f", config_.deploy_dir + "/components/bgp/rbac-agent-bgp.yaml"});
        !r) {
      return Fail(r.error());
    }
  }
  if (auto s = WriteTextFile(Path("bird-router.conf"), RouterConfig()); !s) return s;
  SpawnOptions o;
  o.netns = topology_.LanNetns();
  o.argv = {bird, "-f",
            "-c", Path("bird-router.conf"),
            "-s", Path("bird-router.ctl"),
            "-P", Path("bird-router.pid")};
  if (auto s = Spawn("bird-router", o); !s) return s;
  for (const auto& n : topology_.nodes()) {
    if (!own_birds) break;
    if (auto s = StartNodeBird(n.name); !s) return s;
  }
  if (auto s = Apply(DefaultObjects()); !s) return s;
  log::Info("BGP up: BIRD on the gateway (AS " + std::to_string(kRouterAsn) +
                ") peers with BIRD on every node (AS " + std::to_string(kNodeAsn) + ")",
            {{"lab", config_.name}});
  return Ok();
}

Result<std::string> Lab::RouterBird(const std::string& command) const {
  return RunCommandChecked({"birdc", "-s", Path("bird-router.ctl"), command});
}

Result<std::string> Lab::NodeBird(const std::string& node, const std::string& command) const {
  return RunCommandChecked({"birdc", "-s", BirdSocket(node), command});
}

Result<std::vector<std::string>> Lab::RouterNexthops(const std::string& prefix) const {
  const bool v6 = prefix.find(':') != std::string::npos;
  auto out = RunCommandChecked({"ip", v6 ? "-6" : "-4", "-j", "route", "show", "exact", prefix},
                               topology_.LanNetns());
  if (!out) return Fail(out.error());
  std::vector<std::string> hops;
  try {
    auto routes = nlohmann::json::parse(*out);
    for (const auto& r : routes) {
      if (r.contains("gateway")) hops.push_back(r["gateway"].get<std::string>());
      if (r.contains("nexthops")) {
        for (const auto& h : r["nexthops"]) {
          if (h.contains("gateway")) hops.push_back(h["gateway"].get<std::string>());
        }
      }
    }
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kInternal, std::string("ip -j route: ") + e.what());
  }
  std::sort(hops.begin(), hops.end());
  return hops;
}

Status Lab::FreezeNode(const std::string& node, bool frozen) {
  const LabNode* n = FindNode(node);
  if (!n) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  const int sig = frozen ? SIGSTOP : SIGCONT;
  // Port first when freezing (nothing leaves the node any more), last when thawing.
  if (frozen) {
    if (auto s = topology_.SetNodePortForwarding(*n, false); !s) return s;
  }
  // Every process of the node: agent, BIRD, responder, kube-proxy, API forwarder, and its pods.
  std::vector<std::string> keys = {"agent-" + node,      "bird-" + node,        "serve-" + node,
                                   "kube-proxy-" + node, "api-forward-" + node, "kubelet-" + node,
                                   "containerd-" + node, "api-endpoint-" + node};
  for (const auto& pod : pods_) {
    if (pod.node == node) keys.push_back("pod-" + pod.name);
  }
  for (const std::string& key : keys) {
    auto it = procs_.find(key);
    if (it != procs_.end()) (void)it->second.Signal(sig);
  }
  if (config_.kubelet) {
    // The node's pods, the agent's and BIRD's among them: everything under its cgroupRoot.
    const std::string state =
        "/sys/fs/cgroup/freezer" + KubeletNodeOf(*n).CgroupRoot() + "/freezer.state";
    if (auto s = WriteTextFile(state, frozen ? "FROZEN" : "THAWED"); !s) return s;
  }
  if (!frozen) return topology_.SetNodePortForwarding(*n, true);
  return Ok();
}

}  // namespace pylon::lab
