// `pylon lab`: a whole cluster on one machine (see lab.h), the demo and the failover measurement.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "k8s/client_impl.h"
#include "k8s/resource.h"
#include "k8s/rest_config.h"
#include "lab/lab.h"
#include "lab/neighbor_probe.h"
#include "lab/netns.h"
#include "lab/responder.h"

namespace pylon::lab {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

volatile bool g_stop = false;
void OnSignal(int) { g_stop = true; }

void InstallSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// Minimal flag parsing: --key value / --key=value / --flag.
struct Flags {
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;
  std::string error;
  std::string Get(const std::string& k, const std::string& dflt = "") const {
    auto it = values.find(k);
    return it == values.end() ? dflt : it->second;
  }
  bool Has(const std::string& k) const { return values.count(k) > 0; }
};

Flags ParseFlags(int argc, char** argv, int start, const std::vector<std::string>& booleans) {
  Flags f;
  for (int i = start; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      f.positional.push_back(a);
      continue;
    }
    a = a.substr(2);
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      f.values[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (std::find(booleans.begin(), booleans.end(), a) != booleans.end()) {
      f.values[a] = "true";
    } else if (i + 1 < argc) {
      f.values[a] = argv[++i];
    } else {
      f.error = "flag --" + a + " needs a value";
    }
  }
  return f;
}

Result<int> IntFlag(const Flags& f, const std::string& k, int dflt, int lo, int hi) {
  if (!f.Has(k)) return dflt;
  try {
    size_t pos = 0;
    int v = std::stoi(f.Get(k), &pos);
    if (pos == f.Get(k).size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  return Fail(ErrorCode::kInvalidArgument, "--" + k + " must be an integer in [" +
                                               std::to_string(lo) + "," + std::to_string(hi) + "]");
}

void Say(const std::string& s) {
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
}
void Step(const std::string& s) { Say("\n\033[1m==> " + s + "\033[0m"); }
void Indent(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    Say("    " + text.substr(start, end - start));
    start = end + 1;
  }
}

Result<nlohmann::json> GetJson(const Lab& lab, const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("-o");
  a.push_back("json");
  auto out = lab.Kubectl(a);
  if (!out) return Fail(out.error());
  try {
    return nlohmann::json::parse(*out);
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kInvalidArgument, std::string("kubectl output: ") + e.what());
  }
}

// Waits until `pred(service json)` holds; returns the Service or a timeout error.
Result<nlohmann::json> WaitService(const Lab& lab, const std::string& ns, const std::string& name,
                                   const std::function<bool(const nlohmann::json&)>& pred,
                                   Ms timeout, const std::string& what) {
  auto deadline = SteadyClock::now() + timeout;
  std::string last;
  while (SteadyClock::now() < deadline && !g_stop) {
    auto svc = GetJson(lab, {"get", "service", "-n", ns, name});
    if (svc) {
      try {
        if (pred(*svc)) return *svc;
      } catch (const std::exception&) {
      }
    } else {
      last = svc.error().message();
    }
    std::this_thread::sleep_for(Ms(20));
  }
  return Fail(ErrorCode::kUnavailable,
              "timed out waiting for " + what + (last.empty() ? "" : ": " + last));
}

std::string Annotation(const nlohmann::json& obj, const std::string& key) {
  auto meta = obj.find("metadata");
  if (meta == obj.end()) return "";
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return "";
  auto it = ann->find(key);
  return it != ann->end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<std::string> IngressIps(const nlohmann::json& svc) {
  std::vector<std::string> out;
  try {
    for (const auto& i : svc.at("status").at("loadBalancer").at("ingress")) {
      out.push_back(i.at("ip").get<std::string>());
    }
  } catch (const std::exception&) {
  }
  return out;
}

// The announcing node for a family ("node2,eth0" → "node2"); empty if none yet.
std::string Announcer(const nlohmann::json& svc, bool v6) {
  std::string a = Annotation(svc, v6 ? "purelb.io/announcing-IPv6" : "purelb.io/announcing-IPv4");
  return a.substr(0, a.find(','));
}

Result<ProbeResult> ProbeFromClient(const Lab& lab, const std::string& ip, Ms timeout) {
  return InNetns(lab.topology().ClientNetns(), [&] { return ProbeOnce(ip, 80, timeout); });
}

const char* kDemoGroup = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: localdual
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 192.0.2.225-192.0.2.229
      subnet: 192.0.2.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:1:0:8000::4/126
      subnet: 2001:db8:1::/64
)";

const char* kDemoService = R"(apiVersion: v1
kind: Service
metadata:
  name: kuard-svc-dual-remote
  namespace: default
  annotations:
    purelb.io/service-group: localdual
spec:
  type: LoadBalancer
  ipFamilyPolicy: RequireDualStack
  ipFamilies:
  - IPv4
  - IPv6
  selector:
    app: kuard
  ports:
  - port: 80
    protocol: TCP
    targetPort: 8080
)";

struct Outage {
  double ms = -1;  // -1: the address never came back within the run
  std::string from, to;
  double handover_ms = -1;  // fault -> first answer from another node; -1: none
};

