// Agent restarts and crashes with the node alive (docs/failover.md "A killed agent"): the
// successor's wire check (src/agent/takeover.h) leaves an address where it is while the node that
// holds it still answers for it, and a restarted agent adopts what its predecessor left
// (src/agent/lifecycle.h). Counts only: addresses moved (`ip monitor address` in every other
// node, the agents' purelb_address_moves_total) and moments when two nodes answered ARP / NS (the
// client asks as the lab's observer, over and over, for the whole scenario).
#include <signal.h>

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stop_token>
#include <thread>

#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

using packet::MacAddress;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Asks who answers for each address in turn, on its own thread, until Stop(): the samples where
// more than one MAC answered, and the MACs seen.
class AnswerWatch {
 public:
  AnswerWatch(std::function<std::vector<MacAddress>(const std::string&)> ask,
              std::vector<std::string> ips)
      : ask_(std::move(ask)), ips_(std::move(ips)) {
    thread_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        for (const auto& ip : ips_) {
          auto macs = ask_(ip);
          std::lock_guard<std::mutex> lock(mu_);
          ++samples_;
          if (macs.size() > 1) doubles_.push_back(ip + " answered by " + Macs(macs));
          for (const auto& m : macs) seen_[ip].insert(m.ToString());
        }
      }
    });
  }
  void Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  int samples() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }
  std::vector<std::string> doubles() {
    std::lock_guard<std::mutex> lock(mu_);
    return doubles_;
  }
  std::set<std::string> seen(const std::string& ip) {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_[ip];
  }

 private:
  std::function<std::vector<MacAddress>(const std::string&)> ask_;
  std::vector<std::string> ips_;
  std::mutex mu_;
  int samples_ = 0;
  std::vector<std::string> doubles_;
  std::map<std::string, std::set<std::string>> seen_;
  std::jthread thread_;  // last: stopped and joined before the members it uses go
};

class LifecycleTest : public LabTest {
 protected:
  // A lifetime long enough for the agent to be killed, seen dead and started again in this lab.
  static constexpr const char* kLifetime = "8s";
  void Configure(lab::LabConfig* cfg) override {
    cfg->kube_proxy = true;
    cfg->agent_args = {"--address-lifetime", kLifetime};
  }
  void SetUp() override {
    LabTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (lab().config().kube_proxy) {
      ASSERT_TRUE(lab().kube_proxy_running()) << lab().kube_proxy_problem();
    }
  }

  // One dual-stack Service; returns its two addresses once each is held by its announcer alone,
  // which answers ARP / NS alone, and every agent hears the two others. `victim_` is the node
  // holding the IPv4 address; `victim_ips_` what it holds.
  void Settle() {
    Apply(kLocalDual);
    Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
    ips_ = WaitIngress("web", 2);
    ASSERT_EQ(ips_.size(), 2u);
    for (const auto& ip : ips_) {
      std::string holder;
      ASSERT_TRUE(Eventually([&] {
        auto nodes = NodesWith("eth0", ip);
        if (nodes.size() != 1 || nodes[0] != Announcer(Service("web"), IsV6(ip))) return false;
        holder = nodes[0];
        return OnlyAnswerer(ip, NodeMac(holder), 2);
      })) << ip;
      holders_[ip] = holder;
    }
    victim_ = holders_[ips_[0]];
    for (const auto& ip : ips_) {
      if (holders_[ip] == victim_) victim_ips_.push_back(ip);
    }
    for (const auto& n : lab().topology().nodes()) {
      ASSERT_TRUE(Eventually([&] {
        return AgentMetric(n.name, "purelb_heartbeat_peers{state=\"alive\"}") == 2.0;
      })) << n.name;
    }
    // Every address change in the other nodes from now on.
    for (const auto& n : lab().topology().nodes()) {
      if (n.name == victim_) continue;
      lab::SpawnOptions o;
      o.argv = {"stdbuf", "-oL", "ip", "-o", "monitor", "address"};
      o.netns = n.netns;
      o.log_path = lab().Path("ipmon-" + n.name + ".log");
      auto p = lab::Process::Spawn(o);
      ASSERT_TRUE(p) << p.error().message();
      monitors_[n.name] = std::move(*p);
    }
    // Subscribed: a marker address added and removed on each shows in its log.
    for (const auto& [name, p] : monitors_) {
      const std::string& ns = Node(name).netns;
      ASSERT_TRUE(Eventually(
          [&] {
            (void)lab::RunCommand({"ip", "addr", "add", "203.0.113.250/32", "dev", "lo"}, nullptr,
                                  ns);
            (void)lab::RunCommand({"ip", "addr", "del", "203.0.113.250/32", "dev", "lo"}, nullptr,
                                  ns);
            return ReadFile(lab().Path("ipmon-" + name + ".log")).find("203.0.113.250") !=
                   std::string::npos;
          },
          Ms(5000)))
          << name;
    }
    std::printf("  victim %s holds %zu of the 2 addresses\n", victim_.c_str(), victim_ips_.size());
  }

