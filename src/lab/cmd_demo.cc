// `pylon-dev lab demo`: a lab brought up, Pylon shown at work (a dual-stack Service, a failover, a
// restart, a delete; with --bgp the routed addresses), then removed.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <utility>

#include "lab/command.h"
#include "lab/measure.h"
#include "lab/netns.h"
#include "lab/responder.h"
#include "lab/service_state.h"

namespace pylon::lab {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

const char* const kBgpService = R"(apiVersion: v1
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
    // Until every node's kube-proxy has synced the new endpoints, the nodes' own responders
    // answer: wait until 10 requests in a row from behind the router reach the pods.
    const auto deadline = SteadyClock::now() + Ms(20000);
    for (int in_a_row = 0; in_a_row < 10 && SteadyClock::now() < deadline && !Stopping();) {
      auto r = InNetns(lab.topology().WanNetns(), [&] { return ProbeOnce(ips[0], 80, Ms(500)); });
      in_a_row = r && r->ok && r->body.rfind("pod=", 0) == 0 ? in_a_row + 1 : 0;
      std::this_thread::sleep_for(Ms(20));
    }
  }
  for (const auto& ip : ips) {
    const std::string prefix = ip + (ip.find(':') != std::string::npos ? "/128" : "/32");
    for (int i = 0; i < 300 && !Stopping(); ++i) {
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
  for (int i = 0; i < 30 && !Stopping(); ++i) {
    auto r = InNetns(lab.topology().WanNetns(), [&] { return ProbeOnce(ips[0], 80, Ms(500)); });
    ++by[r && r->ok ? r->body.substr(0, r->body.find_first_of(" \n")) : "no answer"];
  }
  for (const auto& [who, n] : by) Say("      " + who + ": " + std::to_string(n));
  Say("$ kubectl get bgppeer lab-router -o jsonpath='{.status.nodes}'");
  if (auto out = lab.Kubectl({"get", "bgppeer", "lab-router", "-o", "jsonpath={.status.nodes}"})) {
    Indent(*out + "\n");
  }
}

// The lab, as the demo's first step shows it.
void ShowLab(const Lab& lab) {
  const LabConfig& cfg = lab.config();
  Say("    lab directory (logs, kubeconfig): " + cfg.dir);
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
}

// The ServiceGroup, the Service (and with kube-proxy two pods of it) until both addresses have an
// announcing node; then the time from the Service's creation until the client reaches it, and the
// Service as kubectl shows it.
Result<nlohmann::json> CreateService(Lab& lab) {
  Step("Applying the ServiceGroup \"localdual\" (seed 000's example, in documentation ranges)");
  Indent(kDemoGroup);
  if (auto s = lab.Apply(kDemoGroup); !s) return Fail(s.error().Wrap("apply failed"));
  Step("Creating a RequireDualStack LoadBalancer Service in that group");
  Indent(kDemoService);
  auto created = SteadyClock::now();
  if (auto s = lab.Apply(kDemoService); !s) return Fail(s.error().Wrap("apply failed"));
  if (lab.kube_proxy_running()) {
    // With kube-proxy, the address leads to the Service's pods (docs/datapath.md): two of them.
    Step("Two pods of the Service, on node1 and node2 (kube-proxy on every node)");
    for (const auto& [node, pod] :
         {std::pair<std::string, std::string>{"node1", "kuard-a"}, {"node2", "kuard-b"}}) {
      auto s = lab.AddPod(node, pod, kDemoServiceName);
      Say("    pod " + pod + " on " + node + (s ? "" : ": " + s.error().message()));
    }
  }
  auto svc = WaitDualStackAnnounced(lab, kDemoServiceName);
  if (!svc) return svc;
  const auto ips = IngressIps(*svc);
  // Time until the client actually reaches the address.
  double reach_ms = -1;
  for (int i = 0; i < 500 && !Stopping(); ++i) {
    auto r = ProbeFromClient(lab, ips[0], Ms(100));
    if (r && r->ok) {
      reach_ms = SinceMs(created);
      break;
    }
    std::this_thread::sleep_for(Ms(10));
  }
  // So that `describe` below shows the agents' events (one per family).
  (void)WaitEvents(lab, "default", kDemoServiceName, "AnnouncingLocal", 2, Ms(3000));
  Say("$ kubectl get service kuard-svc-dual-remote");
  if (auto out = lab.Kubectl({"get", "service", kDemoServiceName})) Indent(*out);
  Say("$ kubectl describe service kuard-svc-dual-remote");
  if (auto out = lab.Kubectl({"describe", "service", kDemoServiceName})) Indent(*out);

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
    // With kube-proxy the time includes starting the two pods, one after the other; `pylon-dev
    // lab timing` measures the Service alone (docs/lab.md).
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "    Service created%s -> address reachable from the client: %.0f ms",
                  lab.kube_proxy_running() ? " (and its two pods started)" : "", reach_ms);
    Say(buf);
  }
  Say("    client$ ip neigh   (the winner's MAC answers for the address)");
  std::string neigh;
  (void)RunCommand({"ip", "neigh", "show", "dev", "eth0"}, &neigh, lab.topology().ClientNetns());
  Indent(neigh);
  return svc;
}

