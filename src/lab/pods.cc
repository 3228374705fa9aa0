#include "lab/pods.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <thread>

#include "lab/lab.h"
#include "lab/netns.h"
#include "lab/process.h"
#include "lab/responder.h"

namespace pylon::lab {
namespace {

Status Run(const std::vector<std::string>& argv, const std::string& netns = "") {
  auto r = RunCommandChecked(argv, netns);
  if (!r) return Fail(r.error());
  return Ok();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

int NodeIndex(const Topology& topology, const std::string& node) {
  const auto& nodes = topology.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == node) return static_cast<int>(i) + 1;
  }
  return 0;
}

Status SetUpPodRouting(const Topology& topology) {
  const auto& nodes = topology.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    for (const auto& kv : {"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"}) {
      if (auto s = Run({"sysctl", "-q", "-w", kv}, n.netns); !s) return s;
    }
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (j == i) continue;
      const std::string idx = std::to_string(j + 1);
      if (auto s = Run({"ip", "route", "replace", "10.244." + idx + ".0/24", "via", nodes[j].ipv4},
                       n.netns);
          !s) {
        return s;
      }
      if (auto s = Run({"ip", "-6", "route", "replace", "fd00:10:244:" + idx + "::/64", "via",
                        nodes[j].ipv6},
                       n.netns);
          !s) {
        return s;
      }
    }
  }
  return Ok();
}

Status CreatePodNetwork(const LabNode& node, const LabPod& pod) {
  auto fail = [&](const Status& s) {
    (void)DeletePodNetwork(pod);
    return s;
  };
  if (auto s = Run({"ip", "netns", "add", pod.netns}); !s) return s;
  const std::vector<std::vector<std::string>> host = {
      {"ip", "link", "add", "eth0", "netns", pod.netns, "type", "veth", "peer", "name",
       pod.host_veth, "netns", node.netns},
  };
  for (const auto& a : host) {
    if (auto s = Run(a); !s) return fail(s);
  }
  const std::vector<std::vector<std::string>> in_pod = {
      {"sysctl", "-q", "-w", "net.ipv6.conf.all.accept_dad=0"},
      {"sysctl", "-q", "-w", "net.ipv6.conf.default.accept_dad=0"},
      {"ip", "link", "set", "lo", "up"},
      {"ip", "link", "set", "eth0", "up"},
      {"ip", "addr", "add", pod.ipv4 + "/32", "dev", "eth0"},
      {"ip", "addr", "add", pod.ipv6 + "/128", "dev", "eth0", "nodad"},
      {"ip", "route", "add", "169.254.1.1", "dev", "eth0", "scope", "link"},
      {"ip", "route", "add", "default", "via", "169.254.1.1", "dev", "eth0"},
      {"ip", "-6", "route", "add", "default", "via", "fe80::1", "dev", "eth0"},
  };
  const std::vector<std::vector<std::string>> in_node = {
      {"sysctl", "-q", "-w", "net.ipv6.conf." + pod.host_veth + ".accept_dad=0"},
      {"ip", "link", "set", pod.host_veth, "up"},
      {"ip", "addr", "add", "169.254.1.1/32", "dev", pod.host_veth},
      {"ip", "addr", "add", "fe80::1/64", "dev", pod.host_veth, "nodad"},
      {"ip", "route", "replace", pod.ipv4 + "/32", "dev", pod.host_veth},
      {"ip", "-6", "route", "replace", pod.ipv6 + "/128", "dev", pod.host_veth},
  };
  for (const auto& a : in_node) {
    if (auto s = Run(a, node.netns); !s) return fail(s);
  }
  for (const auto& a : in_pod) {
    if (auto s = Run(a, pod.netns); !s) return fail(s);
  }
  return Ok();
}

Status DeletePodNetwork(const LabPod& pod) {
  // The pod's processes are the lab's children and stopped by it; anything left goes too.
  std::string out;
  auto rc = RunCommand({"ip", "netns", "pids", pod.netns}, &out, "", /*merge_stderr=*/false);
  if (rc && *rc == 0) {
    std::istringstream in(out);
    pid_t pid;
    while (in >> pid) kill(pid, SIGKILL);
  }
  out.clear();
  rc = RunCommand({"ip", "netns", "del", pod.netns}, &out);
  if (!rc) return Fail(rc.error());
  if (*rc != 0 && out.find("No such file") == std::string::npos) {
    return Fail(ErrorCode::kSystem, "ip netns del " + pod.netns + ": " + out);
  }
  return Ok();
}

std::string EndpointSliceYaml(const std::string& ns, const std::string& service,
                              const std::string& address_type, const std::vector<LabPod>& pods) {
  const bool v6 = address_type == "IPv6";
  std::string y =
      "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: " + service +
      "-lab-" + Lower(address_type) + "\n  namespace: " + ns +
      "\n  labels:\n    kubernetes.io/service-name: " + service +
      "\n    endpointslice.kubernetes.io/managed-by: lab.pylon.io\n"
      "addressType: " +
      address_type + "\n";
  int port = 8080;
  if (pods.empty()) {
    y += "endpoints: []\n";
  } else {
    y += "endpoints:\n";
    for (const auto& p : pods) {
      port = p.port;
      const std::string r = p.ready ? "true" : "false";
      y += "- addresses: [\"" + (v6 ? p.ipv6 : p.ipv4) + "\"]\n  nodeName: " + p.node +
           "\n  targetRef: {kind: Pod, namespace: " + ns + ", name: " + p.name +
           "}\n  conditions: {ready: " + r + ", serving: " + r + ", terminating: false}\n";
    }
  }
  y += "ports:\n- name: \"\"\n  port: " + std::to_string(port) + "\n  protocol: TCP\n";
  return y;
}

