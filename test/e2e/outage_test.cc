// API-server outage: the API server hangs for a minute while the winner of a Service's
// address has its agent SIGKILLed. The hang is SIGSTOP of the lab's kube-apiserver: its
// sockets stay open, requests are accepted by the kernel and never answered, which is worse than
// a refused connection (clients wait on timeouts instead of failing fast). With heartbeats (on by
// default in the lab) and the quiet lease they bring (every agent's lease quiet before the hang:
// renewed every 10 s, 40 s long), another node must take the address over, no other address may
// move or be withdrawn anywhere (checked with `ip monitor` in every node, `ip addr` and the
// client's HTTP probes), and after SIGCONT the annotations must name the new winner.
//
// Also the table of the pure analysis `pylon-dev lab failover` uses for ARP / NS answers.
#include <signal.h>

#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stop_token>
#include <thread>

#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

using lab::AnswerSample;
using packet::MacAddress;
using Clock = std::chrono::steady_clock;

MacAddress Mac(std::uint8_t last) { return MacAddress({2, 0, 0, 0, 0, last}); }

TEST(AnalyzeExpiry, Table) {
  const MacAddress d = Mac(1), w = Mac(2), x = Mac(3);
  struct Case {
    const char* name;
    std::vector<AnswerSample> samples;
    double silent_ms;
    bool confirmed;
    double other_ms;
    std::vector<MacAddress> after;
    bool dead_answered;
  };
  const std::vector<Case> cases = {
      {"no samples", {}, -1, false, -1, {}, false},
      {"dead answers the last request",
       {{0, {d}}, {100, {d, w}}, {700, {d, w}}},
       -1,
       false,
       100,
       {},
       true},
      {"dead stops, then the winner alone",
       {{0, {d}}, {100, {d, w}}, {200, {w}}, {800, {w}}},
       200,
       true,
       100,
       {w},
       true},
      {"silence shorter than confirm",
       {{0, {d}}, {200, {w}}, {400, {w}}},
       200,
       false,
       200,
       {w},
       true},
      {"a lost answer is not silence",
       {{0, {d}}, {100, {}}, {200, {d}}, {300, {w}}, {900, {w}}},
       300,
       true,
       300,
       {w},
       true},
      {"nobody answers afterwards", {{0, {d}}, {100, {}}, {700, {}}}, 100, true, -1, {}, true},
      {"two answer afterwards",
       {{0, {d}}, {100, {w, x}}, {700, {w}}},
       100,
       true,
       100,
       {w, x},
       true},
      {"dead never answered", {{0, {w}}, {600, {w}}}, 0, true, 0, {w}, false},
  };
  for (const auto& c : cases) {
    auto v = lab::AnalyzeExpiry(c.samples, d, 500);
    EXPECT_EQ(v.silent_ms, c.silent_ms) << c.name;
    EXPECT_EQ(v.confirmed, c.confirmed) << c.name;
    EXPECT_EQ(v.other_ms, c.other_ms) << c.name;
    EXPECT_EQ(v.after, c.after) << c.name;
    EXPECT_EQ(v.dead_answered, c.dead_answered) << c.name;
  }
}

// HTTP probes of some addresses from the client, in turn, every 200 ms (1 s timeout each), on
// a thread of its own until Stop() or destruction.
class ClientWatch {
 public:
  struct Sample {
    double t_ms;
    std::string ip;
    bool ok;
    std::string node;
  };
  ClientWatch(const std::string& netns, std::vector<std::string> ips) : ips_(std::move(ips)) {
    thread_ = std::jthread([this, netns](std::stop_token stop) {
      (void)lab::InNetns(netns, [this, &stop] {
        const auto t0 = Clock::now();
        while (!stop.stop_requested()) {
          for (const auto& ip : ips_) {
            auto r = lab::ProbeOnce(ip, 80, Ms(1000));
            std::lock_guard<std::mutex> lock(mu_);
            samples_.push_back(
                {std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), ip, r.ok,
                 r.body});
          }
          for (int i = 0; i < 10 && !stop.stop_requested(); ++i) {
            std::this_thread::sleep_for(Ms(20));
          }
        }
        return 0;
      });
    });
  }
  void Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Sample> samples() {
    std::lock_guard<std::mutex> lock(mu_);
    return samples_;
  }

 private:
  std::vector<std::string> ips_;
  std::mutex mu_;
  std::vector<Sample> samples_;
  std::jthread thread_;  // last: stopped and joined before the members it uses go
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Lines of an `ip -o monitor address` log that report a removed address.
std::vector<std::string> DeletedLines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("Deleted") != std::string::npos) out.push_back(line);
  }
  return out;
}

class ApiOutageTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override { cfg->agent_args = {"--address-lifetime", "3s"}; }
};

struct Held {
  std::string svc, ip, node;
};

