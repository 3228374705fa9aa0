// BGP end to end (docs/bgp.md): a lab with BIRD 2 on the gateway as the upstream router and BIRD 2
// on every node, driven by its agent; the client sits behind the router (the WAN namespace).
// Figures are printed as "FIGURE ..." lines (ctest -R e2e_bgp -V).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stop_token>
#include <thread>

#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

std::string RoutedService(const std::string& name, bool local) {
  return ServiceYaml(name, "    purelb.io/service-group: routed\n",
                     std::string(kDualSpec) + (local ? "  externalTrafficPolicy: Local\n" : ""));
}

// The EndpointSlice of Service "local": one ready endpoint on `node`.
// One ready endpoint on `node`, in a slice of each family: the agent follows each family's slices
// (addressType), as kube-proxy does, so the IPv6 address needs an IPv6 slice.
std::string LocalEndpointOn(const std::string& node, const std::string& ipv4,
                            const std::string& ipv6) {
  auto slice = [&](const char* name, const char* family, const std::string& ip) {
    return std::string(
               "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: ") +
           name + "\n  namespace: default\n  labels:\n    kubernetes.io/service-name: local\n" +
           "addressType: " + family + "\nendpoints:\n- addresses: [\"" + ip +
           "\"]\n  conditions: {ready: true}\n  nodeName: " + node +
           "\nports:\n- port: 8080\n  protocol: TCP\n";
  };
  return slice("local-1", "IPv4", ipv4) + "---\n" + slice("local-2", "IPv6", ipv6);
}

std::string HostPrefix(const std::string& ip) { return ip + (IsV6(ip) ? "/128" : "/32"); }

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// `probe` (one request from behind the router) again and again on its own thread until Stop().
// The figures are read after Stop().
class WanLoad {
 public:
  explicit WanLoad(std::function<lab::ProbeResult()> probe)
      : thread_([this, probe = std::move(probe)](std::stop_token stop) {
          while (!stop.stop_requested()) {
            auto r = probe();
            ++sent_;
            if (!r.ok) {
              ++failed_;
              last_failure_ms_ = Since(start_);
            } else {
              ++answered_[r.body.substr(0, r.body.find_first_of(" \n"))];
            }
          }
        }) {}
  void Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  std::chrono::steady_clock::time_point start() const { return start_; }
  int sent() const { return sent_; }
  int failed() const { return failed_; }
  // When the last failed request gave up, in ms since the start; 0 if none failed.
  double last_failure_ms() const { return last_failure_ms_; }
  // The requests answered by `node`.
  int answered(const std::string& node) const {
    auto it = answered_.find(node);
    return it == answered_.end() ? 0 : it->second;
  }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int sent_ = 0;
  int failed_ = 0;
  double last_failure_ms_ = 0;
  std::map<std::string, int> answered_;
  std::jthread thread_;  // last: started once the figures above exist
};

class BgpTest : public LabTest {
 protected:
  void Configure(lab::LabConfig* cfg) override { cfg->bgp = true; }