  std::unique_ptr<AnswerWatch> Watch() {
    return std::make_unique<AnswerWatch>([this](const std::string& ip) { return Answerers(ip); },
                                         ips_);
  }

  // Settle(), then who answers watched from here on while the victim's agent gets `signal` and
  // exits within `exit_ms`.
  void SettleThenSignalVictim(int signal, int exit_ms, std::unique_ptr<AnswerWatch>* watch) {
    ASSERT_NO_FATAL_FAILURE(Settle());
    *watch = Watch();
    ASSERT_TRUE(lab().SignalAgent(victim_, signal));
    ASSERT_TRUE(lab().WaitAgentExit(victim_, exit_ms));
  }

  // Ends the watch and the address monitors: the watch asked often enough and never heard two
  // nodes answer for one address.
  void StopWatching(AnswerWatch& watch) {
    watch.Stop();
    for (auto& [name, p] : monitors_) p.Stop(Ms(500));
    EXPECT_GT(watch.samples(), 20);
    EXPECT_EQ(watch.doubles(), std::vector<std::string>{}) << "two nodes answered";
  }

  // Nodes other than the victim on which one of the victim's addresses appeared.
  std::map<std::string, std::vector<std::string>> MovedTo() {
    std::map<std::string, std::vector<std::string>> out;
    for (auto& [name, p] : monitors_) {
      const std::string log = ReadFile(lab().Path("ipmon-" + name + ".log"));
      for (const auto& ip : victim_ips_) {
        std::istringstream in(log);
        std::string line;
        bool added = false;
        while (std::getline(in, line)) {
          if (line.find(" " + ip + "/") != std::string::npos &&
              line.find("Deleted") == std::string::npos) {
            added = true;
          }
        }
        if (added) out[ip].push_back(name);
      }
    }
    return out;
  }

  double Moves(const std::string& node, const std::string& reason) {
    return AgentMetric(node, "purelb_address_moves_total{reason=\"" + reason + "\"}").value_or(-1);
  }

  // Whether some other agent logged that it defers to the victim.
  bool PeerDeferred() {
    for (const auto& n : lab().topology().nodes()) {
      if (n.name == victim_) continue;
      if (ReadFile(lab().Path("agent-" + n.name + ".log")).find("deferring a takeover") !=
          std::string::npos) {
        return true;
      }
    }
    return false;
  }

  // The victim's agent is back: every peer hears it and it adopted what it held.
  void ExpectBackAndNothingMoved(AnswerWatch& watch) {
    for (const auto& n : lab().topology().nodes()) {
      EXPECT_TRUE(Eventually([&] {
        return AgentMetric(n.name, "purelb_heartbeat_peers{state=\"alive\"}") == 2.0;
      })) << n.name;
    }
    EXPECT_TRUE(Eventually([&] {
      return Moves(victim_, "restart-adopted") == static_cast<double>(victim_ips_.size());
    })) << "restart-adopted "
        << Moves(victim_, "restart-adopted");
    // Past the old addresses' lifetime: had they not been adopted, they would have expired.
    std::this_thread::sleep_for(Ms(9000));
    StopWatching(watch);
    EXPECT_EQ(MovedTo(), (std::map<std::string, std::vector<std::string>>{}))
        << "an address of the victim moved";
    for (const auto& ip : victim_ips_) {
      EXPECT_EQ(NodesWith("eth0", ip), std::vector<std::string>{victim_}) << ip;
      EXPECT_EQ(watch.seen(ip), std::set<std::string>{NodeMac(victim_).ToString()}) << ip;
    }
    for (const auto& n : lab().topology().nodes()) {
      if (n.name == victim_) continue;
      EXPECT_EQ(Moves(n.name, "crash"), 0.0) << n.name;
    }
  }