double SinceMs(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

// Probes `ip` from the client every 10 ms (30 ms timeout per attempt), runs `fault` on this
// thread after 500 ms of answers, and returns the longest outage seen by the client and the node
// that answered before and after. The run ends `window` after the fault, or earlier once the
// address has answered steadily for 300 ms after an outage (or for 1.5 s when there was none).
Outage MeasureFailover(const Lab& lab, const std::string& ip, const std::function<void()>& fault,
                       Ms window) {
  std::vector<ProbeSample> samples;
  std::atomic<double> fault_ms{-1};
  std::atomic<bool> done{false};
  const auto t0 = SteadyClock::now();
  std::thread prober([&] {
    (void)InNetns(lab.topology().ClientNetns(), [&]() -> int {
      auto next = SteadyClock::now();
      double last_fail = -1;
      while (!g_stop) {
        double t = SinceMs(t0);
        auto r = ProbeOnce(ip, 80, Ms(30));
        samples.push_back({t, r.ok, AnsweringNode(r.body)});
        const double f = fault_ms.load();
        if (!r.ok) last_fail = t;
        if (f >= 0) {
          if (t > f + static_cast<double>(window.count())) break;
          const bool failed_since_fault = last_fail >= f;
          if (r.ok && failed_since_fault && t - last_fail >= 300) break;
          if (r.ok && !failed_since_fault && t - f >= 1500 && !samples.empty() &&
              AnsweringNode(r.body) != samples.front().node) {
            break;
          }
        }
        next += Ms(10);
        std::this_thread::sleep_until(next);
        if (SteadyClock::now() > next) next = SteadyClock::now();
      }
      done = true;
      return 0;
    });
    done = true;
  });
  while (!done && SinceMs(t0) < 500) std::this_thread::sleep_for(Ms(5));
  if (!done) {
    fault_ms = SinceMs(t0);
    fault();
  }
  prober.join();
  Outage o;
  const double f = fault_ms.load();
  for (const auto& s : samples) {
    if (s.ok && s.t_ms < f) o.from = s.node;
    if (s.ok) o.to = s.node;
  }
  for (const auto& s : samples) {
    if (s.ok && s.t_ms >= f && s.node != o.from) {
      o.handover_ms = s.t_ms - f;
      break;
    }
  }
  if (samples.empty() || !samples.back().ok) return o;
  o.ms = LongestOutageMs(samples);
  return o;
}

// Waits up to `timeout` until the Service's `kind` events (e.g. AnnouncingLocal) number `count`.
bool WaitEvents(const Lab& lab, const std::string& ns, const std::string& name,
                const std::string& reason, size_t count, Ms timeout) {
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline && !g_stop) {
    auto ev = GetJson(lab, {"get", "events", "-n", ns});
    size_t n = 0;
    if (ev) {
      try {
        for (const auto& e : ev->at("items")) {
          if (e.value("reason", "") == reason && e.at("involvedObject").value("name", "") == name) {
            ++n;
          }
        }
      } catch (const std::exception&) {
      }
    }
    if (n >= count) return true;
    std::this_thread::sleep_for(Ms(50));
  }
  return false;
}

std::string Stats(std::vector<double> v, int runs, double window_s,
                  const std::string& missing = "the address never came back") {
  std::vector<double> ok;
  for (double x : v) {
    if (x >= 0) ok.push_back(x);
  }
  std::string out;
  char buf[160];
  if (!ok.empty()) {
    std::sort(ok.begin(), ok.end());
    double median =
        ok.size() % 2 ? ok[ok.size() / 2] : (ok[ok.size() / 2 - 1] + ok[ok.size() / 2]) / 2;
    std::snprintf(buf, sizeof buf, "%8.0f %8.0f %8.0f", ok.front(), median, ok.back());
    out = buf;
  } else {
    out = "       -        -        -";
  }
  if (ok.size() < v.size()) {
    std::snprintf(buf, sizeof buf, "   %zu of %d runs: %s within %.0f s", v.size() - ok.size(),
                  runs, missing.c_str(), window_s);
    out += buf;
  }
  if (static_cast<int>(v.size()) < runs) {
    std::snprintf(buf, sizeof buf, "   (%zu of %d runs done)", v.size(), runs);
    out += buf;
  }
  return out;
}

