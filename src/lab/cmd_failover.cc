// `pylon-dev lab failover`: the outage the client sees when the node announcing an address fails
// (its agent gets SIGTERM or SIGKILL, its link goes down, it freezes; with kube-proxy, its pod
// turns unready or its kube-proxy dies), for each family, over several runs; a table at the end
// (docs/lab.md, docs/failover.md).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "heartbeat/ring.h"
#include "lab/census.h"
#include "lab/command.h"
#include "lab/measure.h"
#include "lab/neighbor_probe.h"
#include "lab/netns.h"
#include "lab/responder.h"
#include "lab/service_state.h"

namespace pylon::lab {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

struct FailoverFlags {
  MeasureFlags measure;
  std::string cases;  // empty: every case the lab can run
  int nodes = 3;
  Duration census = Duration::zero();  // the steady-state census before the cases (census.h)
};

// After a SIGKILL of the winner's agent: who answers ARP / NS for the address, from the kill
// until the dead node has stopped answering (its kernel drops the address when the valid
// lifetime the agent gave it runs out) and someone else answers. Runs on its own thread,
// probing from the client.
class NeighborWatch {
 public:
  NeighborWatch(const Lab& lab, const std::string& ip, const packet::MacAddress& dead,
                SteadyClock::time_point t0, Ms window) {
    WatchOptions o;
    // As an observer, so that the probes do not move the client's neighbour entry (see
    // kObserverMac).
    o.source =
        *net::IpAddress::Parse(ip.find(':') == std::string::npos ? kObserverIpv4 : kObserverIpv6);
    o.mac = kObserverMac;
    o.target = *net::IpAddress::Parse(ip);
    o.dead = dead;
    o.window = window;
    thread_ = std::thread([this, &lab, o, t0] {
      auto r =
          InNetns(lab.topology().ClientNetns(), [&] { return WatchAnswers(o, t0, StopFlag()); });
      if (!r) {
        error_ = r.error().message();
      } else if (!*r) {
        error_ = r->error().message();
      } else {
        samples_ = std::move(**r);
      }
    });
  }
  ~NeighborWatch() { Join(); }
  NeighborWatch(const NeighborWatch&) = delete;
  NeighborWatch& operator=(const NeighborWatch&) = delete;
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // Valid after Join().
  const std::vector<AnswerSample>& samples() const { return samples_; }
  const std::string& error() const { return error_; }

 private:
  std::vector<AnswerSample> samples_;
  std::string error_;
  std::thread thread_;
};

// Whether every agent hears all its heartbeat peers: every other node, or its 4 ring neighbours
// on a larger lab. A restarted agent that never heard a peer judges it by its lease alone
// (docs/failover.md), so a fault right after a restart would measure the lease, not the
// heartbeats.
bool AllAgentsHearEachOther(const Lab& lab) {
  const double others = std::min<double>(static_cast<double>(lab.topology().nodes().size()) - 1,
                                         2 * heartbeat::kRingSide);
  for (const auto& n : lab.topology().nodes()) {
    if (AgentMetric(n, "purelb_heartbeat_peers{state=\"alive\"}") != others) return false;
  }
  return true;
}

// A fault done to the node that announces the address, and how it is undone after the run.
struct FaultCase {
  std::string name;
  Ms window;  // how long after the fault the address may take to come back
  std::function<void(const std::string&node)> fault, restore;
};

// The figures of one case and family over its runs (-1: missing).
struct CaseFigures {
  std::vector<double> outages, handovers;
  // SIGKILL only, from ARP / NS: kill -> the dead node silent; kill -> another node answers.
  std::vector<double> gone, l2_handover;
  int sole_winner = 0;  // runs after which only the new winner answered
};

// The measurement on a lab that StartMeasureLab brought up: the Service and (with kube-proxy)
// one pod per node, then each case, run by run.
class Failover {
 public:
  Failover(Lab& lab, int runs, Duration lifetime)
      : lab_(lab), runs_(runs), lifetime_ms_(std::chrono::duration_cast<Ms>(lifetime)) {}

