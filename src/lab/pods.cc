#include "lab/pods.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "lab/process.h"

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

}  // namespace pylon::lab
