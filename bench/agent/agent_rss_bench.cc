// The real `pylon agent` process holding N local addresses (default 1000): a one-node lab
// (src/lab/lab.h: the real etcd + kube-apiserver, deploy/'s namespace, CRDs and RBAC, the
// components as their ServiceAccounts), N Services created with one `kubectl apply`, then the
// allocator and the agent. Prints the agent's VmRSS / VmHWM once it holds every address, and the
// time it took from the agent's start. Needs root.
// Run: build-agent/bench/agent/pylon_agent_rss_bench [N]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "lab/lab.h"
#include "lab/process.h"

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string Status(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return "?";
}

int CountAddresses(const std::string& netns) {
  std::string out;
  auto rc =
      pylon::lab::RunCommand({"ip", "-6", "-o", "addr", "show", "dev", "eth0"}, &out, netns, false);
  if (!rc || *rc != 0) return -1;
  // The pool is 2001:db8:1::1000-2001:db8:1::1fff, always written with four hex digits.
  int n = 0;
  for (std::size_t p = out.find("2001:db8:1::1"); p != std::string::npos;
       p = out.find("2001:db8:1::1", p + 1)) {
    if (out.compare(p + 16, 3, "/64") == 0) ++n;
  }
  return n;
}

namespace fs = std::filesystem;

int Run(int n, const std::string& name, const fs::path& dir) {
  pylon::lab::LabConfig lc;
  lc.name = name;
  lc.nodes = 1;
  lc.dir = dir.string();
  lc.binary = PYLON_BINARY;
  lc.heartbeat = false;
  lc.start_allocator = false;  // started once the Services exist, like the agent
  lc.start_agents = false;
  pylon::lab::Lab lab(lc);  // its destructor tears the lab down (before main removes `dir`)
  if (auto up = lab.Up(); !up) {
    std::fprintf(stderr, "lab: %s\n", up.error().message().c_str());
    return 1;
  }
  json items = json::array();
  items.push_back({{"apiVersion", "purelb.io/v1"},
                   {"kind", "ServiceGroup"},
                   {"metadata", {{"name", "default"}, {"namespace", "purelb-system"}}},
                   {"spec",
                    {{"local",
                      {{"v6pools", json::array({{{"pool", "2001:db8:1::1000-2001:db8:1::1fff"},
                                                 {"subnet", "2001:db8:1::/64"},
                                                 {"aggregation", "default"}}})}}}}}});
  for (int i = 0; i < n; ++i) {
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Service"},
                     {"metadata", {{"name", "svc" + std::to_string(i)}, {"namespace", "default"}}},
                     {"spec",
                      {{"type", "LoadBalancer"},
                       {"ipFamilies", json::array({"IPv6"})},
                       {"ipFamilyPolicy", "SingleStack"},
                       {"ports", json::array({{{"port", 80}, {"protocol", "TCP"}}})}}}});
  }
  std::ofstream(dir / "objects.json")
      << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
  if (auto r = lab.Kubectl({"apply", "-f", (dir / "objects.json").string()}); !r) {
    std::fprintf(stderr, "kubectl apply: %s\n", r.error().message().c_str());
    return 1;
  }
  const auto& node = lab.topology().nodes()[0];
  if (auto st = lab.StartAllocator(); !st) {
    std::fprintf(stderr, "allocator: %s\n", st.error().message().c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (auto st = lab.StartAgent(node.name); !st) {
    std::fprintf(stderr, "agent: %s\n", st.error().message().c_str());
    return 1;
  }
  const pid_t agent = lab.Pids()["agent-" + node.name];
  int held = 0;
  for (int i = 0; i < 1200 && held < n; ++i) {
    std::this_thread::sleep_for(100ms);
    held = CountAddresses(node.netns);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::this_thread::sleep_for(3s);  // a few renewal rounds
  std::printf("addresses held: %d of %d after %.1f s\n", held, n, secs);
  std::printf("agent VmRSS:%s\nagent VmHWM:%s\n", Status(agent, "VmRSS").c_str(),
              Status(agent, "VmHWM").c_str());
  (void)lab.SignalAgent(node.name, SIGTERM);
  (void)lab.WaitAgentExit(node.name, 10000);
  std::printf("after SIGTERM: %d addresses left on eth0\n", CountAddresses(node.netns));
  return held == n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  if (geteuid() != 0) {
    std::fprintf(stderr, "needs root\n");
    return 2;
  }
  const std::string name = "rss" + std::to_string(getpid() % 10000);
  const fs::path dir = fs::temp_directory_path() / ("pylon-agent-rss-" + name);
  const int rc = Run(n, name, dir);
  fs::remove_all(dir);
  return rc;
}