// --- Lab's pod members (lab.h) ---

const LabPod* Lab::FindPod(const std::string& name) const {
  for (const auto& p : pods_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Status Lab::WriteEndpointSlices(const std::string& ns, const std::string& service) const {
  std::vector<LabPod> of;
  for (const auto& p : pods_) {
    if (p.namespace_ == ns && p.service == service) of.push_back(p);
  }
  for (const char* family : {"IPv4", "IPv6"}) {
    if (auto s = Apply(EndpointSliceYaml(ns, service, family, of)); !s) return s;
  }
  return Ok();
}

Status Lab::AddPod(const std::string& node, const std::string& name, const std::string& service,
                   int port) {
  if (FindPod(name) != nullptr) {
    return Fail(ErrorCode::kAlreadyExists, "pod " + name + " exists in lab " + config_.name);
  }
  const int i = NodeIndex(topology_, node);
  if (i == 0) return Fail(ErrorCode::kNotFound, "no node " + node + " in lab " + config_.name);
  const LabNode& n = topology_.nodes()[static_cast<size_t>(i - 1)];
  std::vector<bool> used(11, false);
  for (const auto& p : pods_) {
    if (p.node == node) used[static_cast<size_t>(std::stoi(p.host_veth.substr(2)))] = true;
  }
  int k = 1;
  while (k <= 9 && used[static_cast<size_t>(k)]) ++k;
  if (k > 9) return Fail(ErrorCode::kInvalidArgument, "at most 9 pods per node in the lab");
  LabPod p;
  p.name = name;
  p.node = node;
  auto slash = service.find('/');
  if (slash != std::string::npos) {
    p.namespace_ = service.substr(0, slash);
    p.service = service.substr(slash + 1);
  } else {
    p.service = service;
  }
  p.netns = "pylon-" + config_.name + "-p" + std::to_string(i) + std::to_string(k);
  p.host_veth = "vp" + std::to_string(k);
  p.ipv4 = "10.244." + std::to_string(i) + "." + std::to_string(10 + k);
  p.ipv6 = "fd00:10:244:" + std::to_string(i) + "::" + std::to_string(10 + k);
  p.port = port;
  if (!pod_routing_) {
    if (auto s = SetUpPodRouting(topology_); !s) return s;
    pod_routing_ = true;
  }
  if (auto s = CreatePodNetwork(n, p); !s) return s;
  SpawnOptions o;
  o.netns = p.netns;
  o.argv = {config_.dev_binary,
            "lab",
            "serve",
            "--port",
            std::to_string(port),
            "--text",
            "pod=" + name + " node=" + node,
            "--report-peer=true"};
  if (auto s = Spawn("pod-" + name, o); !s) {
    (void)DeletePodNetwork(p);
    return s;
  }
  // Listening before its endpoints are published (from the node, as a kubelet's probe would).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    auto r =
        InNetns(n.netns, [&] { return ProbeOnce(p.ipv4, port, std::chrono::milliseconds(300)); });
    if (r && r->ok) break;
    if (std::chrono::steady_clock::now() > deadline) {
      procs_.erase("pod-" + name);
      (void)DeletePodNetwork(p);
      (void)WriteState();
      return Fail(ErrorCode::kUnavailable, "pod " + name + " does not answer on " + p.ipv4 + ":" +
                                               std::to_string(port) + " from " + node + " (" +
                                               (r ? r->error : r.error().message()) + "); see " +
                                               Path("pod-" + name + ".log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pods_.push_back(p);
  return WriteEndpointSlices(p.namespace_, p.service);
}

Status Lab::SetPodReady(const std::string& name, bool ready) {
  for (auto& p : pods_) {
    if (p.name != name) continue;
    p.ready = ready;
    return WriteEndpointSlices(p.namespace_, p.service);
  }
  return Fail(ErrorCode::kNotFound, "no pod " + name + " in lab " + config_.name);
}

Status Lab::DeletePod(const std::string& name) {
  auto it =
      std::find_if(pods_.begin(), pods_.end(), [&](const LabPod& p) { return p.name == name; });
  if (it == pods_.end()) return Fail(ErrorCode::kNotFound, "no pod " + name);
  LabPod p = *it;
  pods_.erase(it);
  auto proc = procs_.find("pod-" + name);
  if (proc != procs_.end()) {
    proc->second.Stop(std::chrono::milliseconds(2000));
    procs_.erase(proc);
  }
  (void)WriteState();
  auto slices = WriteEndpointSlices(p.namespace_, p.service);
  auto net = DeletePodNetwork(p);
  if (!slices) return slices;
  return net;
}

}  // namespace pylon::lab