// "3s", "2500ms" -> ms; -1 when malformed. Enough for the lab's flags (the agent parses the
// full Go syntax itself).
long long ParseMs(const std::string& text) {
  const bool ms = text.size() > 2 && text.compare(text.size() - 2, 2, "ms") == 0;
  const bool s = !ms && text.size() > 1 && text.back() == 's';
  if (!ms && !s) return -1;
  const std::string num = text.substr(0, text.size() - (ms ? 2 : 1));
  if (num.empty() || num.size() > 9 ||
      !std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoll(num) * (ms ? 1 : 1000);
}

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
      auto r = InNetns(lab.topology().ClientNetns(), [&] { return WatchAnswers(o, t0, &g_stop); });
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

// A value of the agent's /metrics in `node` (e.g. `purelb_heartbeat_peers{state="alive"}`, labels
// written as the agent renders them); -1 when the agent does not answer or lacks the metric.
double AgentMetric(const LabNode& node, const std::string& series) {
  auto r = InNetns(node.netns, [] { return ProbeOnce("127.0.0.1", 7473, Ms(500), "/metrics"); });
  if (!r || !r->ok) return -1;
  const std::string text = "\n" + r->body;
  const std::string key = "\n" + series + " ";
  auto at = text.find(key);
  if (at == std::string::npos) return -1;
  try {
    return std::stod(text.substr(at + key.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

// Whether every agent hears every other one. A restarted agent that never heard a peer judges it
// by its lease alone (docs/failover.md), so a fault right after a restart would measure the lease,
// not the heartbeats.
bool AllAgentsHearEachOther(const Lab& lab) {
  const double others = static_cast<double>(lab.topology().nodes().size()) - 1;
  for (const auto& n : lab.topology().nodes()) {
    if (AgentMetric(n, "purelb_heartbeat_peers{state=\"alive\"}") != others) return false;
  }
  return true;
}

// A lab with the localdual ServiceGroup for the measurements.
Status SetUpMeasureLab(Lab& lab) {
  if (auto s = lab.Up(); !s) return s;
  return lab.Apply(kDemoGroup);
}

int Failover(const Flags& f) {
  auto runs = IntFlag(f, "runs", 3, 1, 100);
  if (!runs) {
    Say(runs.error().message());
    return 2;
  }
  LabConfig cfg;
  cfg.name = f.Get("name", "failover");
  cfg.binary = f.Get("binary");
  cfg.k8s_bin_dir = f.Get("k8s-bin-dir");
  // The valid lifetime of the addresses the agents add (default: the lease duration).
  const std::string lifetime = f.Get("address-lifetime", cfg.lease_duration);
  const long long lifetime_ms = ParseMs(lifetime);
  if (lifetime_ms <= 0) {
    Say("--address-lifetime: want e.g. 3s or 2500ms, got \"" + lifetime + "\"");
    return 2;
  }
  if (f.Has("address-lifetime")) {
    cfg.agent_args.insert(cfg.agent_args.end(), {"--address-lifetime", lifetime});
  }
  // With kube-proxy the client's requests go to pods (docs/datapath.md): one pod per node behind
  // an externalTrafficPolicy Local Service, announced from a node with a ready local endpoint
  // (--etp-local=elect), so the pod that answers names the node that holds the address.
  cfg.kube_proxy = f.Has("kube-proxy");
  cfg.proxy_mode = f.Get("proxy-mode", "nftables");
  if (cfg.kube_proxy) cfg.agent_args.push_back("--etp-local=elect");
  Lab lab(cfg);
  Say("bringing up lab \"" + cfg.name + "\" (3 nodes, lease " + cfg.lease_duration + ", retry " +
      cfg.retry_period + ", address lifetime " + lifetime + ")");
  if (auto s = SetUpMeasureLab(lab); !s) {
    Say("lab up failed: " + s.error().message());
    return 1;
  }
  const bool pods = lab.kube_proxy_running();
  if (cfg.kube_proxy) {
    Say(pods ? "kube-proxy (" + cfg.proxy_mode +
                   " mode) on every node: requests go to one pod per node, externalTrafficPolicy "
                   "Local"
             : "kube-proxy is NOT running, the nodes' responders answer instead: " +
                   lab.kube_proxy_problem());
  }
  bool heartbeats = false;
  for (const auto& a : lab.config().agent_args) heartbeats |= a == "--heartbeat-key-file";
  Say(std::string("heartbeats between agents: ") + (heartbeats ? "on" : "off"));
  const std::string svc_name = "kuard-svc-dual-remote";
  if (auto s =
          lab.Apply(std::string(kDemoService) + (pods ? "  externalTrafficPolicy: Local\n" : ""));
      !s) {
    Say("apply failed: " + s.error().message());
    return 1;
  }
  // The pod of each node ("kuard-node1", ...).
  auto pod_of = [](const std::string& node) { return "kuard-" + node; };
  if (pods) {
    for (const auto& n : lab.topology().nodes()) {
      if (auto s = lab.AddPod(n.name, pod_of(n.name), svc_name); !s) {
        Say("pod on " + n.name + ": " + s.error().message());
        return 1;
      }
    }
  }
  auto svc = WaitService(
      lab, "default", svc_name,
      [](const nlohmann::json& s) {
        return IngressIps(s).size() == 2 && !Announcer(s, false).empty() &&
               !Announcer(s, true).empty();
      },
      Ms(20000), "two addresses and their announcing nodes");
  if (!svc) {
    Say(svc.error().message());
    return 1;
  }
  std::string ip4, ip6;
  for (const auto& ip : IngressIps(*svc)) (ip.find(':') == std::string::npos ? ip4 : ip6) = ip;

  auto node_of = [&](const std::string& name) -> const LabNode* {
    for (const auto& n : lab.topology().nodes()) {
      if (n.name == name) return &n;
    }
    return nullptr;
  };
  // Which node answers ARP / NS is told by its eth0 MAC.
  std::map<std::string, packet::MacAddress> macs;
  for (const auto& n : lab.topology().nodes()) {
    auto mac = InterfaceMacIn(n.netns, "eth0");
    if (!mac) {
      Say("MAC of " + n.name + ": " + mac.error().message());
      return 1;
    }
    macs[n.name] = *mac;
  }
  auto mac_names = [&](const std::vector<packet::MacAddress>& list) {
    std::string out;
    for (const auto& m : list) {
      std::string name = m.ToString();
      for (const auto& [node, mac] : macs) {
        if (mac == m) name = node;
      }
      out += (out.empty() ? "" : ",") + name;
    }
    return out.empty() ? std::string("nobody") : out;
  };
  struct Case {
    std::string name;
    Ms window;
    std::function<void(const std::string&)> fault, restore;
  };
  auto restart = [&](const std::string& node) {
    if (!lab.WaitAgentExit(node, 5000)) {
      (void)lab.SignalAgent(node, SIGKILL);
      (void)lab.WaitAgentExit(node, 5000);
    }
    (void)lab.StartAgent(node);
  };
  std::vector<Case> cases = {
      {"SIGTERM", Ms(5000), [&](const std::string& n) { (void)lab.SignalAgent(n, SIGTERM); },
       restart},
      {"SIGKILL", Ms(10000), [&](const std::string& n) { (void)lab.SignalAgent(n, SIGKILL); },
       restart},
      {"link-down", Ms(10000),
       [&](const std::string& n) {
         if (auto* node = node_of(n)) (void)lab.topology().SetNodeLink(*node, false);
       },
       [&](const std::string& n) {
         if (auto* node = node_of(n)) (void)lab.topology().SetNodeLink(*node, true);
         std::this_thread::sleep_for(Ms(3000));  // the agent rediscovers its subnets every 2 s
       }},
      // A node that crashes without a link event: its switch port out of forwarding (carrier kept
      // on both sides), its processes stopped. Only leases or heartbeats can tell.
      {"freeze", Ms(10000), [&](const std::string& n) { (void)lab.FreezeNode(n, true); },
       [&](const std::string& n) {
         (void)lab.FreezeNode(n, false);
         std::this_thread::sleep_for(Ms(3000));  // the thawed agent notices it lost the address
       }},
  };
  if (pods) {
    // The winner's pod turns unready (its EndpointSlice entry ready=false): kube-proxy there
    // drops the traffic, the agents elect a node that still has a ready endpoint.
    cases.push_back({"endpoint", Ms(10000),
                     [&](const std::string& n) { (void)lab.SetPodReady(pod_of(n), false); },
                     [&](const std::string& n) { (void)lab.SetPodReady(pod_of(n), true); }});
    // The winner's kube-proxy dies (its rules stay): its agent's health check fails 3 times in a
    // row and the node leaves the election (docs/datapath.md).
    cases.push_back({"kube-proxy", Ms(10000),
                     [&](const std::string& n) { (void)lab.SignalKubeProxy(n, SIGKILL); },
                     [&](const std::string& n) {
                       if (auto s = lab.RestartKubeProxy(n); !s) Say("    " + s.error().message());
                       std::this_thread::sleep_for(Ms(2000));  // the agent's check passes again
                     }});
  }
  const std::string only =
      f.Get("cases", pods ? "SIGTERM,SIGKILL,link-down,freeze,endpoint,kube-proxy"
                          : "SIGTERM,SIGKILL,link-down,freeze");
  for (const std::string& want : {std::string("endpoint"), std::string("kube-proxy")}) {
    if (!pods && only.find(want) != std::string::npos) {
      Say("case " + want + " needs kube-proxy in the lab (--kube-proxy); skipped");
    }
  }
  std::vector<std::string> lines;
  for (const auto& c : cases) {
    if (only.find(c.name) == std::string::npos) continue;
    for (bool v6 : {false, true}) {
      const std::string& ip = v6 ? ip6 : ip4;
      const std::string fam = v6 ? "IPv6" : "IPv4";
      std::vector<double> outages, handovers, gone, l2_handover;
      int sole_winner = 0;
      const bool watch = c.name == "SIGKILL";
      const Ms watch_window(lifetime_ms + 5000);
      for (int run = 0; run < *runs && !g_stop; ++run) {
        // Settle: every agent hears the others (heartbeats on), the announcer answers.
        if (heartbeats) {
          auto deadline = SteadyClock::now() + Ms(20000);
          while (!AllAgentsHearEachOther(lab) && SteadyClock::now() < deadline && !g_stop) {
            std::this_thread::sleep_for(Ms(50));
          }
        }
        std::string winner;
        auto settled = WaitService(
            lab, "default", svc_name,
            [&](const nlohmann::json& s) {
              winner = Announcer(s, v6);
              if (winner.empty()) return false;
              auto r = ProbeFromClient(lab, ip, Ms(100));
              return r && r->ok && AnsweringNode(r->body) == winner;
            },
            Ms(20000), "the announcer of " + ip + " to answer");
        if (!settled) {
          Say("    " + c.name + " " + fam + ": " + settled.error().message());
          break;
        }
        std::unique_ptr<NeighborWatch> nw;
        auto o = MeasureFailover(
            lab, ip,
            [&] {
              if (watch) {
                nw = std::make_unique<NeighborWatch>(lab, ip, macs[winner], SteadyClock::now(),
                                                     watch_window);
              }
              c.fault(winner);
            },
            c.window);
        char buf[200];
        if (o.ms < 0) {
          std::snprintf(buf, sizeof buf, "  %-9s %s run %d: %s -> no answer within %.0f s",
                        c.name.c_str(), fam.c_str(), run + 1, winner.c_str(),
                        static_cast<double>(c.window.count()) / 1000);
        } else {
          std::snprintf(buf, sizeof buf,
                        "  %-9s %s run %d: %s -> %s, outage %.0f ms, another node answered after "
                        "%.0f ms",
                        c.name.c_str(), fam.c_str(), run + 1, o.from.c_str(), o.to.c_str(), o.ms,
                        o.handover_ms);
        }
        Say(buf);
        outages.push_back(o.ms);
        handovers.push_back(o.handover_ms);
        if (nw) {
          nw->Join();
          const char* what = v6 ? "NS" : "ARP";
          if (!nw->error().empty()) {
            Say("    " + std::string(what) + " watch failed: " + nw->error());
          } else {
            auto v = AnalyzeExpiry(nw->samples(), macs[winner], 500);
            const bool sole = v.confirmed && v.after.size() == 1 && v.after[0] != macs[winner];
            sole_winner += sole ? 1 : 0;
            gone.push_back(v.confirmed ? v.silent_ms : -1);
            l2_handover.push_back(v.other_ms);
            if (v.confirmed) {
              std::snprintf(buf, sizeof buf,
                            "    %s: %s answered by another node after %.0f ms; %s (dead) stops "
                            "answering after %.0f ms; then only %s",
                            what, ip.c_str(), v.other_ms, winner.c_str(), v.silent_ms,
                            mac_names(v.after).c_str());
            } else {
              std::snprintf(buf, sizeof buf, "    %s: %s (dead) still answers for %s after %.0f ms",
                            what, winner.c_str(), ip.c_str(),
                            nw->samples().empty() ? 0.0 : nw->samples().back().t_ms);
            }
            Say(buf);
          }
        }
        c.restore(winner);
      }
      char head[64];
      std::snprintf(head, sizeof head, "%-10s %-5s ", c.name.c_str(), fam.c_str());
      lines.push_back(std::string(head) + "outage   " +
                      Stats(outages, *runs, static_cast<double>(c.window.count()) / 1000));
      lines.push_back(std::string(head) + "handover " +
                      Stats(handovers, *runs, static_cast<double>(c.window.count()) / 1000,
                            "no other node answered"));
      if (watch) {
        const double ws = static_cast<double>(watch_window.count()) / 1000;
        const std::string l2 = v6 ? "NS " : "ARP";
        lines.push_back(std::string(head) + l2 + " new  " +
                        Stats(l2_handover, *runs, ws, "no other node answered"));
        lines.push_back(std::string(head) + l2 + " dead " +
                        Stats(gone, *runs, ws, "the dead node kept answering"));
        lines.push_back(std::string(head) +
                        "then only the new winner answers: " + std::to_string(sole_winner) +
                        " of " + std::to_string(gone.size()) + " runs");
      }
    }
  }
  Say("\noutage seen by the client (ms; probes every 10 ms, 30 ms timeout), " +
      std::to_string(*runs) + " runs per case:");
  Say("(outage: longest stretch without an answer; handover: fault -> first answer from another "
      "node)");
  Say("(SIGKILL, asked with ARP / NS from the client every 25 ms: \"new\": kill -> first answer "
      "from another node; \"dead\": kill -> the dead agent's node stops answering; address "
      "lifetime " +
      lifetime + ")");
  Say("case       family          min   median      max");
  for (const auto& l : lines) Say(l);
  auto down = lab.Down();
  if (!down) Say(down.error().message());
  return 0;
}

// Service creation → the address answers on the client, and delete → it stops answering,
// measured from just before the API call (k8s client: POST / DELETE) to the first successful
// (resp. first failing) HTTP probe from the client; probes every 5 ms, 20 ms timeout.
int Timing(const Flags& f) {
  auto runs = IntFlag(f, "runs", 5, 1, 100);
  if (!runs) {
    Say(runs.error().message());
    return 2;
  }
  LabConfig cfg;
  cfg.name = f.Get("name", "timing");
  cfg.binary = f.Get("binary");
  cfg.k8s_bin_dir = f.Get("k8s-bin-dir");
  Lab lab(cfg);
  if (auto s = SetUpMeasureLab(lab); !s) {
    Say("lab up failed: " + s.error().message());
    return 1;
  }
  auto rc = k8s::LoadKubeconfig(lab.Kubeconfig());
  if (!rc) {
    Say(rc.error().message());
    return 1;
  }
  auto client = k8s::NewClient(*rc, "pylon-lab/0.1.0");
  if (!client) {
    Say(client.error().message());
    return 1;
  }
  const std::vector<std::string> ips = {"192.0.2.229", "2001:db8:1:0:8000::7"};
  nlohmann::json svc = {{"apiVersion", "v1"},
                        {"kind", "Service"},
                        {"metadata",
                         {{"name", "timing"},
                          {"namespace", "default"},
                          {"annotations",
                           {{"purelb.io/service-group", "localdual"},
                            {"purelb.io/addresses", ips[0] + "," + ips[1]}}}}},
                        {"spec",
                         {{"type", "LoadBalancer"},
                          {"ipFamilyPolicy", "RequireDualStack"},
                          {"ipFamilies", {"IPv4", "IPv6"}},
                          {"selector", {{"app", "timing"}}},
                          {"ports", {{{"port", 80}, {"protocol", "TCP"}, {"targetPort", 8080}}}}}}};
  // Probes both addresses until each has reached `want_ok`; returns ms since `t0` per address
  // (-1 when not within 10 s).
  auto watch = [&](bool want_ok, const std::function<void()>& action) {
    std::vector<double> at(ips.size(), -1);
    std::atomic<bool> started{false};
    SteadyClock::time_point t0;
    std::thread prober([&] {
      (void)InNetns(lab.topology().ClientNetns(), [&]() -> int {
        while (!started) std::this_thread::sleep_for(Ms(1));
        while (!g_stop && SinceMs(t0) < 10000) {
          bool all = true;
          for (size_t i = 0; i < ips.size(); ++i) {
            if (at[i] >= 0) continue;
            double t = SinceMs(t0);
            if (ProbeOnce(ips[i], 80, Ms(20)).ok == want_ok) {
              at[i] = want_ok ? SinceMs(t0) : t;
            } else {
              all = false;
            }
          }
          if (all) break;
          std::this_thread::sleep_for(Ms(5));
        }
        return 0;
      });
    });
    t0 = SteadyClock::now();
    started = true;
    action();
    prober.join();
    return at;
  };
  std::vector<std::vector<double>> create(2), del(2);
  for (int run = 0; run < *runs && !g_stop; ++run) {
    auto c = watch(true, [&] {
      if (auto r = (*client)->Create(k8s::resources::Services(), svc); !r) Say(r.error().message());
    });
    auto d = watch(false, [&] {
      if (auto s = (*client)->Delete(k8s::resources::Services(), "default", "timing"); !s) {
        Say(s.error().message());
      }
    });
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "  run %d: create -> reachable IPv4 %.0f ms, IPv6 %.0f ms; delete -> "
                  "withdrawn IPv4 %.0f ms, IPv6 %.0f ms",
                  run + 1, c[0], c[1], d[0], d[1]);
    Say(buf);
    for (int i = 0; i < 2; ++i) {
      create[i].push_back(c[i]);
      del[i].push_back(d[i]);
    }
    // The next run starts once the Service is gone from the API.
    auto deadline = SteadyClock::now() + Ms(10000);
    while (SteadyClock::now() < deadline) {
      auto g = (*client)->Get(k8s::resources::Services(), "default", "timing");
      if (!g && g.error().code() == ErrorCode::kNotFound) break;
      std::this_thread::sleep_for(Ms(20));
    }
  }
  Say("\nms over " + std::to_string(*runs) + " runs       min   median      max");
  Say("create -> reachable IPv4 " + Stats(create[0], *runs, 10));
  Say("create -> reachable IPv6 " + Stats(create[1], *runs, 10));
  Say("delete -> withdrawn IPv4 " + Stats(del[0], *runs, 10));
  Say("delete -> withdrawn IPv6 " + Stats(del[1], *runs, 10));
  auto down = lab.Down();
  if (!down) Say(down.error().message());
  return 0;
}

// The LabConfig of `up` and `demo`: --name, --binary, --k8s-bin-dir and --nodes (within [min_nodes,
// max_nodes]).
Result<LabConfig> ConfigFromFlags(const Flags& f, int min_nodes, int max_nodes) {
  LabConfig cfg;
  cfg.name = f.Get("name", "demo");
  cfg.binary = f.Get("binary");
  cfg.k8s_bin_dir = f.Get("k8s-bin-dir");
  cfg.kube_proxy = f.Has("kube-proxy");
  cfg.bgp = f.Has("bgp");
  cfg.proxy_mode = f.Get("proxy-mode", "nftables");
  auto nodes = IntFlag(f, "nodes", 3, min_nodes, max_nodes);
  if (!nodes) return Fail(nodes.error());
  cfg.nodes = *nodes;
  return cfg;
}

const char* kBgpService = R"(apiVersion: v1
kind: Service
metadata:
  name: routed-web
  namespace: default
  annotations:
    purelb.io/service-group: routed
spec:
  type: LoadBalancer
  ipFamilyPolicy: RequireDualStack
  ipFamilies: [IPv4, IPv6]
  selector:
    app: routed-web
  ports:
  - port: 80
    targetPort: 8080
)";

// `demo --bgp`: a virtual ServiceGroup announced over BGP; the router's multipath route and the
// client behind the router reaching every node (docs/bgp.md).
void DemoBgp(Lab& lab) {
  Step(
      "BGP: a ServiceGroup of virtual addresses (on no node subnet), announced by BIRD on every "
      "node to the upstream BIRD router");
  const std::string manifest = std::string(kRoutedServiceGroup) + "---\n" + kBgpService;
  Indent(manifest);
  if (auto s = lab.Apply(manifest); !s) {
    Say("apply failed: " + s.error().message());
    return;
  }
  auto svc = WaitService(
      lab, "default", "routed-web",
      [](const nlohmann::json& x) { return IngressIps(x).size() == 2; }, Ms(20000),
      "two addresses");
  if (!svc) {
    Say(svc.error().message());
    return;
  }
  auto ips = IngressIps(*svc);
  if (lab.kube_proxy_running()) {
    Say("    pods of routed-web on node1 and node2; kube-proxy on the node the router chose "
        "forwards to them");
    for (const auto& [node, pod] :
         {std::pair<std::string, std::string>{"node1", "routed-a"}, {"node2", "routed-b"}}) {
      if (auto st = lab.AddPod(node, pod, "routed-web"); !st) {
        Say("    pod " + pod + ": " + st.error().message());
      }
    }
  }
  for (const auto& ip : ips) {
    const std::string prefix = ip + (ip.find(':') != std::string::npos ? "/128" : "/32");
    for (int i = 0; i < 300 && !g_stop; ++i) {
      auto h = lab.RouterNexthops(prefix);
      if (h && h->size() == lab.topology().nodes().size()) break;
      std::this_thread::sleep_for(Ms(50));
    }
    std::string out;
    (void)RunCommand(
        {"ip", ip.find(':') != std::string::npos ? "-6" : "-4", "route", "show", "exact", prefix},
        &out, lab.topology().LanNetns());
    Say("    router$ ip route show " + prefix + "   (one next hop per node: ECMP)");
    Indent(out);
  }
  Say("    router$ birdc show protocols");
  if (auto out = lab.RouterBird("show protocols")) Indent(*out);
  Say("    wan client (behind the router)$ curl http://" + ips[0] +
      "/   x 30, new connection each time (who answered):");
  std::map<std::string, int> by;
  for (int i = 0; i < 30 && !g_stop; ++i) {
    auto r = InNetns(lab.topology().WanNetns(), [&] { return ProbeOnce(ips[0], 80, Ms(500)); });
    ++by[r && r->ok ? r->body.substr(0, r->body.find_first_of(" \n")) : "no answer"];
  }
  for (const auto& [who, n] : by) Say("      " + who + ": " + std::to_string(n));
  Say("$ kubectl get bgppeer lab-router -o jsonpath='{.status.nodes}'");
  if (auto out = lab.Kubectl({"get", "bgppeer", "lab-router", "-o", "jsonpath={.status.nodes}"})) {
    Indent(*out + "\n");
  }
}

int Demo(const Flags& f) {
  auto parsed = ConfigFromFlags(f, 2, 16);
  if (!parsed) {
    Say(parsed.error().message());
    return 2;
  }
  const LabConfig& cfg = *parsed;
  Lab lab(cfg);
  Step("Bringing up lab \"" + cfg.name + "\": " + std::to_string(cfg.nodes) +
       " nodes and a client on a bridge, etcd + kube-apiserver, allocator and one agent per node");
  if (auto s = lab.Up(); !s) {
    Say("lab up failed: " + s.error().message());
    return 1;
  }
  Say("    lab directory (logs, kubeconfig): " + lab.config().dir);
  if (cfg.kube_proxy) {
    Say(lab.kube_proxy_running()
            ? "    kube-proxy (" + cfg.proxy_mode + " mode) on every node"
            : "    kube-proxy is NOT running, the nodes' responders answer instead: " +
                  lab.kube_proxy_problem());
  }
  for (const auto& n : lab.topology().nodes()) {
    Say("    " + n.name + ": eth0 " + n.ipv4 + "/24, " + n.ipv6 + "/128 (on-link /64 from RA)");
  }
  Say("    client: " + std::string(Topology::kClientIpv4) + ", " + Topology::kClientIpv6);

  Step("Applying the ServiceGroup \"localdual\" (seed 000's example, in documentation ranges)");
  Indent(kDemoGroup);
  if (auto s = lab.Apply(kDemoGroup); !s) {
    Say("apply failed: " + s.error().message());
    return 1;
  }
  Step("Creating a RequireDualStack LoadBalancer Service in that group");
  Indent(kDemoService);
  auto created = SteadyClock::now();
  if (auto s = lab.Apply(kDemoService); !s) {
    Say("apply failed: " + s.error().message());
    return 1;
  }
  if (lab.kube_proxy_running()) {
    // With kube-proxy, the address leads to the Service's pods (docs/datapath.md): two of them.
    Step("Two pods of the Service, on node1 and node2 (kube-proxy on every node)");
    for (const auto& [node, pod] :
         {std::pair<std::string, std::string>{"node1", "kuard-a"}, {"node2", "kuard-b"}}) {
      auto s = lab.AddPod(node, pod, "kuard-svc-dual-remote");
      Say("    pod " + pod + " on " + node + (s ? "" : ": " + s.error().message()));
    }
  }
  auto svc = WaitService(
      lab, "default", "kuard-svc-dual-remote",
      [](const nlohmann::json& s) {
        return IngressIps(s).size() == 2 && !Announcer(s, false).empty() &&
               !Announcer(s, true).empty();
      },
      Ms(20000), "two addresses and their announcing nodes");
  if (!svc) {
    Say(svc.error().message());
    return 1;
  }
  auto ips = IngressIps(*svc);
  // Time until the client actually reaches the address.
  double reach_ms = -1;
  for (int i = 0; i < 500 && !g_stop; ++i) {
    auto r = ProbeFromClient(lab, ips[0], Ms(100));
    if (r && r->ok) {
      reach_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - created).count();
      break;
    }
    std::this_thread::sleep_for(Ms(10));
  }
  // So that `describe` below shows the agents' events (one per family).
  (void)WaitEvents(lab, "default", "kuard-svc-dual-remote", "AnnouncingLocal", 2, Ms(3000));
  Say("$ kubectl get service kuard-svc-dual-remote");
  if (auto out = lab.Kubectl({"get", "service", "kuard-svc-dual-remote"})) Indent(*out);
  Say("$ kubectl describe service kuard-svc-dual-remote");
  if (auto out = lab.Kubectl({"describe", "service", "kuard-svc-dual-remote"})) Indent(*out);

  Step(lab.kube_proxy_running()
           ? "Reaching the Service from the client (a pod answers with its name, its node and "
             "the client address it saw; kube-proxy spreads requests over both pods)"
           : "Reaching the Service from the client (every node answers HTTP with its own name)");
  for (const auto& ip : ips) {
    auto r = ProbeFromClient(lab, ip, Ms(500));
    std::string url =
        ip.find(':') != std::string::npos ? "http://[" + ip + "]/" : "http://" + ip + "/";
    Say("    client$ curl " + url + "  ->  " +
        (r && r->ok ? r->body : "no answer (" + (r ? r->error : r.error().message()) + ")"));
  }
  if (reach_ms >= 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf,
                  "    Service created -> address reachable from the client: %.0f ms", reach_ms);
    Say(buf);
  }
  Say("    client$ ip neigh   (the winner's MAC answers for the address)");
  std::string neigh;
  (void)RunCommand({"ip", "neigh", "show", "dev", "eth0"}, &neigh, lab.topology().ClientNetns());
  Indent(neigh);

  std::string winner = Announcer(*svc, false);
  Step("Failover: stopping the IPv4 winner's agent (" + winner +
       ") with SIGTERM while the client probes every 10 ms");
  auto o = MeasureFailover(
      lab, ips[0], [&] { (void)lab.SignalAgent(winner, SIGTERM); }, Ms(4000));
  if (o.ms < 0) {
    Say("    the address did not come back within the run");
  } else {
    char buf[160];
    std::snprintf(buf, sizeof buf, "    answered by %s before, by %s after; longest outage %.0f ms",
                  o.from.c_str(), o.to.c_str(), o.ms);
    Say(buf);
  }
  (void)lab.WaitAgentExit(winner, 5000);
  auto after = WaitService(
      lab, "default", "kuard-svc-dual-remote",
      [&](const nlohmann::json& s) {
        auto a = Announcer(s, false);
        return !a.empty() && a != winner;
      },
      Ms(10000), "a new announcing node");
  if (after)
    Say("    purelb.io/announcing-IPv4: " + Annotation(*after, "purelb.io/announcing-IPv4"));

  Step("Restarting " + winner + "'s agent: the address stays where it is (sticky election)");
  (void)lab.StartAgent(winner);
  std::this_thread::sleep_for(Ms(1500));
  if (auto s = GetJson(lab, {"get", "service", "kuard-svc-dual-remote"})) {
    Say("    purelb.io/announcing-IPv4: " + Annotation(*s, "purelb.io/announcing-IPv4"));
    Say("    purelb.io/announcing-IPv6: " + Annotation(*s, "purelb.io/announcing-IPv6"));
  }

  if (cfg.bgp) DemoBgp(lab);

  Step("Deleting the Service: the address is released and withdrawn");
  (void)lab.Kubectl({"delete", "service", "kuard-svc-dual-remote"});
  auto deleted = SteadyClock::now();
  for (int i = 0; i < 300 && !g_stop; ++i) {
    auto r = ProbeFromClient(lab, ips[0], Ms(50));
    if (r && !r->ok) break;
    std::this_thread::sleep_for(Ms(10));
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "    delete -> address no longer answers: %.0f ms",
                std::chrono::duration<double, std::milli>(SteadyClock::now() - deleted).count());
  Say(buf);

  Step("Cleaning up");
  auto down = lab.Down();
  Say(down ? "    lab removed" : "    " + down.error().message());
  return 0;
}

int Up(const Flags& f) {
  auto parsed = ConfigFromFlags(f, 1, 32);
  if (!parsed) {
    Say(parsed.error().message());
    return 2;
  }
  const LabConfig& cfg = *parsed;
  Lab lab(cfg);
  if (auto s = lab.Up(); !s) {
    std::fprintf(stderr, "pylon lab up: %s\n", s.error().message().c_str());
    return 1;
  }
  if (g_stop) return 1;  // interrupted: the destructor tears down
  lab.Detach();
  Say("lab \"" + cfg.name + "\" is up; logs in " + lab.config().dir);
  if (cfg.kube_proxy) {
    Say(lab.kube_proxy_running()
            ? "kube-proxy (" + cfg.proxy_mode +
                  " mode) runs on every node; pod CIDRs 10.244.<i>.0/24, "
                  "fd00:10:244:<i>::/64 (docs/datapath.md)"
            : "kube-proxy is NOT running, the nodes' responders answer instead: " +
                  lab.kube_proxy_problem());
  }
  Say("export KUBECONFIG=" + lab.Kubeconfig());
  Say("kubectl of the server's release:  " + lab.KubectlBinary());
  Say("run a command on a node:  ip netns exec " + lab.topology().nodes()[0].netns + " ip addr");
  Say("from the client:          ip netns exec " + lab.topology().ClientNetns() + " curl ...");
  Say("remove it:                pylon lab down --name " + cfg.name);
  return 0;
}

int Down(const Flags& f) {
  std::vector<std::string> names;
  if (f.Has("all")) {
    names = Topology::ExistingLabs();
  } else {
    names.push_back(f.Get("name", "demo"));
  }
  int rc = 0;
  for (const auto& name : names) {
    LabConfig cfg;
    cfg.name = name;
    Lab lab(cfg);
    auto s = lab.Down();
    lab.Detach();
    if (!s) {
      std::fprintf(stderr, "pylon lab down %s: %s\n", name.c_str(), s.error().message().c_str());
      rc = 1;
    } else {
      Say("lab \"" + name + "\" removed");
    }
  }
  return rc;
}

int Status(const Flags&) {
  auto labs = Topology::ExistingLabs();
  if (labs.empty()) Say("no labs");
  for (const auto& name : labs) {
    LabConfig cfg;
    cfg.name = name;
    Lab lab(cfg);
    lab.Detach();
    std::string line = name + ":";
    for (const auto& [k, pid] : lab.Pids()) {
      line += " " + k + (kill(pid, 0) == 0 ? "(up)" : "(down)");
    }
    Say(line);
  }
  return 0;
}

int Serve(const Flags& f) {
  auto port = IntFlag(f, "port", 80, 1, 65535);
  if (!port) {
    std::fprintf(stderr, "%s\n", port.error().message().c_str());
    return 2;
  }
  auto s = ServeText(*port, f.Get("text", "pylon"), &g_stop, f.Get("report-peer") == "true");
  if (!s) {
    std::fprintf(stderr, "pylon lab serve: %s\n", s.error().message().c_str());
    return 1;
  }
  return 0;
}

void Usage() {
  std::printf(
      "usage: pylon lab <command> [flags]   (needs root)\n\n"
      "  up       [--name demo] [--nodes 3]  build a lab and leave it running\n"
      "  down     [--name demo | --all]      remove a lab (processes, namespaces)\n"
      "  status                              list labs and their processes\n"
      "  demo     [--name demo] [--nodes 3]  bring a lab up, show Pylon working, clean up\n"
      "  failover [--name failover] [--runs 3] [--cases SIGTERM,SIGKILL,link-down,freeze]\n"
      "           [--address-lifetime DUR]   outage seen by the client when the winner's\n"
      "                                      agent gets SIGTERM / SIGKILL, its link goes down or\n"
      "                                      its node freezes (port out of forwarding, no link\n"
      "                                      event, processes stopped);\n"
      "                                      after SIGKILL, until the dead node stops answering\n"
      "                                      ARP / NS (agents' --address-lifetime, e.g. 3s)\n"
      "  timing   [--name timing] [--runs 5]  Service create -> reachable, delete -> withdrawn\n"
      "  serve    --port 80 --text NAME      (inside a node) answer HTTP with NAME\n"
      "           [--report-peer]            ... followed by \" client=<source address>\"\n\n"
      "  up, demo and failover take --kube-proxy [--proxy-mode nftables|iptables]: kube-proxy\n"
      "  on every node (docs/datapath.md); the demo then puts two pods behind its Service;\n"
      "  failover puts one pod per node behind an externalTrafficPolicy Local Service and adds\n"
      "  the cases endpoint (the winner's pod turns unready) and kube-proxy (SIGKILL there)\n"
      "  up and demo take --bgp: BIRD 2 on every node and on the gateway as the upstream\n"
      "  router, and a client behind it (docs/bgp.md); the demo then shows ECMP over BGP\n"
      "  up, demo, failover and timing take --binary PATH: the pylon binary whose allocator\n"
      "  and agent the lab runs (default: this one), and --k8s-bin-dir DIR: where etcd,\n"
      "  kube-apiserver and kubectl are (default: $PYLON_K8S_BIN_DIR, else the build's)\n");
}

}  // namespace

int LabCommand(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    Usage();
    return argc < 2 ? 2 : 0;
  }
  std::string sub = argv[1];
  Flags f = ParseFlags(argc, argv, 2, {"all", "keep", "kube-proxy", "report-peer", "bgp"});
  if (!f.error.empty()) {
    std::fprintf(stderr, "pylon lab %s: %s\n", sub.c_str(), f.error.c_str());
    return 2;
  }
  InstallSignals();
  if (sub == "serve") return Serve(f);
  if (geteuid() != 0) {
    std::fprintf(stderr, "pylon lab %s: needs root (network namespaces)\n", sub.c_str());
    return 1;
  }
  if (sub == "up") return Up(f);
  if (sub == "down") return Down(f);
  if (sub == "status") return Status(f);
  if (sub == "demo") return Demo(f);
  if (sub == "failover") return Failover(f);
  if (sub == "timing") return Timing(f);
  std::fprintf(stderr, "pylon lab: unknown command \"%s\"\n", sub.c_str());
  Usage();
  return 2;
}

}  // namespace pylon::lab