  // Says whether kube-proxy and heartbeats are on, creates the Service (and the pods) and waits
  // for its addresses; learns the nodes' MACs. Says what failed.
  bool SetUp();
  // The cases this lab can run, in the order of the table.
  std::vector<FaultCase> Cases();
  bool pods() const { return pods_; }
  // Runs `c` for one family; says a line per run and returns the case's lines of the table.
  std::vector<std::string> Run(const FaultCase& c, bool v6);

 private:
  static std::string PodOf(const std::string& node) { return "kuard-" + node; }
  // Waits until every agent hears the others (heartbeats on) and the announcer of `ip` answers
  // the client; returns the announcer.
  Result<std::string> Settle(const std::string& ip, bool v6);
  // One run: the fault on `winner` while the client probes; says and records what it saw.
  void RunOnce(const FaultCase& c, bool v6, int run, const std::string& winner, CaseFigures* fig);
  // Says (and records) what the ARP / NS watch of a SIGKILL saw.
  void ReportWatch(const NeighborWatch& nw, bool v6, const std::string& ip,
                   const std::string& winner, CaseFigures* fig);
  // Node names for MACs ("node2,node3"); "nobody" for none.
  std::string MacNames(const std::vector<packet::MacAddress>& list) const;
  // The SIGKILL watch lasts until the dead node's addresses expired, and a bit more.
  Ms WatchWindow() const { return lifetime_ms_ + Ms(5000); }

