// `pylon-dev lab lifecycle`: what Pylon's own lifecycle and the operators' node signals do to the
// clients of one address, on the kubelet lab with Pylon installed as users install it
// (docs/failover.md "Lifecycle"). One row per event, each counted by an AddressWatch on the
// IPv4 address of a dual-stack Service with one echo pod per node: how often the answering node
// changed, rounds with two nodes answering, failed requests of the 10 ms prober, broken
// long-lived flows.
#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "lab/address_watch.h"
#include "lab/command.h"
#include "lab/files.h"
#include "lab/service_state.h"
#include "lab/workloads.h"

namespace pylon::lab {
namespace {

using Ms = std::chrono::milliseconds;

struct LifecycleFlags {
  BuildFlags build{.name = "lifecycle", .pylon = "", .k8s_bin_dir = ""};
  std::string install = "kustomize";
  int nodes = 3;
  int flows = 20;
  std::string events;
  bool keep = false;  // leave the lab up at the end (to read its logs)
};

struct Row {
  std::string event;
  std::string node;  // the announcer the event hit
  AddressCounts counts;
  std::string problem;  // the event could not be run as described
};

// The pid of the agent of `node` (its pod's process: `pylon agent --node-name=<node> ...`).
std::optional<pid_t> AgentPid(const std::string& node) {
  DIR* d = opendir("/proc");
  if (d == nullptr) return std::nullopt;
  std::optional<pid_t> found;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmd = ReadTextFile("/proc/" + name + "/cmdline");
    std::vector<std::string> argv;
    std::istringstream in(cmd);
    for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
    if (argv.size() < 3 || argv[0].size() < 5 || argv[0].substr(argv[0].size() - 5) != "pylon" ||
        argv[1] != "agent") {
      continue;
    }
    for (const auto& a : argv) {
      if (a == "--node-name=" + node) found = std::stoi(name);
    }
  }
  closedir(d);
  return found;
}

std::string IPv4Announcer(const Lab& lab, const std::string& service) {
  auto svc = GetJson(lab, {"get", "service", service});
  return svc ? Announcer(*svc, false) : "";
}

// Waits until every node runs a Ready agent pod and no other.
Status WaitAgentsReady(const Lab& lab, Ms timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline && !Stopping()) {
    size_t total = 0;
    auto pods = ReadyPods(lab, "app.kubernetes.io/component=agent", "purelb-system", &total);
    if (pods.size() == lab.topology().nodes().size() && total == pods.size()) return Ok();
    std::this_thread::sleep_for(Ms(200));
  }
  return Fail(ErrorCode::kUnavailable, "agent pods not all Ready");
}

// The lab, the echo Deployment "web" (one pod per node), the ServiceGroup localdual and the
// Service "web"; its IPv4 address once it answers.
Result<std::string> SetUp(Lab& lab) {
  if (auto s = lab.Up(); !s) return Fail(s.error());
  if (auto s = ImportEchoImage(lab, lab.config().dev_binary); !s) return Fail(s.error());
  const int nodes = static_cast<int>(lab.topology().nodes().size());
  if (auto s = lab.Apply(EchoDeploymentYaml("web", nodes)); !s) return Fail(s.error());
  if (auto r = lab.Kubectl({"rollout", "status", "deployment/web", "--timeout=180s"}); !r) {
    return Fail(r.error());
  }
  if (auto s = lab.Apply(kDemoGroup); !s) return Fail(s.error());
  if (auto s = lab.Apply(EchoServiceYaml("web", "localdual", "web")); !s) return Fail(s.error());
  auto svc = WaitDualStackAnnounced(lab, "web");
  if (!svc) return Fail(svc.error());
  for (const auto& ip : IngressIps(*svc)) {
    if (ip.find(':') != std::string::npos) continue;
    for (int i = 0; i < 300 && !Stopping(); ++i) {
      auto r = ProbeFromClient(lab, ip, Ms(500));
      if (r && r->ok && r->body.rfind("pod=", 0) == 0) return ip;  // a pod, not a node's responder
      std::this_thread::sleep_for(Ms(100));
    }
    return Fail(ErrorCode::kUnavailable, "web's pods do not answer at " + ip);
  }
  return Fail(ErrorCode::kNotFound, "web has no IPv4 address");
}

struct Event {
  std::string name;  // as --events names it
  std::string what;  // the table's text
  // Runs the event on `node` (the announcer); an error says why it could not.
  std::function<Status(Lab&, const std::string& node)> run;
  // Puts the node back for the next row (outside the measurement).
  std::function<void(Lab&, const std::string& node)> undo;
};