// SIGTERM to the agent announcing `ip` (IPv4) while the client probes; then its restart, which
// leaves the address where it went.
void ShowFailover(Lab& lab, const std::string& ip, const std::string& winner) {
  Step("Failover: stopping the IPv4 winner's agent (" + winner +
       ") with SIGTERM while the client probes every 10 ms");
  auto o = MeasureFailover(
      lab, ip, [&] { (void)lab.SignalAgent(winner, SIGTERM); }, Ms(4000));
  (void)lab.WaitAgentExit(winner, 5000);
  auto after = WaitService(
      lab, "default", kDemoServiceName,
      [&](const nlohmann::json& s) {
        auto a = Announcer(s, false);
        return !a.empty() && a != winner;
      },
      Ms(10000), "a new announcing node");
  Say("    announcing node (purelb.io/announcing-IPv4): " + winner + " before, " +
      (after ? Announcer(*after, false) : "none") + " after");
  if (o.ms < 0) {
    Say("    the address did not come back within the run");
  } else {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  lab.kube_proxy_running()
                      ? "    answered by a pod (behind kube-proxy) on %s before, "
                        "on %s after; longest outage %.0f ms"
                      : "    answered by the responder of %s before, of %s "
                        "after; longest outage %.0f ms",
                  o.from.c_str(), o.to.c_str(), o.ms);
    Say(buf);
  }

  Step("Restarting " + winner + "'s agent: the address stays where it is (sticky election)");
  (void)lab.StartAgent(winner);
  std::this_thread::sleep_for(Ms(1500));
  if (auto s = GetJson(lab, {"get", "service", kDemoServiceName})) {
    Say("    purelb.io/announcing-IPv4: " + Annotation(*s, "purelb.io/announcing-IPv4"));
    Say("    purelb.io/announcing-IPv6: " + Annotation(*s, "purelb.io/announcing-IPv6"));
  }
}

// Deletes the Service and times until `ip` stops answering the client.
void ShowDelete(Lab& lab, const std::string& ip) {
  Step("Deleting the Service: the address is released and withdrawn");
  (void)lab.Kubectl({"delete", "service", kDemoServiceName});
  auto deleted = SteadyClock::now();
  for (int i = 0; i < 300 && !Stopping(); ++i) {
    auto r = ProbeFromClient(lab, ip, Ms(50));
    if (r && !r->ok) break;
    std::this_thread::sleep_for(Ms(10));
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "    delete -> address no longer answers: %.0f ms",
                SinceMs(deleted));
  Say(buf);
}

int Demo(const UpFlags& f) {
  const LabConfig cfg = UpConfig(f);
  Lab lab(cfg);
  Step("Bringing up lab \"" + cfg.name + "\": " + std::to_string(cfg.nodes) +
       " nodes and a client on a bridge, etcd + kube-apiserver, allocator and one agent per node");
  if (auto s = lab.Up(); !s) {
    Say("lab up failed: " + s.error().message());
    return cli::kExitFailure;
  }
  ShowLab(lab);
  auto svc = CreateService(lab);
  if (!svc) {
    Say(svc.error().message());
    return cli::kExitFailure;
  }
  const auto ips = IngressIps(*svc);
  ShowFailover(lab, ips[0], Announcer(*svc, false));
  if (cfg.bgp) DemoBgp(lab);
  ShowDelete(lab, ips[0]);

  Step("Cleaning up");
  auto down = lab.Down();
  Say(down ? "    lab removed" : "    " + down.error().message());
  return cli::kExitOk;
}

}  // namespace

Subcommand AddDemo(cli::App& lab) {
  auto f = std::make_shared<UpFlags>();
  auto* sub = lab.add_subcommand("demo", "bring a lab up, show Pylon working, clean up");
  AddUpFlags(*sub, f.get(), 2, 16);
  return {sub, [f] { return Demo(*f); }};
}

}  // namespace pylon::lab
