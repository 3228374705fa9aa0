// Needs root: three real agents in node namespaces on a bridge, a client namespace, and a lab's
// real control plane (src/lab/lab.h: kube-apiserver on the host, reached from every node at
// 127.0.0.1:6443; the agents authenticate as deploy/'s agent ServiceAccount). The test writes the
// ServiceGroup, the Service and its status ingress itself, then checks that exactly one node holds
// each address, that the client's neighbour table names the winner's MAC, and that the address
// and the client's neighbour entry move when the winner is stopped with SIGTERM and with SIGKILL.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/lab.h"
#include "lab/process.h"
#include "lab/topology.h"
#include "support/apiserver.h"
#include "support/binaries.h"
#include "support/eventually.h"
#include "support/k8s/objects.h"
#include "support/test_dir.h"

namespace pylon::agent {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kV4 = "192.0.2.100";
constexpr const char* kV6 = "2001:db8:1::100";

// Every wait below names its deadline; polled every 100 ms.
constexpr test_support::Poll Eventually{.timeout = seconds(10), .every = milliseconds(100)};

std::string Output(const std::vector<std::string>& argv, const std::string& netns = "") {
  std::string out;
  auto rc = lab::RunCommand(argv, &out, netns, /*merge_stderr=*/false);
  return rc && *rc == 0 ? out : std::string();
}

class AgentNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    PYLON_NEED_APISERVER();
    if (!std::filesystem::exists(test_support::ProductBinary())) {
      GTEST_SKIP() << "pylon binary not built";
    }
    name_ = "ag" + std::to_string(getpid() % 100000);
    dir_ = std::filesystem::temp_directory_path() / ("pylon-agent-test-" + name_);
    std::filesystem::create_directories(dir_);
    // The lab's network and control plane only: the test runs the agents itself and plays the
    // allocator.
    lab::LabConfig cfg;
    cfg.name = name_;
    cfg.nodes = 3;
    cfg.dir = dir_.string();
    cfg.binary = test_support::ProductBinary();
    cfg.heartbeat = false;
    cfg.start_allocator = false;
    cfg.start_agents = false;
    lab_ = std::make_unique<lab::Lab>(cfg);
    auto up = lab_->Up();
    ASSERT_TRUE(up) << up.error().message();
    topo_ = &lab_->topology();
  }
  void TearDown() override {
    agents_.clear();
    if (lab_) (void)lab_->Down();
    if (!HasFailure()) test_support::RemoveTestDir(dir_);
  }

  std::string AgentKubeconfig() const { return lab_->Path("kubeconfig-agent"); }

  std::string Kubectl(std::vector<std::string> args) {
    auto r = lab_->Kubectl(args);
    return r ? *r : std::string();
  }
  void KubectlApply(const json& obj) {
    auto s = lab_->Apply(obj.dump());
    ASSERT_TRUE(s) << s.error().message();
  }

  // Short leases by default (the lease-only failover tests); `extra` flags and `env` replace
  // them for the heartbeat tests. `log_suffix` keeps the log of an earlier run of the same node.
  void StartAgent(int i, const std::vector<std::string>& extra = {},
                  std::vector<std::string> env = {"PURELB_LEASE_DURATION=3s",
                                                  "PURELB_RENEW_DEADLINE=2500ms",
                                                  "PURELB_RETRY_PERIOD=500ms"},
                  const std::string& log_suffix = "") {
    const auto& node = topo_->nodes()[static_cast<std::size_t>(i)];
    const std::string pylon = test_support::ProductBinary();
    std::vector<std::string> argv = {pylon,
                                     "agent",
                                     "--kubeconfig",
                                     AgentKubeconfig(),
                                     "--node-name",
                                     node.name,
                                     "--namespace",
                                     "purelb-system",
                                     "--metrics-addr",
                                     "127.0.0.1:7473",
                                     "--state-file",
                                     (dir_ / ("state-" + node.name)).string(),
                                     "--garp-interval",
                                     "200ms",
                                     "--kube-proxy-check=off"};  // no kube-proxy here
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto p = lab::Process::Spawn({argv, node.netns,
                                  (dir_ / ("agent-" + node.name + log_suffix + ".log")).string(),
                                  std::move(env)});
    ASSERT_TRUE(p) << p.error().message();
    agents_[static_cast<std::size_t>(i)] = std::make_unique<lab::Process>(std::move(*p));
  }

  // Nodes whose eth0 holds `ip` (any prefix length).
  std::vector<int> Holders(const std::string& ip) {
    std::vector<int> out;
    for (std::size_t i = 0; i < topo_->nodes().size(); ++i) {
      std::string text =
          Output({"ip", "-j", "addr", "show", "dev", "eth0"}, topo_->nodes()[i].netns);
      auto j = json::parse(text, nullptr, false);
      if (!j.is_array()) continue;
      for (const auto& link : j) {
        for (const auto& a : link.value("addr_info", json::array())) {
          if (a.value("local", "") == ip) out.push_back(static_cast<int>(i));
        }
      }
    }
    return out;
  }
  std::string Mac(int i) {
    auto j = json::parse(Output({"ip", "-j", "link", "show", "dev", "eth0"},
                                topo_->nodes()[static_cast<std::size_t>(i)].netns),
                         nullptr, false);
    if (!j.is_array() || j.empty()) return "";
    return j[0].value("address", "");
  }
  // The client's neighbour entry for `ip`: its MAC, or "" when none.
  std::string ClientNeighbour(const std::string& ip) {
    auto j = json::parse(Output({"ip", "-j", "neigh", "show", ip}, topo_->ClientNetns()), nullptr,
                         false);
    if (!j.is_array() || j.empty()) return "";
    return j[0].value("lladdr", "");
  }
  bool ClientPings(const std::string& ip) {
    std::string out;
    auto rc = lab::RunCommand({"ping", "-c1", "-W1", ip}, &out, topo_->ClientNetns());
    return rc && *rc == 0;
  }
  std::string Annotation(const std::string& key) {
    auto j = json::parse(Kubectl({"get", "service", "web", "-n", "default", "-o", "json"}), nullptr,
                         false);
    if (!j.is_object()) return "";
    return j["metadata"].value("annotations", json::object()).value(key, "");
  }
  // The single holder of `ip`, once there is exactly one; -1 if that does not happen in time.
  int SoleHolder(const std::string& ip, const std::set<int>& among) {
    int holder = -1;
    Eventually(
        [&] {
          auto h = Holders(ip);
          holder = h.size() == 1 && among.count(h[0]) ? h[0] : -1;
          return holder >= 0;
        },
        seconds(20));
    return holder;
  }
  void ExpectHostAddressesIntact() {
    for (const auto& n : topo_->nodes()) {
      std::string text = Output({"ip", "addr", "show", "dev", "eth0"}, n.netns);
      EXPECT_NE(text.find(n.ipv4 + "/24"), std::string::npos) << n.name << "\n" << text;
      EXPECT_NE(text.find(n.ipv4_b + "/24"), std::string::npos) << n.name;
      EXPECT_NE(text.find(n.ipv6 + "/128"), std::string::npos) << n.name;
      EXPECT_NE(text.find(n.ipv6_b + "/64"), std::string::npos) << n.name;
      std::string routes = Output({"ip", "-6", "route", "show", "proto", "ra"}, n.netns);
      EXPECT_NE(routes.find("2001:db8:1::/64"), std::string::npos) << n.name << ": " << routes;
    }
  }

  // Node `node`'s /metrics (served inside its namespace) once it contains `want`; the last answer
  // and a test failure if that does not happen in 5 s.
  std::string MetricsWith(int node, const std::string& want) {
    std::string metrics;
    EXPECT_TRUE(Eventually(
        [&] {
          metrics = Output({"curl", "-sf", "http://127.0.0.1:7473/metrics"},
                           topo_->nodes()[static_cast<std::size_t>(node)].netns);
          return metrics.find(want) != std::string::npos;
        },
        seconds(5)))
        << want << " not in:\n"
        << metrics;
    return metrics;
  }

  // Checks that the client reaches `ip` and its neighbour entry names node `holder`'s MAC.
  void ExpectClientReaches(const std::string& ip, int holder) {
    const std::string mac = Mac(holder);
    ASSERT_FALSE(mac.empty());
    EXPECT_TRUE(Eventually([&] { return ClientPings(ip); }, seconds(10))) << ip;
    EXPECT_TRUE(Eventually([&] { return ClientNeighbour(ip) == mac; }, seconds(5)))
        << ip << ": client has " << ClientNeighbour(ip) << ", holder node" << holder + 1 << " has "
        << mac;
  }

  // A ServiceGroup and the dual-stack Service `web` with its status ingress kV4 / kV6 (the
  // allocator's part, written by the test). The lab installed the namespace, CRDs and RBAC.
  void SetUpCluster() {
    KubectlApply(test_support::LocalServiceGroup(
        "default",
        json::array({test_support::LocalPool("192.0.2.100-192.0.2.120", "192.0.2.0/24")}),
        json::array(
            {test_support::LocalPool("2001:db8:1::100-2001:db8:1::1ff", "2001:db8:1::/64")})));
    KubectlApply({{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"metadata", {{"name", "web"}, {"namespace", "default"}}},
                  {"spec",
                   {{"type", "LoadBalancer"},
                    {"ipFamilyPolicy", "PreferDualStack"},
                    {"ipFamilies", json::array({"IPv4", "IPv6"})},
                    {"ports", json::array({{{"port", 80}, {"protocol", "TCP"}}})}}}});
    const json status = {{"status",
                          {{"loadBalancer",
                            {{"ingress", json::array({{{"ip", kV4}, {"ipMode", "VIP"}},
                                                      {{"ip", kV6}, {"ipMode", "VIP"}}})}}}}}};
    ASSERT_FALSE(Kubectl({"patch", "service", "web", "-n", "default", "--subresource=status",
                          "--type=merge", "-p", status.dump()})
                     .empty());
  }

  std::string name_;
  std::filesystem::path dir_;
  std::unique_ptr<lab::Lab> lab_;
  const lab::Topology* topo_ = nullptr;
  std::map<std::size_t, std::unique_ptr<lab::Process>> agents_;
  int applied_ = 0;
};