  std::vector<std::string> NodeIps(bool v6) {
    std::vector<std::string> out;
    for (const auto& n : lab().topology().nodes()) out.push_back(v6 ? n.ipv6_b : n.ipv4);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string NodeIp(const std::string& node, bool v6) {
    for (const auto& n : lab().topology().nodes()) {
      if (n.name == node) return v6 ? n.ipv6_b : n.ipv4;
    }
    return "";
  }
  std::vector<std::string> Nexthops(const std::string& ip) {
    auto h = lab().RouterNexthops(HostPrefix(ip));
    return h ? *h : std::vector<std::string>{};
  }
  // The router's next hops for `ip` become `want` within `timeout`; a failure names the last ones.
  testing::AssertionResult WaitNexthops(const std::string& ip, const std::vector<std::string>& want,
                                        Ms timeout = Ms(20000)) {
    if (Eventually([&] { return Nexthops(ip) == want; }, timeout)) {
      return testing::AssertionSuccess();
    }
    return testing::AssertionFailure() << ip << ": " << testing::PrintToString(Nexthops(ip));
  }
  // Every node's address of the family, `node`'s left out.
  std::vector<std::string> NodeIpsBut(const std::string& node, bool v6) {
    std::vector<std::string> out = NodeIps(v6);
    std::erase(out, NodeIp(node, v6));
    return out;
  }
  // Every router session up, then Service "web" (routed, both families) routed to every node;
  // its IPv4 address in `v4`.
  void WebOnEveryNode(std::string* v4) {
    ASSERT_TRUE(Eventually([&] { return AllSessionsUp(); }, Ms(30000)));
    Apply(lab::kRoutedServiceGroup);
    Apply(RoutedService("web", false));
    auto ips = WaitIngress("web", 2);
    ASSERT_EQ(ips.size(), 2u);
    *v4 = IsV6(ips[0]) ? ips[1] : ips[0];
    ASSERT_TRUE(WaitNexthops(*v4, NodeIps(false)));
  }
  // BGPPeer "lab-router" (the router at 192.0.2.1) with the rest of its spec.
  static std::string LabRouterPeer(const std::string& spec) {
    return "apiVersion: lace-cni.io/v1alpha1\nkind: BGPPeer\nmetadata:\n  name: lab-router\n"
           "spec:\n  peerAddress: 192.0.2.1\n" +
           spec;
  }
  lab::ProbeResult WanProbe(const std::string& ip, Ms timeout = Ms(300)) {
    auto r =
        lab::InNetns(lab().topology().WanNetns(), [&] { return lab::ProbeOnce(ip, 80, timeout); });
    if (!r) return lab::ProbeResult{false, "", r.error().message()};
    return *r;
  }
  // Every router session (dynamic "node<i>" / "nodesix<i>") Established, one per node and family.
  bool AllSessionsUp() {
    auto out = lab().RouterBird("show protocols");
    if (!out) return false;
    int up = 0;
    std::istringstream in(*out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("node", 0) == 0 && line.find("Established") != std::string::npos) ++up;
    }
    return up == 2 * static_cast<int>(lab().topology().nodes().size());
  }
  Json Peer(const std::string& name) { return GetJson({"get", "bgppeer", name}); }
  static Json NodeEntry(const Json& peer, const std::string& node) {
    try {
      for (const auto& e : peer.at("status").at("nodes")) {
        if (e.at("node") == node) return e;
      }
    } catch (const std::exception&) {
    }
    return Json();
  }
  static std::string Condition(const Json& obj, const std::string& type, const char* field) {
    try {
      for (const auto& c : obj.at("status").at("conditions")) {
        if (c.at("type") == type) return c.at(field).get<std::string>();
      }
    } catch (const std::exception&) {
    }
    return "";
  }
  // The router's session with `node` (IPv4) Established, from BIRD on the router.
  bool RouterSessionUp(const std::string& node) {
    auto out = lab().RouterBird("show protocols all");
    if (!out) return false;
    const std::string ip = NodeIp(node, false);
    // Each dynamic protocol block names its neighbour address.
    std::istringstream in(*out);
    std::string line;
    bool established = false;
    while (std::getline(in, line)) {
      if (line.find("BGP state:") != std::string::npos) {
        established = line.find("Established") != std::string::npos;
      }
      if (line.find("Neighbor address: " + ip) != std::string::npos) return established;
    }
    return false;
  }

  // The router's BFD session to `address` is Up.
  bool RouterBfdUp(const std::string& address) {
    auto out = lab().RouterBird("show bfd sessions");
    if (!out) return false;
    std::istringstream in(*out);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream w(line);
      std::string addr, dev, state;
      w >> addr >> dev >> state;
      if (addr == address) return state == "Up";
    }
    return false;
  }

  static std::string Str(const Json& o, const char* key) {
    if (!o.is_object()) return "";
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : "";
  }
  static bool True(const Json& o, const char* key) {
    if (!o.is_object()) return false;
    auto it = o.find(key);
    return it != o.end() && it->is_boolean() && it->get<bool>();
  }
};