TEST_F(ApiOutageTest, ApiServerHungWhileWinnerKilledFailsOverAndWithdrawsNothing) {
  Apply(kLocalDual);
  // Four dual-stack Services: the whole IPv6 pool (4 addresses) and 4 of the 5 IPv4 ones, spread
  // over the three nodes by the election hash.
  const std::vector<std::string> services = {"s1", "s2", "s3", "s4"};
  for (const auto& s : services) {
    Apply(ServiceYaml(s, "    purelb.io/service-group: localdual\n", kDualSpec));
  }
  std::vector<Held> held;
  for (const auto& s : services) {
    auto ips = WaitIngress(s, 2);
    ASSERT_EQ(ips.size(), 2u) << s;
    for (const auto& ip : ips) held.push_back({s, ip, ""});
  }
  // Settled: each address on exactly its announcer, which answers the client.
  for (auto& h : held) {
    ASSERT_TRUE(Eventually([&] {
      auto nodes = NodesWith("eth0", h.ip);
      if (nodes.size() != 1 || nodes[0] != Announcer(Service(h.svc), IsV6(h.ip))) return false;
      h.node = nodes[0];
      return Probe(h.ip).body == h.node;
    })) << h.svc
        << " " << h.ip;
  }
  const std::string victim = held[0].node;  // the IPv4 winner of s1 (first ingress is IPv4)
  std::vector<Held> moving, staying;
  for (const auto& h : held) (h.node == victim ? moving : staying).push_back(h);
  ASSERT_FALSE(staying.empty()) << "every address is on " << victim;
  for (const auto& h : held) {
    std::printf("  %s %-22s on %s%s\n", h.svc.c_str(), h.ip.c_str(), h.node.c_str(),
                h.node == victim ? "  (its agent will be killed)" : "");
  }

  // Every agent hears the two others (a peer never heard is judged by its lease alone), and so
  // its lease turns quiet once that has held for the hold-down (30 s).
  for (const auto& n : lab().topology().nodes()) {
    ASSERT_TRUE(Eventually([&] {
      return AgentMetric(n.name, "purelb_heartbeat_peers{state=\"alive\"}") == 2.0;
    })) << n.name;
  }
  for (const auto& n : lab().topology().nodes()) {
    ASSERT_TRUE(Eventually(
        [&] { return AgentMetric(n.name, "purelb_election_lease_quiet") == 1.0; }, Ms(60000)))
        << n.name << " lease not quiet";
  }
  // Every address change in every node, from now on.
  std::map<std::string, lab::Process> monitors;
  for (const auto& n : lab().topology().nodes()) {
    lab::SpawnOptions o;
    o.argv = {"stdbuf", "-oL", "ip", "-ts", "-o", "monitor", "address"};
    o.netns = n.netns;
    o.log_path = lab().Path("ipmon-" + n.name + ".log");
    auto p = lab::Process::Spawn(o);
    ASSERT_TRUE(p) << p.error().message();
    monitors[n.name] = std::move(*p);
  }
  // Subscribed: the agents renew their addresses' lifetimes every 500 ms, each renewal is an
  // RTM_NEWADDR that the monitor prints (node3 may hold nothing: then its log stays empty).
  for (const auto& n : lab().topology().nodes()) {
    bool holds = false;
    for (const auto& h : held) holds |= h.node == n.name;
    if (!holds) continue;
    ASSERT_TRUE(Eventually(
        [&] { return !ReadFile(lab().Path("ipmon-" + n.name + ".log")).empty(); }, Ms(5000)))
        << n.name;
  }
  std::vector<std::string> staying_ips;
  for (const auto& h : staying) staying_ips.push_back(h.ip);
  ClientWatch client(lab().topology().ClientNetns(), staying_ips);

  // The outage: the API server hangs for 60 s.
  const auto outage = Clock::now();
  ASSERT_TRUE(lab().SignalApiserver(SIGSTOP));
  // The agents notice (no renewal for the quiet lease's renew deadline: the lab's 2 s scaled to
  // the 40 s lease, 26.7 s after the last renewal) and, hearing each other's heartbeats, stay
  // healthy.
  for (const auto& n : lab().topology().nodes()) {
    EXPECT_TRUE(Eventually(
        [&] {
          return AgentMetric(n.name, "purelb_election_lease_healthy") == 0.0 &&
                 AgentMetric(n.name, "purelb_heartbeat_self_healthy") == 1.0;
        },
        Ms(35000)))
        << n.name << " lease_healthy "
        << AgentMetric(n.name, "purelb_election_lease_healthy").value_or(-1)
        << " heartbeat_self_healthy "
        << AgentMetric(n.name, "purelb_heartbeat_self_healthy").value_or(-1);
  }
  // Not a wait for a condition: the scenario needs every lease (quiet: 40 s, written before the
  // hang) to have run out in every agent's view before the kill, so that only heartbeats can tell
  // the dead node from the others.
  std::this_thread::sleep_until(outage + Ms(42000));
  std::printf("  every lease expired in every view, %.0f ms into the outage\n",
              std::chrono::duration<double, std::milli>(Clock::now() - outage).count());
  for (const auto& h : held) {
    EXPECT_EQ(NodesWith("eth0", h.ip), std::vector<std::string>{h.node})
        << h.ip << " before the kill";
  }
  for (const auto& h : moving) {
    // The prober sees the node that will die: its silence later means something.
    EXPECT_EQ(Answerers(h.ip), std::vector<MacAddress>{NodeMac(victim)}) << h.ip;
  }

  const auto kill_at = Clock::now();
  ASSERT_TRUE(lab().SignalAgent(victim, SIGKILL));
  std::map<std::string, std::string> new_node;  // ip -> node answering after the kill
  for (const auto& h : moving) {
    std::string body;
    EXPECT_TRUE(Eventually(
        [&] {
          auto r = Probe(h.ip);
          body = r.body;
          return r.ok && r.body != victim;
        },
        Ms(15000)))
        << h.ip << " still answered by \"" << body << "\"";
    new_node[h.ip] = body;
    std::printf("  %s: answered by %s %.0f ms after the kill (API server stopped)\n", h.ip.c_str(),
                body.c_str(),
                std::chrono::duration<double, std::milli>(Clock::now() - kill_at).count());
  }
  // The dead node's kernel drops the addresses when their 3 s lifetime runs out; then the new
  // winner alone answers ARP / NS.
  for (const auto& h : moving) {
    EXPECT_TRUE(Eventually(
        [&] {
          return NodesWith("eth0", h.ip) == std::vector<std::string>{new_node[h.ip]} &&
                 OnlyAnswerer(h.ip, NodeMac(new_node[h.ip]));
        },
        Ms(12000)))
        << h.ip << ": held by " << ::testing::PrintToString(NodesWith("eth0", h.ip))
        << ", answered by " << Macs(Answerers(h.ip));
    std::printf("  %s: only %s answers ARP/NS, seen %.0f ms after the kill (checked in turn)\n",
                h.ip.c_str(), new_node[h.ip].c_str(),
                std::chrono::duration<double, std::milli>(Clock::now() - kill_at).count());
  }
  // The rest of the minute: every other address stays on its node, and only there.
  while (Clock::now() < outage + Ms(60000)) {
    for (const auto& h : staying) {
      EXPECT_EQ(NodesWith("eth0", h.ip), std::vector<std::string>{h.node}) << h.ip;
    }
    std::this_thread::sleep_for(Ms(1000));
  }
  ASSERT_TRUE(lab().SignalApiserver(SIGCONT));
  const auto resumed = Clock::now();

  // Converged: the annotations name who holds each address (the new winner for the moved ones).
  std::string why;
  EXPECT_TRUE(Eventually(
      [&] {
        for (const auto& h : held) {
          const std::string want = h.node == victim ? new_node[h.ip] : h.node;
          const std::string ann = Announcer(Service(h.svc), IsV6(h.ip));
          if (ann != want) {
            why = h.svc + " " + h.ip + ": annotation names \"" + ann + "\", want " + want;
            return false;
          }
          if (NodesWith("eth0", h.ip) != std::vector<std::string>{want}) {
            why = h.ip + " not held by " + want + " alone";
            return false;
          }
        }
        return true;
      },
      Ms(30000)))
      << why;
  std::printf("  converged %.0f ms after SIGCONT\n",
              std::chrono::duration<double, std::milli>(Clock::now() - resumed).count());

  // The client: every answer for an address that stayed came from its node, and no two probes
  // in a row (1 s timeout each) went unanswered.
  client.Stop();
  std::map<std::string, int> failed_in_row;
  int answers = 0;
  for (const auto& s : client.samples()) {
    std::string node;
    for (const auto& h : staying) {
      if (h.ip == s.ip) node = h.node;
    }
    if (s.ok) {
      ++answers;
      EXPECT_EQ(s.node, node) << s.ip << " at " << s.t_ms << " ms";
      failed_in_row[s.ip] = 0;
    } else {
      EXPECT_LT(++failed_in_row[s.ip], 2) << s.ip << " unanswered at " << s.t_ms << " ms";
    }
  }
  EXPECT_GT(answers, 100);
  // No agent but the killed one's node ever removed an address (the killed node's kernel
  // removed the expired ones).
  for (auto& [name, p] : monitors) p.Stop(Ms(500));
  for (const auto& n : lab().topology().nodes()) {
    if (n.name == victim) continue;
    auto deleted = DeletedLines(ReadFile(lab().Path("ipmon-" + n.name + ".log")));
    EXPECT_TRUE(deleted.empty()) << n.name << " removed addresses:\n"
                                 << ::testing::PrintToString(deleted);
  }
  auto victim_log = DeletedLines(ReadFile(lab().Path("ipmon-" + victim + ".log")));
  EXPECT_EQ(victim_log.size(), moving.size()) << ::testing::PrintToString(victim_log);
}

}  // namespace
}  // namespace pylon::e2e