  std::vector<std::string> ips_;
  std::map<std::string, std::string> holders_;
  std::string victim_;
  std::vector<std::string> victim_ips_;
  std::map<std::string, lab::Process> monitors_;
};

TEST_F(LifecycleTest, KilledAgentRestartedWithinTheLifetimeMovesNothing) {
  std::unique_ptr<AnswerWatch> watch;
  ASSERT_NO_FATAL_FAILURE(SettleThenSignalVictim(SIGKILL, 5000, &watch));
  // The peers saw it fall silent, asked the wire and found its node still answering.
  EXPECT_TRUE(Eventually([&] { return PeerDeferred(); }, Ms(10000)));
  ASSERT_TRUE(lab().StartAgent(victim_));
  ExpectBackAndNothingMoved(*watch);
}

TEST_F(LifecycleTest, KilledAgentNeverRestartedMovesOnceAfterTheLifetime) {
  std::unique_ptr<AnswerWatch> watch;
  ASSERT_NO_FATAL_FAILURE(SettleThenSignalVictim(SIGKILL, 5000, &watch));
  EXPECT_TRUE(Eventually([&] { return PeerDeferred(); }, Ms(10000)));
  // Once the victim's kernel dropped them, each address is held and answered by one other node.
  std::map<std::string, std::string> winner;
  for (const auto& ip : victim_ips_) {
    EXPECT_TRUE(Eventually(
        [&] {
          auto nodes = NodesWith("eth0", ip);
          if (nodes.size() != 1 || nodes[0] == victim_) return false;
          winner[ip] = nodes[0];
          return OnlyAnswerer(ip, NodeMac(nodes[0]), 3);
        },
        Ms(20000)))
        << ip << " held by " << ::testing::PrintToString(NodesWith("eth0", ip));
  }
  // And stays there.
  std::this_thread::sleep_for(Ms(2000));
  StopWatching(*watch);
  std::map<std::string, std::vector<std::string>> want;
  for (const auto& [ip, node] : winner) want[ip] = {node};
  EXPECT_EQ(MovedTo(), want) << "each address moves exactly once";
  double crash = 0;
  for (const auto& n : lab().topology().nodes()) {
    if (n.name != victim_) crash += Moves(n.name, "crash");
  }
  EXPECT_EQ(crash, static_cast<double>(victim_ips_.size()));
  for (const auto& ip : victim_ips_) {
    EXPECT_EQ(NodesWith("eth0", ip), std::vector<std::string>{winner[ip]}) << ip;
  }
}

// Without kube-proxy in the lab: the restarting agent vouches for its node in its lease.
class GracefulRestartTest : public LifecycleTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->agent_args = {"--address-lifetime", kLifetime, "--on-sigterm=restart"};
  }
};

TEST_F(GracefulRestartTest, SigtermRestartMovesNothing) {
  std::unique_ptr<AnswerWatch> watch;
  ASSERT_NO_FATAL_FAILURE(SettleThenSignalVictim(SIGTERM, 10000, &watch));
  // The lease stays, marked restarting.
  Json lease = GetJson({"get", "lease", "-n", "purelb-system", "purelb-node-" + victim_});
  EXPECT_FALSE(Annotation(lease, "purelb.io/restarting").empty()) << lease.dump();
  EXPECT_TRUE(Eventually([&] { return PeerDeferred(); }, Ms(10000)));
  ASSERT_TRUE(lab().StartAgent(victim_));
  ExpectBackAndNothingMoved(*watch);
  // The new agent cleared the mark.
  EXPECT_TRUE(Eventually([&] {
    Json l = GetJson({"get", "lease", "-n", "purelb-system", "purelb-node-" + victim_});
    return l.is_object() && Annotation(l, "purelb.io/restarting").empty();
  }));
}

}  // namespace
}  // namespace pylon::e2e