// ECMP across every node holding the address, both families, traffic from behind the router
// reaching every node; then ETP Local narrows the next hops to the endpoint's node.
TEST_F(BgpTest, EcmpAcrossEveryNodeAndEtpLocalOnlyEndpointNodes) {
  ASSERT_TRUE(Eventually([&] { return AllSessionsUp(); }, Ms(30000)))
      << lab().RouterBird("show protocols").value_or("");
  Apply(lab::kRoutedServiceGroup);
  const auto created = std::chrono::steady_clock::now();
  Apply(RoutedService("web", false));
  auto ips = WaitIngress("web", 2);
  ASSERT_EQ(ips.size(), 2u);
  for (const auto& ip : ips) {
    ASSERT_TRUE(WaitNexthops(ip, NodeIps(IsV6(ip))));
    std::printf("FIGURE bgp service-create-to-route %s: %.0f ms (all %zu next hops)\n",
                IsV6(ip) ? "IPv6" : "IPv4", Since(created), NodeIps(false).size());
  }
  auto routes = lab::RunCommandChecked({"ip", "route", "show", "exact", HostPrefix(ips[0])},
                                       lab().topology().LanNetns());
  std::printf("router$ ip route show %s\n%s", HostPrefix(ips[0]).c_str(),
              routes.value_or("").c_str());
  // Flows from many client ports spread over every node (L4 multipath hash at the router).
  for (const auto& ip : ips) {
    std::set<std::string> answered;
    for (int i = 0; i < 60 && answered.size() < 3; ++i) {
      auto r = WanProbe(ip);
      if (r.ok) answered.insert(r.body.substr(0, r.body.find_first_of(" \n")));
    }
    EXPECT_EQ(answered, (std::set<std::string>{"node1", "node2", "node3"})) << ip;
  }
  // What node1 exports to the router: the kube-lb0 prefixes, nothing else.
  const std::string proto = Str(NodeEntry(Peer("lab-router"), "node1"), "protocol");
  ASSERT_FALSE(proto.empty()) << Peer("lab-router").dump(2);
  auto exported = lab().NodeBird("node1", "show route export " + proto);
  ASSERT_TRUE(exported) << exported.error().message();
  EXPECT_NE(exported->find(HostPrefix(IsV6(ips[0]) ? ips[1] : ips[0])), std::string::npos)
      << *exported;
  EXPECT_EQ(exported->find("192.0.2."), std::string::npos) << *exported;

  // ETP Local: only nodes with a ready endpoint hold the address, so only they are next hops.
  Apply(RoutedService("local", true));
  Apply(LocalEndpointOn("node2", "10.244.2.5", "fd00:10:244:2::5"));
  auto local_ips = WaitIngress("local", 2);
  ASSERT_EQ(local_ips.size(), 2u);
  for (const auto& ip : local_ips) {
    EXPECT_TRUE(WaitNexthops(ip, {NodeIp("node2", IsV6(ip))}));
  }
  // The endpoint moves to node3: so does the route.
  Apply(LocalEndpointOn("node3", "10.244.3.5", "fd00:10:244:3::5"));
  for (const auto& ip : local_ips) {
    EXPECT_TRUE(WaitNexthops(ip, {NodeIp("node3", IsV6(ip))}));
  }
  // A LoadBalancerClass of mode l3 allocates from its pools and is announced the same way.
  Apply(R"(apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: routed
spec:
  mode: l3
  ipv4Pools:
  - cidr: 203.0.113.64/28
)");
  Apply(R"(apiVersion: v1
kind: Service
metadata:
  name: l3
  namespace: default
spec:
  type: LoadBalancer
  loadBalancerClass: lace-cni.io/routed
  selector:
    app: l3
  ports:
  - port: 80
    targetPort: 8080
)");
  auto l3 = WaitIngress("l3", 1);
  ASSERT_EQ(l3.size(), 1u);
  EXPECT_EQ(l3[0].rfind("203.0.113.", 0), 0u) << l3[0];
  EXPECT_TRUE(WaitNexthops(l3[0], NodeIps(false)));
  EXPECT_TRUE(WanProbe(l3[0]).ok);

  // The routing daemon dies on node3: reported (readiness, metric, event), then back.
  auto agent_http = [&](const std::string& node, const std::string& path) {
    auto r = lab::InNetns(lab().FindNode(node)->netns,
                          [&] { return lab::ProbeOnce("127.0.0.1", 7473, Ms(500), path); });
    return r ? *r : lab::ProbeResult{};
  };
  ASSERT_EQ(agent_http("node3", "/readyz").status, 200);
  ASSERT_TRUE(lab().StopNodeBird("node3"));
  EXPECT_TRUE(Eventually([&] { return agent_http("node3", "/readyz").status == 503; }, Ms(15000)));
  EXPECT_NE(agent_http("node3", "/metrics").body.find("purelb_bgp_daemon_up 0"), std::string::npos);
  EXPECT_TRUE(Eventually(
      [&] {
        auto ev = lab().Kubectl({"get", "events", "-A", "--field-selector",
                                 "involvedObject.name=node3,reason=RoutingDaemonUnreachable"});
        return ev && ev->find("does not answer") != std::string::npos;
      },
      Ms(15000)));
  for (const auto& ip : ips) {
    EXPECT_TRUE(WaitNexthops(ip, NodeIpsBut("node3", IsV6(ip))));
  }
  ASSERT_TRUE(lab().StartNodeBird("node3"));
  EXPECT_TRUE(Eventually([&] { return agent_http("node3", "/readyz").status == 200; }, Ms(15000)));
  for (const auto& ip : ips) {
    EXPECT_TRUE(WaitNexthops(ip, NodeIps(IsV6(ip)), Ms(30000)));
  }

  // Deleting the Service withdraws its routes everywhere.
  ASSERT_TRUE(lab().Kubectl({"delete", "service", "web"}));
  for (const auto& ip : ips) {
    EXPECT_TRUE(WaitNexthops(ip, {}));
  }
}

