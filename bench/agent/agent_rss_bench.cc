// The real `pylon agent` process holding N local addresses (default 1000): one lab node, the API
// server and the allocator in the LAN namespace, N Services created with one `kubectl apply`.
// Prints the agent's VmRSS / VmHWM once it holds every address, and the time it took. Needs root.
// Run: build-agent/bench/agent/pylon_agent_rss_bench [N]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "lab/process.h"
#include "lab/topology.h"

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

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  if (geteuid() != 0) {
    std::fprintf(stderr, "needs root\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string name = "rss" + std::to_string(getpid() % 10000);
  const fs::path dir = fs::temp_directory_path() / ("pylon-agent-rss-" + name);
  fs::create_directories(dir);
  pylon::lab::Topology topo(name, 1);
  if (auto up = topo.Up(); !up) {
    std::fprintf(stderr, "lab: %s\n", up.error().message().c_str());
    return 1;
  }
  struct Down {
    pylon::lab::Topology& t;
    ~Down() { (void)t.Down(); }
  } down{topo};
  const std::string kc = (dir / "kubeconfig").string();
  const std::string lan = topo.LanNetns();
  auto api = pylon::lab::Process::Spawn(
      {{PYLON_BINARY, "apiserver", "--listen", "192.0.2.1:0", "--kubeconfig-out", kc},
       lan,
       (dir / "apiserver.log").string(),
       {}});
  if (!api) return 1;
  auto kubectl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"kubectl", "--kubeconfig", kc});
    std::string out;
    auto rc = pylon::lab::RunCommand(args, &out, lan);
    return rc && *rc == 0;
  };
  for (int i = 0; i < 200 && !kubectl({"get", "namespaces"}); ++i)
    std::this_thread::sleep_for(100ms);
  for (const auto& e : fs::directory_iterator(PYLON_SOURCE_DIR "/deploy/crds")) {
    kubectl({"apply", "--validate=false", "-f", e.path().string()});
  }
  json items = json::array();
  items.push_back(
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "purelb-system"}}}});
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
  if (!kubectl({"apply", "--validate=false", "-f", (dir / "objects.json").string()})) {
    std::fprintf(stderr, "kubectl apply failed\n");
    return 1;
  }
  auto alloc = pylon::lab::Process::Spawn(
      {{PYLON_BINARY, "allocator", "--kubeconfig", kc, "--metrics-addr", "127.0.0.1:0"},
       lan,
       (dir / "allocator.log").string(),
       {}});
  const auto& node = topo.nodes()[0];
  const auto t0 = std::chrono::steady_clock::now();
  auto agent =
      pylon::lab::Process::Spawn({{PYLON_BINARY, "agent", "--kubeconfig", kc, "--node-name",
                                   node.name, "--state-file", (dir / "state").string()},
                                  node.netns,
                                  (dir / "agent.log").string(),
                                  {}});
  if (!alloc || !agent) return 1;
  int held = 0;
  for (int i = 0; i < 1200 && held < n; ++i) {
    std::this_thread::sleep_for(100ms);
    held = CountAddresses(node.netns);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::this_thread::sleep_for(3s);  // a few renewal rounds
  std::printf("addresses held: %d of %d after %.1f s\n", held, n, secs);
  std::printf("agent VmRSS:%s\nagent VmHWM:%s\n", Status(agent->pid(), "VmRSS").c_str(),
              Status(agent->pid(), "VmHWM").c_str());
  agent->Stop(10000ms);
  std::printf("after SIGTERM: %d addresses left on eth0\n", CountAddresses(node.netns));
  fs::remove_all(dir);
  return held == n ? 0 : 1;
}