// An event that is one kubectl command on the announcer's Node (`set`, "{node}" standing for its
// name), held for `hold_ms`; `unset` puts it back, then the web Deployment is waited for.
Event NodeChange(std::string name, std::string what, std::vector<std::string> set,
                 std::vector<std::string> unset, int hold_ms) {
  auto with_node = [](std::vector<std::string> args, const std::string& node) {
    for (auto& a : args) {
      if (a == "{node}") a = node;
    }
    return args;
  };
  return {std::move(name), std::move(what),
          [set, hold_ms, with_node](Lab& lab, const std::string& node) -> Status {
            auto r = lab.Kubectl(with_node(set, node));
            if (!r) return Fail(r.error());
            std::this_thread::sleep_for(Ms(hold_ms));
            return Ok();
          },
          [unset, with_node](Lab& lab, const std::string& node) {
            (void)lab.Kubectl(with_node(unset, node));
            (void)lab.Kubectl({"rollout", "status", "deployment/web", "--timeout=180s"});
          }};
}

std::vector<Event> Events() {
  auto sleep = [](int ms) { std::this_thread::sleep_for(Ms(ms)); };
  return {
      {"rollout", "rolling restart of every agent (kubectl rollout restart daemonset/agent)",
       [](Lab& lab, const std::string&) -> Status {
         auto r = lab.Kubectl({"rollout", "restart", "daemonset/agent", "-n", "purelb-system"});
         if (!r) return Fail(r.error());
         if (auto s = lab.WaitRollout("daemonset/agent", std::chrono::seconds(300)); !s) return s;
         return WaitAgentsReady(lab, Ms(60000));
       },
       nullptr},
      {"kill-restart", "SIGKILL of the announcer's agent, restarted by its kubelet",
       [](Lab& lab, const std::string& node) -> Status {
         auto pid = AgentPid(node);
         if (!pid) return Fail(ErrorCode::kNotFound, "no agent process of " + node);
         if (kill(*pid, SIGKILL) != 0) return FailErrno(errno, "kill");
         for (int i = 0; i < 600; ++i) {  // the kubelet starts the container again
           auto again = AgentPid(node);
           if (again && *again != *pid) break;
           std::this_thread::sleep_for(Ms(100));
         }
         return WaitAgentsReady(lab, Ms(60000));
       },
       nullptr},
      {"kill-forever",
       "SIGKILL of the announcer's agent, not restarted for 15 s (its kubelet stopped; the "
       "address lifetime is 10 s)",
       [sleep](Lab& lab, const std::string& node) -> Status {
         auto pid = AgentPid(node);
         if (!pid) return Fail(ErrorCode::kNotFound, "no agent process of " + node);
         if (auto s = lab.SignalKubelet(node, SIGSTOP); !s) return s;
         if (kill(*pid, SIGKILL) != 0) {
           (void)lab.SignalKubelet(node, SIGCONT);
           return FailErrno(errno, "kill");
         }
         sleep(15000);
         return Ok();
       },
       [](Lab& lab, const std::string& node) {
         (void)lab.SignalKubelet(node, SIGCONT);
         (void)WaitAgentsReady(lab, Ms(60000));
       }},
      {"freeze", "the announcer's node frozen for 5 s (a crash), then thawed",
       [sleep](Lab& lab, const std::string& node) -> Status {
         if (auto s = lab.FreezeNode(node, true); !s) return s;
         sleep(5000);
         return lab.FreezeNode(node, false);
       },
       [](Lab& lab, const std::string&) { (void)WaitAgentsReady(lab, Ms(60000)); }},
      NodeChange(
          "exclude",
          "the announcer labelled node.kubernetes.io/exclude-from-external-load-balancers",
          {"label", "node", "{node}",
           "node.kubernetes.io/exclude-from-external-load-balancers=true"},
          {"label", "node", "{node}", "node.kubernetes.io/exclude-from-external-load-balancers-"},
          5000),
      NodeChange("autoscaler-taint",
                 "the announcer tainted ToBeDeletedByClusterAutoscaler (NoSchedule, as the "
                 "cluster autoscaler does before it drains a node)",
                 {"taint", "node", "{node}", "ToBeDeletedByClusterAutoscaler=1:NoSchedule"},
                 {"taint", "node", "{node}", "ToBeDeletedByClusterAutoscaler-"}, 5000),
      NodeChange(
          "out-of-service",
          "the announcer tainted node.kubernetes.io/out-of-service (NoSchedule: its pods stay)",
          {"taint", "node", "{node}", "node.kubernetes.io/out-of-service=nodeshutdown:NoSchedule"},
          {"taint", "node", "{node}", "node.kubernetes.io/out-of-service-"}, 5000),
      NodeChange(
          "out-of-service-evict",
          "the announcer tainted node.kubernetes.io/out-of-service (NoExecute: Kubernetes evicts "
          "its web pod; the agent tolerates every taint)",
          {"taint", "node", "{node}", "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"},
          {"taint", "node", "{node}", "node.kubernetes.io/out-of-service-"}, 10000),
      NodeChange("cordon", "the announcer cordoned", {"cordon", "{node}"}, {"uncordon", "{node}"},
                 5000),
      {"kube-proxy", "the announcer's kube-proxy killed (SIGKILL), restarted after 5 s",
       [sleep](Lab& lab, const std::string& node) -> Status {
         if (auto s = lab.SignalKubeProxy(node, SIGKILL); !s) return s;
         sleep(5000);
         return lab.RestartKubeProxy(node);
       },
       nullptr},
  };
}