// A node that freezes (no link event anywhere) leaves the next hops: with BFD 100 ms x 3 in well
// under a second, with the hold timer alone (3 s) in about 3 s.
TEST_F(BgpTest, FrozenNodeLeavesTheNexthopsByBfdThenByHoldTimer) {
  std::string v4;
  ASSERT_NO_FATAL_FAILURE(WebOnEveryNode(&v4));

  auto measure = [&](const char* what, const std::string& node) -> double {
    const std::vector<std::string> rest = NodeIpsBut(node, false);
    // BFD counts only once the router's session to the node is Up (a BGP session whose BFD
    // session never came up falls back to the hold timer).
    if (std::string(what).find("BFD") != std::string::npos) {
      EXPECT_TRUE(Eventually([&] { return RouterBfdUp(NodeIp(node, false)); }, Ms(15000)))
          << lab().RouterBird("show bfd sessions").value_or("");
    }
    // A client behind the router opens a new connection every few ms from t0 on (each a new
    // flow, so a new hash); "flows again" is when the last failed request gave up (100 ms
    // timeout).
    WanLoad client([&] { return WanProbe(v4, Ms(100)); });
    EXPECT_TRUE(lab().FreezeNode(node, true));
    double withdrawn = -1;
    if (WaitNexthops(v4, rest, Ms(15000))) withdrawn = Since(client.start());
    std::this_thread::sleep_for(Ms(1000));
    client.Stop();
    std::printf(
        "FIGURE bgp node-freeze %s: route withdrawn at the router %.0f ms, client traffic flows "
        "again %.0f ms (%d requests failed)\n",
        what, withdrawn, client.last_failure_ms(), client.failed());
    EXPECT_GE(withdrawn, 0) << what;
    EXPECT_TRUE(lab().FreezeNode(node, false));
    EXPECT_TRUE(WaitNexthops(v4, NodeIps(false), Ms(40000))) << what << " after thaw";
    return withdrawn;
  };
  double bfd = measure("BFD 100ms x3", "node2");
  EXPECT_LT(bfd, 2000) << "BFD should detect in well under 2 s";

  // Hold timer alone: no BFD, hold 3 s.
  Apply(LabRouterPeer(R"(  peerASN: 64512
  myASN: 64513
  holdTime: 3s
  keepaliveTime: 1s
)"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto out = lab().NodeBird("node3", "show protocols all");
        return out && out->find("Hold timer:") != std::string::npos &&
               out->find("/3") != std::string::npos && AllSessionsUp();
      },
      Ms(40000)));
  ASSERT_TRUE(WaitNexthops(v4, NodeIps(false), Ms(30000)));
  double hold = measure("hold timer 3s", "node3");
  EXPECT_GT(hold, bfd) << "the hold timer alone is slower than BFD";
}