  Lab& lab_;
  const int runs_;
  const Ms lifetime_ms_;
  bool pods_ = false;
  bool heartbeats_ = false;
  std::string ip4_, ip6_;
  // Which node answers ARP / NS is told by its eth0 MAC.
  std::map<std::string, packet::MacAddress> macs_;
};

bool Failover::SetUp() {
  pods_ = lab_.kube_proxy_running();
  if (lab_.config().kube_proxy) {
    Say(pods_ ? "kube-proxy (" + lab_.config().proxy_mode +
                    " mode) on every node: requests go to one pod per node, "
                    "externalTrafficPolicy Local"
              : "kube-proxy is NOT running, the nodes' responders answer instead: " +
                    lab_.kube_proxy_problem());
  }
  // A key file, or the key Secret the agents create themselves (the lab's default, as a user's).
  for (const auto& a : lab_.config().agent_args) {
    heartbeats_ |= a == "--heartbeat-key-file" || a == "--heartbeat-key-secret";
  }
  Say(std::string("heartbeats between agents: ") + (heartbeats_ ? "on" : "off"));
  // With kube-proxy the client's requests go to pods (docs/datapath.md): one pod per node behind
  // an externalTrafficPolicy Local Service, announced from a node with a ready local endpoint
  // (MeasureLabConfig), so the pod that answers names the node that holds the address.
  if (auto s =
          lab_.Apply(std::string(kDemoService) + (pods_ ? "  externalTrafficPolicy: Local\n" : ""));
      !s) {
    Say("apply failed: " + s.error().message());
    return false;
  }
  if (pods_) {
    for (const auto& n : lab_.topology().nodes()) {
      if (auto s = lab_.AddPod(n.name, PodOf(n.name), kDemoServiceName); !s) {
        Say("pod on " + n.name + ": " + s.error().message());
        return false;
      }
    }
  }
  auto svc = WaitDualStackAnnounced(lab_, kDemoServiceName);
  if (!svc) {
    Say(svc.error().message());
    return false;
  }
  for (const auto& ip : IngressIps(*svc)) (ip.find(':') == std::string::npos ? ip4_ : ip6_) = ip;
  for (const auto& n : lab_.topology().nodes()) {
    auto mac = InterfaceMacIn(n.netns, "eth0");
    if (!mac) {
      Say("MAC of " + n.name + ": " + mac.error().message());
      return false;
    }
    macs_[n.name] = *mac;
  }
  return true;
}

std::vector<FaultCase> Failover::Cases() {
  Lab* lab = &lab_;  // the cases must not outlive the lab
  auto restart = [lab](const std::string& node) {
    if (!lab->WaitAgentExit(node, 5000)) {
      (void)lab->SignalAgent(node, SIGKILL);
      (void)lab->WaitAgentExit(node, 5000);
    }
    (void)lab->StartAgent(node);
  };
  auto set_link = [lab](const std::string& node, bool up) { (void)lab->SetNodeLink(node, up); };
  std::vector<FaultCase> cases = {
      {"SIGTERM", Ms(5000), [lab](const std::string& n) { (void)lab->SignalAgent(n, SIGTERM); },
       restart},
      {"SIGKILL", Ms(10000), [lab](const std::string& n) { (void)lab->SignalAgent(n, SIGKILL); },
       restart},
      {"link-down", Ms(10000), [set_link](const std::string& n) { set_link(n, false); },
       [set_link](const std::string& n) {
         set_link(n, true);
         std::this_thread::sleep_for(Ms(3000));  // the agent rediscovers its subnets every 2 s
       }},
      // A node that crashes without a link event: its switch port out of forwarding (carrier kept
      // on both sides), its processes stopped. Only leases or heartbeats can tell.
      {"freeze", Ms(10000), [lab](const std::string& n) { (void)lab->FreezeNode(n, true); },
       [lab](const std::string& n) {
         (void)lab->FreezeNode(n, false);
         std::this_thread::sleep_for(Ms(3000));  // the thawed agent notices it lost the address
       }},
  };
  if (!pods_) return cases;
  // The winner's pod turns unready (its EndpointSlice entry ready=false): kube-proxy there drops
  // the traffic, the agents elect a node that still has a ready endpoint.
  cases.push_back({"endpoint", Ms(10000),
                   [lab](const std::string& n) { (void)lab->SetPodReady(PodOf(n), false); },
                   [lab](const std::string& n) { (void)lab->SetPodReady(PodOf(n), true); }});
  // The winner's kube-proxy dies (its rules stay): its agent's health check fails 3 times in a
  // row and the node leaves the election (docs/datapath.md).
  cases.push_back({"kube-proxy", Ms(10000),
                   [lab](const std::string& n) { (void)lab->SignalKubeProxy(n, SIGKILL); },
                   [lab](const std::string& n) {
                     if (auto s = lab->RestartKubeProxy(n); !s) Say("    " + s.error().message());
                     std::this_thread::sleep_for(Ms(2000));  // the agent's check passes again
                   }});
  return cases;
}

Result<std::string> Failover::Settle(const std::string& ip, bool v6) {
  if (heartbeats_) {
    auto deadline = SteadyClock::now() + Ms(20000);
    while (!AllAgentsHearEachOther(lab_) && SteadyClock::now() < deadline && !Stopping()) {
      std::this_thread::sleep_for(Ms(50));
    }
  }
  std::string winner;
  auto settled = WaitService(
      lab_, "default", kDemoServiceName,
      [&](const nlohmann::json& s) {
        winner = Announcer(s, v6);
        if (winner.empty()) return false;
        auto r = ProbeFromClient(lab_, ip, Ms(100));
        return r && r->ok && AnsweringNode(r->body) == winner;
      },
      Ms(20000), "the announcer of " + ip + " to answer");
  if (!settled) return Fail(settled.error());
  return winner;
}

std::string Failover::MacNames(const std::vector<packet::MacAddress>& list) const {
  std::string out;
  for (const auto& m : list) {
    std::string name = m.ToString();
    for (const auto& [node, mac] : macs_) {
      if (mac == m) name = node;
    }
    out += (out.empty() ? "" : ",") + name;
  }
  return out.empty() ? std::string("nobody") : out;
}

void Failover::ReportWatch(const NeighborWatch& nw, bool v6, const std::string& ip,
                           const std::string& winner, CaseFigures* fig) {
  const char* what = v6 ? "NS" : "ARP";
  if (!nw.error().empty()) {
    Say("    " + std::string(what) + " watch failed: " + nw.error());
    return;
  }
  const packet::MacAddress dead = macs_.at(winner);
  auto v = AnalyzeExpiry(nw.samples(), dead, 500);
  const bool sole = v.confirmed && v.after.size() == 1 && v.after[0] != dead;
  fig->sole_winner += sole ? 1 : 0;
  fig->gone.push_back(v.confirmed ? v.silent_ms : -1);
  fig->l2_handover.push_back(v.other_ms);
  char buf[200];
  if (v.confirmed) {
    std::snprintf(buf, sizeof buf,
                  "    %s: %s answered by another node after %.0f ms; %s (dead) stops "
                  "answering after %.0f ms; then only %s",
                  what, ip.c_str(), v.other_ms, winner.c_str(), v.silent_ms,
                  MacNames(v.after).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "    %s: %s (dead) still answers for %s after %.0f ms", what,
                  winner.c_str(), ip.c_str(),
                  nw.samples().empty() ? 0.0 : nw.samples().back().t_ms);
  }
  Say(buf);
}

void Failover::RunOnce(const FaultCase& c, bool v6, int run, const std::string& winner,
                       CaseFigures* fig) {
  const std::string& ip = v6 ? ip6_ : ip4_;
  const bool watch = c.name == "SIGKILL";
  std::unique_ptr<NeighborWatch> nw;
  auto o = MeasureFailover(
      lab_, ip,
      [&] {
        if (watch) {
          nw = std::make_unique<NeighborWatch>(lab_, ip, macs_.at(winner), SteadyClock::now(),
                                               WatchWindow());
        }
        c.fault(winner);
      },
      c.window);
  const char* fam = v6 ? "IPv6" : "IPv4";
  char buf[200];
  if (o.ms < 0) {
    std::snprintf(buf, sizeof buf, "  %-9s %s run %d: %s -> no answer within %.0f s",
                  c.name.c_str(), fam, run + 1, winner.c_str(),
                  static_cast<double>(c.window.count()) / 1000);
  } else {
    std::snprintf(buf, sizeof buf,
                  "  %-9s %s run %d: %s -> %s, outage %.0f ms, another node answered after "
                  "%.0f ms",
                  c.name.c_str(), fam, run + 1, o.from.c_str(), o.to.c_str(), o.ms, o.handover_ms);
  }
  Say(buf);
  fig->outages.push_back(o.ms);
  fig->handovers.push_back(o.handover_ms);
  if (nw) {
    nw->Join();
    ReportWatch(*nw, v6, ip, winner, fig);
  }
}

std::vector<std::string> Failover::Run(const FaultCase& c, bool v6) {
  const std::string fam = v6 ? "IPv6" : "IPv4";
  CaseFigures fig;
  for (int run = 0; run < runs_ && !Stopping(); ++run) {
    auto winner = Settle(v6 ? ip6_ : ip4_, v6);
    if (!winner) {
      Say("    " + c.name + " " + fam + ": " + winner.error().message());
      break;
    }
    RunOnce(c, v6, run, *winner, &fig);
    c.restore(*winner);
  }
  char head[64];
  std::snprintf(head, sizeof head, "%-10s %-5s ", c.name.c_str(), fam.c_str());
  const double window_s = static_cast<double>(c.window.count()) / 1000;
  std::vector<std::string> lines = {
      std::string(head) + "outage   " + Stats(fig.outages, runs_, window_s),
      std::string(head) + "handover " +
          Stats(fig.handovers, runs_, window_s, "no other node answered"),
  };
  if (c.name == "SIGKILL") {
    const double ws = static_cast<double>(WatchWindow().count()) / 1000;
    const std::string l2 = v6 ? "NS " : "ARP";
    lines.push_back(std::string(head) + l2 + " new  " +
                    Stats(fig.l2_handover, runs_, ws, "no other node answered"));
    lines.push_back(std::string(head) + l2 + " dead " +
                    Stats(fig.gone, runs_, ws, "the dead node kept answering"));
    lines.push_back(std::string(head) +
                    "then only the new winner answers: " + std::to_string(fig.sole_winner) +
                    " of " + std::to_string(fig.gone.size()) + " runs");
  }
  return lines;
}

// The cases of `all` that --cases names (a name anywhere in the list's text selects it; empty:
// every case); says which named cases need kube-proxy when the lab has no pods.
std::vector<FaultCase> SelectCases(std::vector<FaultCase> all, const std::string& wanted,
                                   bool pods) {
  if (wanted.empty()) return all;
  if (!pods) {
    for (const char* needs_pods : {"endpoint", "kube-proxy"}) {
      if (wanted.find(needs_pods) != std::string::npos) {
        Say(std::string("case ") + needs_pods +
            " needs kube-proxy in the lab (--kube-proxy); skipped");
      }
    }
  }
  std::erase_if(all, [&](const FaultCase& c) { return wanted.find(c.name) == std::string::npos; });
  return all;
}

void PrintTable(const std::vector<std::string>& lines, int runs, const std::string& lifetime) {
  Say("\noutage seen by the client (ms; probes every 10 ms, 30 ms timeout), " +
      std::to_string(runs) + " runs per case:");
  Say("(outage: longest stretch without an answer; handover: fault -> first answer from another "
      "node)");
  Say("(SIGKILL, asked with ARP / NS from the client every 25 ms: \"new\": kill -> first answer "
      "from another node; \"dead\": kill -> the dead agent's node stops answering; address "
      "lifetime " +
      lifetime + ")");
  Say("case       family          min   median      max");
  for (const auto& l : lines) Say(l);
}

int RunFailover(const FailoverFlags& f) {
  LabConfig cfg = MeasureLabConfig(f.measure);
  cfg.nodes = f.nodes;
  const Duration lifetime = AddressLifetime(f.measure, cfg);
  const std::string lifetime_text = DurationText(lifetime);
  Say("bringing up lab \"" + cfg.name + "\" (" + std::to_string(cfg.nodes) + " nodes, lease " +
      cfg.lease_duration + ", retry " + cfg.retry_period + ", address lifetime " + lifetime_text +
      ")");
  auto lab = StartMeasureLab(cfg);
  if (!lab) return cli::kExitFailure;
  Failover failover(*lab, f.measure.runs, lifetime);
  if (!failover.SetUp()) return cli::kExitFailure;
  if (f.census > Duration::zero()) {
    for (const auto& line : Census(*lab, f.census)) Say(line);
  }
  std::vector<std::string> lines;
  for (const auto& c : SelectCases(failover.Cases(), f.cases, failover.pods())) {
    for (bool v6 : {false, true}) {
      auto more = failover.Run(c, v6);
      lines.insert(lines.end(), more.begin(), more.end());
    }
  }
  PrintTable(lines, f.measure.runs, lifetime_text);
  return FinishMeasureLab(*lab);
}

}  // namespace