TEST_F(AgentNetnsTest, ElectsAnnouncesAndFailsOver) {
  SetUpCluster();
  if (HasFatalFailure()) return;
  for (int i = 0; i < 3; ++i) StartAgent(i);

  // Exactly one holder per family; the Service names it; the client reaches it at its MAC.
  const int w4 = SoleHolder(kV4, {0, 1, 2});
  const int w6 = SoleHolder(kV6, {0, 1, 2});
  ASSERT_GE(w4, 0) << "no single IPv4 holder; logs in " << dir_;
  ASSERT_GE(w6, 0) << "no single IPv6 holder; logs in " << dir_;
  EXPECT_TRUE(Eventually(
      [&] {
        return Annotation("purelb.io/announcing-IPv4") ==
               topo_->nodes()[static_cast<std::size_t>(w4)].name + ",eth0";
      },
      seconds(10)))
      << Annotation("purelb.io/announcing-IPv4");
  EXPECT_TRUE(Eventually(
      [&] {
        return Annotation("purelb.io/announcing-IPv6") ==
               topo_->nodes()[static_cast<std::size_t>(w6)].name + ",eth0";
      },
      seconds(10)));
  ExpectClientReaches(kV4, w4);
  ExpectClientReaches(kV6, w6);
  // The winner's /metrics.
  const std::string metrics = MetricsWith(w4, "purelb_election_member_count 3");
  EXPECT_NE(metrics.find("purelb_election_lease_healthy 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("purelb_garp_sent_total{family=\"IPv4\"}"), std::string::npos) << metrics;
  // No LBNodeAgent: PureLB's selector state "default".
  EXPECT_NE(metrics.find("purelb_lbnodeagent_selector_state{state=\"default\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(Output({"curl", "-sf", "http://127.0.0.1:7473/readyz"},
                   topo_->nodes()[static_cast<std::size_t>(w4)].netns),
            "");
  // Events are sent asynchronously by the recorder.
  EXPECT_TRUE(Eventually(
      [&] {
        return Kubectl({"get", "events", "-n", "default"}).find("AnnouncingLocal") !=
               std::string::npos;
      },
      seconds(10)));
  ExpectHostAddressesIntact();

  // kube-lb0 of a node: present (the agent made it in the fresh namespace) or not.
  auto has_kube_lb0 = [&](int node) {
    std::string out;
    auto rc = lab::RunCommand({"ip", "link", "show", "kube-lb0"}, &out,
                              topo_->nodes()[static_cast<std::size_t>(node)].netns);
    return rc && *rc == 0;
  };
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(has_kube_lb0(i)) << i;

  // SIGTERM: the winner withdraws, deletes its lease; another node takes over, the client's
  // neighbour entry follows the gratuitous ARP / unsolicited NA without the client asking.
  const int first = w4;
  std::set<int> rest;
  for (int i = 0; i < 3; ++i) {
    if (i != first) rest.insert(i);
  }
  ASSERT_TRUE(agents_[static_cast<std::size_t>(first)]->Signal(SIGTERM));
  auto exited = agents_[static_cast<std::size_t>(first)]->Wait(milliseconds(10000));
  ASSERT_TRUE(exited) << "agent did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*exited) && WEXITSTATUS(*exited) == 0);
  EXPECT_FALSE(has_kube_lb0(first)) << "the agent created kube-lb0: it deletes it on shutdown";
  {
    const auto holders = Holders(kV4);
    EXPECT_TRUE(holders.empty() || holders[0] != first);
  }
  EXPECT_EQ(Kubectl({"get", "lease", "-n", "purelb-system",
                     "purelb-node-" + topo_->nodes()[static_cast<std::size_t>(first)].name}),
            "");
  const int second = SoleHolder(kV4, rest);
  ASSERT_GE(second, 0);
  EXPECT_TRUE(Eventually([&] { return ClientNeighbour(kV4) == Mac(second); }, seconds(5)))
      << "client neighbour " << ClientNeighbour(kV4) << " vs new holder " << Mac(second);
  EXPECT_TRUE(ClientPings(kV4));
  const int v6_after = SoleHolder(kV6, rest);
  ASSERT_GE(v6_after, 0);
  ExpectClientReaches(kV6, v6_after);

  // SIGKILL: nothing is withdrawn; peers take over when the lease expires, and the dead node's
  // address goes away by its valid lifetime.
  std::set<int> last;
  for (int i : rest) {
    if (i != second) last.insert(i);
  }
  ASSERT_TRUE(agents_[static_cast<std::size_t>(second)]->Signal(SIGKILL));
  (void)agents_[static_cast<std::size_t>(second)]->Wait(milliseconds(5000));
  EXPECT_TRUE(has_kube_lb0(second)) << "killed: nothing is cleaned up";
  const int third = SoleHolder(kV4, last);
  ASSERT_GE(third, 0) << "holders: " << Holders(kV4).size();
  EXPECT_TRUE(Eventually([&] { return ClientNeighbour(kV4) == Mac(third); }, seconds(5)));
  EXPECT_TRUE(ClientPings(kV4));
  const int v6_last = SoleHolder(kV6, last);
  ASSERT_GE(v6_last, 0);
  ExpectClientReaches(kV6, v6_last);
  ExpectHostAddressesIntact();
}

// With heartbeats (the same key on every node) and the default 10 s lease: a SIGKILLed winner
// and a winner whose link goes down hand their address over within about the detection bound
// (100 ms x 3), far below the lease; an agent with a wrong key is ignored (its heartbeats are
// dropped and reported), and the cluster keeps exactly one holder while it runs.
TEST_F(AgentNetnsTest, HeartbeatsFailOverFasterThanTheLease) {
  SetUpCluster();
  if (HasFatalFailure()) return;
  const std::string key = (dir_ / "heartbeat.key").string();
  const std::string wrong_key = (dir_ / "wrong.key").string();
  std::ofstream(key) << "# test key\n"
                     << "pylon-test-key-0123456789abcdef\n";
  std::ofstream(wrong_key) << "another-key-that-nobody-else-has\n";
  const std::vector<std::string> hb = {"--heartbeat-key-file", key};
  // Default lease timing (10 s / 7 s / 2 s): any sub-lease failover is the heartbeats' doing.
  for (int i = 0; i < 3; ++i) StartAgent(i, hb, {});
  const int w = SoleHolder(kV4, {0, 1, 2});
  ASSERT_GE(w, 0) << "no single IPv4 holder; logs in " << dir_;
  ExpectClientReaches(kV4, w);
  // The winner hears both peers.
  const std::string metrics = MetricsWith(w, "purelb_heartbeat_peers{state=\"alive\"} 2");
  EXPECT_NE(metrics.find("purelb_heartbeat_self_healthy 1"), std::string::npos) << metrics;
  // Every agent publishes its heartbeat endpoint on its lease.
  for (const auto& n : topo_->nodes()) {
    EXPECT_TRUE(Eventually(
        [&] {
          return Kubectl({"get", "lease", "-n", "purelb-system", "purelb-node-" + n.name, "-o",
                          "jsonpath={.metadata.annotations.purelb\\.io/heartbeat}"}) ==
                 n.ipv4 + ":7934,[" + n.ipv6 + "]:7934";
        },
        seconds(10)))
        << n.name;
  }

  // Measures, from now, when another node than `from` holds kV4 and when the client's ping
  // through kV4 succeeds again. Prints both as a figure of `what`, records them as the properties
  // `<name>_moved_s` and `<name>_ping_s`, and returns {moved, reachable} (negative: not within
  // 10 s).
  auto measure = [&](int from, const std::string& what, const std::string& name) {
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed_s = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    double moved = -1, reachable = -1;
    while (elapsed_s() < 10 && (moved < 0 || reachable < 0)) {
      const double t = elapsed_s();
      if (moved < 0) {
        for (int h : Holders(kV4)) {
          if (h != from) moved = t;
        }
      }
      if (reachable < 0 && moved >= 0) {
        std::string out;
        auto rc = lab::RunCommand({"ping", "-c1", "-W0.3", kV4}, &out, topo_->ClientNetns());
        if (rc && *rc == 0) {
          reachable = elapsed_s();
        }
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    std::printf(
        "[ figure ] %s: address on another node after %.3f s, client ping OK after %.3f s\n",
        what.c_str(), moved, reachable);
    RecordProperty(name + "_moved_s", std::to_string(moved));
    RecordProperty(name + "_ping_s", std::to_string(reachable));
    return std::pair{moved, reachable};
  };

  // SIGKILL of the winner: the peers stop hearing it and take over after ~3 missed heartbeats.
  ASSERT_TRUE(agents_[static_cast<std::size_t>(w)]->Signal(SIGKILL));
  auto [killed_moved, killed_ping] =
      measure(w, "SIGKILL of the winner (lease 10 s, heartbeat 100 ms x 3)", "sigkill");
  ASSERT_GE(killed_moved, 0) << "no takeover; logs in " << dir_;
  EXPECT_LT(killed_moved, 5.0) << "not faster than the 10 s lease";
  EXPECT_GE(killed_ping, 0);
  EXPECT_LT(killed_ping, 5.0);
  (void)agents_[static_cast<std::size_t>(w)]->Wait(milliseconds(5000));
  std::set<int> rest;
  for (int i = 0; i < 3; ++i) {
    if (i != w) rest.insert(i);
  }
  int holder = -1;
  for (int h : Holders(kV4)) {
    if (rest.count(h)) holder = h;
  }
  ASSERT_GE(holder, 0);
  const int other = *rest.begin() == holder ? *rest.rbegin() : *rest.begin();

  // The killed node comes back with a wrong key: the others drop its heartbeats and say so; the
  // holder keeps the address (exactly one holder once the dead incarnation's address is gone).
  StartAgent(w, {"--heartbeat-key-file", wrong_key}, {}, "-wrongkey");
  auto log_has = [&](int node, const std::string& needle) {
    std::ifstream in(dir_ /
                     ("agent-" + topo_->nodes()[static_cast<std::size_t>(node)].name + ".log"));
    std::string text, line;
    while (std::getline(in, line)) text += line + "\n";
    return text.find(needle) != std::string::npos;
  };
  EXPECT_TRUE(Eventually([&] { return log_has(holder, "heartbeats with a wrong key ignored"); },
                         seconds(15)))
      << "logs in " << dir_;
  EXPECT_TRUE(Eventually([&] { return Holders(kV4) == std::vector<int>{holder}; }, seconds(15)))
      << "holders: " << Holders(kV4).size();
  EXPECT_TRUE(ClientPings(kV4));
  ASSERT_TRUE(agents_[static_cast<std::size_t>(w)]->Signal(SIGTERM));
  (void)agents_[static_cast<std::size_t>(w)]->Wait(milliseconds(10000));

  // Link down on the holder: it withdraws (its own link is down) and the other node, no longer
  // hearing it, takes over -- while the holder's lease is still being renewed.
  const auto& hn = topo_->nodes()[static_cast<std::size_t>(holder)];
  ASSERT_TRUE(lab::RunCommandChecked({"ip", "link", "set", "eth0", "down"}, hn.netns));
  auto [down_moved, down_ping] = measure(holder, "link down on the holder", "linkdown");
  ASSERT_GE(down_moved, 0) << "no takeover after link down; logs in " << dir_;
  EXPECT_LT(down_moved, 5.0);
  EXPECT_GE(down_ping, 0);
  EXPECT_LT(down_ping, 5.0);
  EXPECT_TRUE(Eventually([&] { return Holders(kV4) == std::vector<int>{other}; }, seconds(5)))
      << "the link-down node must withdraw";
}

}  // namespace
}  // namespace pylon::agent
