// `pylon lab`: a whole cluster on one machine (see lab.h), the demo and the failover measurement.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "lab/lab.h"
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
};

// Probes `ip` from the client every 10 ms, runs `fault` after a steady start, and returns the
// longest outage and the node that answered before and after.
Outage MeasureFailover(const Lab& lab, const std::string& ip, const std::function<void()>& fault,
                       Ms run) {
  std::vector<ProbeSample> samples;
  volatile bool stop = false;
  std::thread prober([&] {
    auto r = InNetns(lab.topology().ClientNetns(),
                     [&] { return ProbeLoop(ip, 80, Ms(10), Ms(100), run, &stop); });
    if (r) samples = std::move(*r);
  });
  std::this_thread::sleep_for(Ms(500));
  fault();
  prober.join();
  Outage o;
  for (const auto& s : samples) {
    if (s.ok && s.t_ms < 500) o.from = s.node;
    if (s.ok) o.to = s.node;
  }
  if (samples.empty() || !samples.back().ok) return o;
  o.ms = LongestOutageMs(samples);
  return o;
}

int Demo(const Flags& f) {
  LabConfig cfg;
  cfg.name = f.Get("name", "demo");
  auto nodes = IntFlag(f, "nodes", 3, 2, 16);
  if (!nodes) {
    Say(nodes.error().message());
    return 2;
  }
  cfg.nodes = *nodes;
  Lab lab(cfg);
  Step("Bringing up lab \"" + cfg.name + "\": " + std::to_string(cfg.nodes) +
       " nodes and a client on a bridge, pylon apiserver, allocator and one agent per node");
  if (auto s = lab.Up(); !s) {
    Say("lab up failed: " + s.error().message());
    return 1;
  }
  Say("    lab directory (logs, kubeconfig): " + lab.config().dir);
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
  Say("$ kubectl get service kuard-svc-dual-remote");
  if (auto out = lab.Kubectl({"get", "service", "kuard-svc-dual-remote"})) Indent(*out);
  Say("$ kubectl describe service kuard-svc-dual-remote");
  if (auto out = lab.Kubectl({"describe", "service", "kuard-svc-dual-remote"})) Indent(*out);

  Step("Reaching the Service from the client (every node answers HTTP with its own name)");
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
  LabConfig cfg;
  cfg.name = f.Get("name", "demo");
  auto nodes = IntFlag(f, "nodes", 3, 1, 32);
  if (!nodes) {
    Say(nodes.error().message());
    return 2;
  }
  cfg.nodes = *nodes;
  Lab lab(cfg);
  if (auto s = lab.Up(); !s) {
    std::fprintf(stderr, "pylon lab up: %s\n", s.error().message().c_str());
    return 1;
  }
  if (g_stop) return 1;  // interrupted: the destructor tears down
  lab.Detach();
  Say("lab \"" + cfg.name + "\" is up; logs in " + lab.config().dir);
  Say("export KUBECONFIG=" + lab.Kubeconfig());
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
  auto s = ServeText(*port, f.Get("text", "pylon"), &g_stop);
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
      "  serve    --port 80 --text NAME      (inside a node) answer HTTP with NAME\n");
}

}  // namespace

int LabCommand(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    Usage();
    return argc < 2 ? 2 : 0;
  }
  std::string sub = argv[1];
  Flags f = ParseFlags(argc, argv, 2, {"all", "keep"});
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
  std::fprintf(stderr, "pylon lab: unknown command \"%s\"\n", sub.c_str());
  Usage();
  return 2;
}

}  // namespace pylon::lab