// Graceful shutdown withdraws by UPDATE while the session stays up: no request lost. A bad peer
// keeps the last good one in force; a password mismatch shows in the peer's status.
TEST_F(BgpTest, GracefulDrainBadPeerAndPasswordMismatch) {
  std::string v4;
  ASSERT_NO_FATAL_FAILURE(WebOnEveryNode(&v4));

  // --- graceful drain of node1 under load ---
  // BFD at 300 ms x 3 here (applied in place, no session reset): at 100 ms a loaded 2-core
  // machine can miss three packets in a row, and a session reset is not what this measures.
  Apply(R"(apiVersion: lace-cni.io/v1alpha1
kind: BFDProfile
metadata:
  name: lab-fast
spec:
  receiveInterval: 300
  transmitInterval: 300
  detectMultiplier: 3
)");
  WanLoad load([&] { return WanProbe(v4, Ms(1000)); });
  std::this_thread::sleep_for(Ms(500));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(lab().SignalAgent("node1", SIGTERM));
  ASSERT_TRUE(lab().WaitAgentExit("node1", 15000));
  const double drained = Since(t0);
  // The agent is gone: the router no longer uses node1, yet node1's session is still up (BIRD
  // keeps running; the withdrawal came by UPDATE, not by closing the session).
  EXPECT_EQ(Nexthops(v4),
            (std::vector<std::string>{NodeIp("node2", false), NodeIp("node3", false)}));
  EXPECT_TRUE(RouterSessionUp("node1")) << lab().RouterBird("show protocols all").value_or("");
  std::this_thread::sleep_for(Ms(500));
  load.Stop();
  std::printf(
      "FIGURE bgp graceful-drain: %d requests during the drain, %d lost; agent exit "
      "%.0f ms after SIGTERM; answered by node1 %d, node2 %d, node3 %d\n",
      load.sent(), load.failed(), drained, load.answered("node1"), load.answered("node2"),
      load.answered("node3"));
  // Nothing is blackholed: the routes leave before the addresses do. What a drain cannot save is a
  // request in flight at the instant the router's next-hop set changes: ECMP rehashes flows, so
  // its next packets reach another node, which resets it (no resilient hashing in BIRD's kernel
  // routes). The client runs one request at a time, so at most one can be caught that way.
  EXPECT_LE(load.failed(), 1);
  EXPECT_GT(load.answered("node1"), 0) << "node1 served before the drain";
  // Then BIRD stops: nothing left to withdraw.
  ASSERT_TRUE(lab().StopNodeBird("node1"));
  ASSERT_TRUE(lab().StartNodeBird("node1"));
  ASSERT_TRUE(lab().StartAgent("node1"));
  ASSERT_TRUE(WaitNexthops(v4, NodeIps(false), Ms(40000)));

  // --- a bad peer object keeps the last good one ---
  Apply(LabRouterPeer(R"(  peerASN: 0
  myASN: 64513
  bfdProfile: lab-fast
)"));
  ASSERT_TRUE(Eventually(
      [&] { return Condition(Peer("lab-router"), "Valid", "status") == "False"; }, Ms(15000)))
      << Peer("lab-router").dump(2);
  EXPECT_NE(Condition(Peer("lab-router"), "Valid", "message").find("spec.peerASN: must be in"),
            std::string::npos);
  auto events = lab().Kubectl({"get", "events", "-A", "--field-selector",
                               "involvedObject.name=lab-router,reason=InvalidConfig"});
  ASSERT_TRUE(events);
  EXPECT_NE(events->find("peerASN"), std::string::npos) << *events;
  std::this_thread::sleep_for(Ms(2000));
  EXPECT_TRUE(AllSessionsUp());
  EXPECT_EQ(Nexthops(v4), NodeIps(false));
  for (const auto& n : lab().topology().nodes()) {
    EXPECT_TRUE(True(NodeEntry(Peer("lab-router"), n.name), "established")) << n.name;
  }

  // --- password mismatch: the router has none ---
  Apply(R"(apiVersion: v1
kind: Secret
metadata:
  name: router-auth
  namespace: purelb-system
stringData:
  password: not-the-routers
)");
  Apply(LabRouterPeer(R"(  peerASN: 64512
  myASN: 64513
  bfdProfile: lab-fast
  passwordSecret:
    name: router-auth
)"));
  ASSERT_TRUE(Eventually(
      [&] {
        Json e = NodeEntry(Peer("lab-router"), "node2");
        return Condition(Peer("lab-router"), "Valid", "status") == "True" && e.is_object() &&
               !True(e, "established") && Str(e, "message").find("TCP-MD5") != std::string::npos;
      },
      Ms(30000)))
      << Peer("lab-router").dump(2);
  std::printf("BGPPeer status with a password the router does not have:\n%s\n",
              Peer("lab-router")["status"].dump(2).c_str());
  EXPECT_TRUE(WaitNexthops(v4, {}, Ms(15000)));

  // Everything the agents asked for (BGP objects, BGPPeer status, the password Secret) was
  // granted by deploy/components/bgp/rbac-agent-bgp.yaml and accepted by the server.
  EXPECT_GT(ExpectNoRefusedComponentRequests(), 0);
}

// Virtual addresses on the real data path: kube-proxy on every node and pods behind an
// externalTrafficPolicy Local Service announced over BGP. Only the node with a ready endpoint
// holds the address, so it alone is the router's next hop, and kube-proxy there hands the
// client's connection to the local pod without masquerading: the pod sees the client's address.
class BgpPodsTest : public BgpTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->bgp = true;
    cfg->kube_proxy = true;
  }
};