int RunLifecycle(const LifecycleFlags& f) {
  LabConfig cfg = ConfigFrom(f.build, KubeProxyFlags{});
  cfg.nodes = f.nodes;
  cfg.install = f.install;
  Lab lab(cfg);
  Say("lifecycle: lab \"" + cfg.name + "\", " + std::to_string(f.nodes) +
      " nodes, Pylon installed (" + f.install + "), an echo pod per node behind the Service web");
  auto v4 = SetUp(lab);
  if (!v4) {
    Say("lab set-up failed: " + v4.error().message());
    (void)lab.Down();
    return cli::kExitFailure;
  }
  std::vector<Row> rows;
  for (const auto& e : Events()) {
    if (Stopping()) break;
    if (!f.events.empty() && ("," + f.events + ",").find("," + e.name + ",") == std::string::npos) {
      continue;
    }
    Row row{e.what, IPv4Announcer(lab, "web"), {}, ""};
    auto watch = AddressWatch::Start(lab, *v4, 80, kEchoFlowPort, f.flows);
    if (!watch) {
      row.problem = "watch: " + watch.error().message();
      rows.push_back(row);
      continue;
    }
    std::this_thread::sleep_for(Ms(1000));
    if (auto s = e.run(lab, row.node); !s) row.problem = s.error().message();
    std::this_thread::sleep_for(Ms(3000));  // what follows the event settles
    row.counts = (*watch)->Stop();
    if (e.undo) e.undo(lab, row.node);
    Say("  " + e.name + " on " + row.node + ": moved " + std::to_string(row.counts.moves) +
        (row.problem.empty() ? "" : " (" + row.problem + ")"));
    rows.push_back(row);
    std::this_thread::sleep_for(Ms(2000));
  }
  Say("");
  Say("| event | moved | rounds with two nodes answering | requests failed | flows broken |");
  Say("| --- | ---: | ---: | ---: | ---: |");
  for (const auto& r : rows) {
    const auto& c = r.counts;
    char buf[512];
    std::snprintf(buf, sizeof buf, "| %s%s | %d | %d of %d | %d of %d | %d of %d |",
                  r.event.c_str(), r.problem.empty() ? "" : (" (" + r.problem + ")").c_str(),
                  c.moves, c.double_answers, c.rounds, c.failed, c.requests, c.streams.broken,
                  c.streams.opened);
    Say(buf);
  }
  if (f.keep) {
    Say("lab kept: " + lab.Path("") + " (pylon-dev lab down --name " + cfg.name + ")");
    return cli::kExitOk;
  }
  if (auto down = lab.Down(); !down) Say(down.error().message());
  return cli::kExitOk;
}

}  // namespace

Subcommand AddLifecycle(cli::App& lab) {
  auto f = std::make_shared<LifecycleFlags>();
  auto* sub = lab.add_subcommand(
      "lifecycle",
      "what rollouts, kills, freezes and node signals do to an address's clients (kubelet lab)");
  AddBuildFlags(*sub, &f->build);
  sub->add_option("--install", f->install, "how Pylon is installed: kustomize or helm")
      ->check(CLI::IsMember({"kustomize", "helm"}));
  sub->add_option("--nodes", f->nodes, "how many nodes")->check(CLI::Range(2, 8));
  sub->add_option("--flows", f->flows, "long-lived flows through the address")
      ->check(CLI::Range(0, 200));
  std::string names;
  for (const Event& e : Events()) names += (names.empty() ? "" : ",") + e.name;
  sub->add_option("--events", f->events, "the events to run, of " + names + " (default: all)")
      ->type_name("LIST");
  sub->add_flag("--keep", f->keep, "leave the lab up at the end, to read its logs");
  return {sub, [f] { return RunLifecycle(*f); }};
}

}  // namespace pylon::lab