Subcommand AddFailover(cli::App& lab) {
  auto f = std::make_shared<FailoverFlags>();
  auto* sub = AddMeasureCommand(
      lab, "failover", "the outage the client sees when the node announcing an address fails",
      /*runs=*/3, &f->measure);
  sub->footer(
      "Cases: the winner's agent gets SIGTERM / SIGKILL, its link goes down, its node freezes\n"
      "(port out of forwarding, no link event, processes stopped); with --kube-proxy, requests go\n"
      "to one pod per node and the cases endpoint (the winner's pod turns unready) and kube-proxy\n"
      "(SIGKILL there) are added. After SIGKILL, ARP / NS tell until the dead node stops\n"
      "answering (the agents' --address-lifetime).\n");
  AddKubeProxyFlags(*sub, &f->measure.kube_proxy);
  cli::AddDuration(*sub, "--address-lifetime", &f->measure.address_lifetime,
                   "the valid lifetime of the agents' addresses (default: the lease duration)")
      ->default_str("");
  sub->add_option("--nodes", f->nodes, "nodes in the lab (a ring of heartbeat peers beyond 5)")
      ->check(CLI::Range(2, 32));
  cli::AddDuration(*sub, "--census", &f->census,
                   "before the cases, watch the idle lab this long and print what it costs: "
                   "heartbeat datagrams/s, agent CPU and RSS, API requests/s by user")
      ->default_str("0s");
  sub->add_option("--cases", f->cases,
                  "the cases to run, of SIGTERM,SIGKILL,link-down,freeze and with --kube-proxy "
                  "endpoint,kube-proxy (default: all)")
      ->type_name("LIST");
  return {sub, [f] { return RunFailover(*f); }};
}

}  // namespace pylon::lab