TEST_F(BgpPodsTest, EtpLocalVirtualAddressReachesThePodWithTheClientAddressKept) {
  ASSERT_TRUE(lab().kube_proxy_running()) << lab().kube_proxy_problem();
  ASSERT_TRUE(Eventually([&] { return AllSessionsUp(); }, Ms(30000)))
      << lab().RouterBird("show protocols").value_or("");
  Apply(lab::kRoutedServiceGroup);
  Apply(RoutedService("local", true));
  auto added = lab().AddPod("node2", "local-a", "local");
  ASSERT_TRUE(added) << added.error().message();
  auto ips = WaitIngress("local", 2);
  ASSERT_EQ(ips.size(), 2u);
  // Every address routed to `node` alone, and answered from behind the router by `pod` there,
  // which saw the WAN client's own address.
  auto expect_served_by = [&](const std::string& pod, const std::string& node) {
    for (const auto& ip : ips) {
      EXPECT_TRUE(WaitNexthops(ip, {NodeIp(node, IsV6(ip))}));
      lab::ProbeResult r;
      EXPECT_TRUE(Eventually(
          [&] {
            r = WanProbe(ip);
            return r.ok && lab::ReplyFields(r.body)["pod"] == pod;
          },
          Ms(15000)))
          << ip << ": " << r.body << r.error;
      auto fields = lab::ReplyFields(r.body);
      EXPECT_EQ(fields["node"], node) << r.body;
      EXPECT_EQ(fields["client"],
                IsV6(ip) ? lab::Topology::kWanClientIpv6 : lab::Topology::kWanClientIpv4)
          << "the pod must see the client's own address: " << r.body;
      std::printf("wan$ curl %s -> %s (next hop %s)\n", ip.c_str(), r.body.c_str(),
                  NodeIp(node, IsV6(ip)).c_str());
    }
  };
  expect_served_by("local-a", "node2");
  // The endpoint moves: a pod on node3, node2's turns unready. The route and the traffic follow.
  added = lab().AddPod("node3", "local-b", "local");
  ASSERT_TRUE(added) << added.error().message();
  auto unready = lab().SetPodReady("local-a", false);
  ASSERT_TRUE(unready) << unready.error().message();
  expect_served_by("local-b", "node3");
}

}  // namespace
}  // namespace pylon::e2e
