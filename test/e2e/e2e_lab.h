// Helpers for the end-to-end tests: a whole lab (src/lab/lab.h) per test, kubectl, the client
// prober and checks of the addresses on the nodes. Waiting is polling with a deadline, never a
// fixed sleep.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lab/lab.h"
#include "lab/neighbor_probe.h"
#include "lab/netns.h"
#include "lab/process.h"
#include "lab/responder.h"
#include "lab/service_state.h"
#include "support/binaries.h"
#include "support/eventually.h"
#include "support/kubectl_json.h"
#include "support/manifests.h"

namespace pylon::e2e {

using Ms = std::chrono::milliseconds;
using Json = nlohmann::json;

// Seed 000's example in the lab's documentation ranges (local addresses on LAN A): the demo's
// ServiceGroup, one text for the lab and the tests.
inline const char* const kLocalDual = lab::kDemoGroup;

// A Lace class with small pools on LAN B (documentation ranges).
inline const std::string kPublicClass = test_support::LoadBalancerClassYaml("public", R"(  mode: l2
  ipv4Pools:
  - start: 198.51.100.5
    end: 198.51.100.9
  ipv6Pools:
  - start: 2001:db8:f00d::5
    end: 2001:db8:f00d::9
)");

// Pools on no node's subnet, so virtual addresses on kube-lb0 (203.0.113.10-20,
// 2001:db8:beef::10-20): the lines under a ServiceGroup's spec.local or spec.remote.
inline constexpr const char* kVirtualPools = R"(    v4pools:
    - aggregation: default
      pool: 203.0.113.10-203.0.113.20
      subnet: 203.0.113.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:beef::10-2001:db8:beef::20
      subnet: 2001:db8:beef::/64
)";

inline std::string ServiceYaml(const std::string& name, const std::string& annotations,
                               const std::string& extra_spec, int port = 80) {
  return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name +
         "\n  namespace: default\n  annotations:\n" + annotations +
         "spec:\n  type: LoadBalancer\n  selector:\n    app: " + name + "\n" + extra_spec +
         "  ports:\n  - port: " + std::to_string(port) +
         "\n    protocol: TCP\n    targetPort: 8080\n";
}

inline constexpr const char* kDualSpec =
    "  ipFamilyPolicy: RequireDualStack\n  ipFamilies:\n  - IPv4\n  - IPv6\n";

inline bool IsV6(const std::string& ip) { return ip.find(':') != std::string::npos; }

// "02:00:00:00:00:01,..." for messages.
inline std::string Macs(const std::vector<packet::MacAddress>& macs) {
  std::string out;
  for (const auto& m : macs) out += (out.empty() ? "" : ",") + m.ToString();
  return out.empty() ? "nobody" : out;
}

// Polls every 20 ms, for 15 s unless told.
inline constexpr test_support::Poll Eventually{.timeout = Ms(15000)};

// Every test gets its own lab with a unique name (pid + counter, ≤ 12 chars), torn down by the
// fixture even when the test fails.
class LabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces)";
    static std::atomic<int> counter{0};
    lab::LabConfig cfg;
    cfg.name = "e" + std::to_string(getpid() % 100000) + "x" + std::to_string(counter++);
    cfg.nodes = 3;
    // The lab runs `allocator` and `agent` from the product binary ($PYLON_BUILD_DIR overrides
    // the build directory: support/binaries.h).
    cfg.binary = test_support::ProductBinary();
    cfg.dir = "/tmp/pylon-lab/" + cfg.name;
    Configure(&cfg);
    lab_ = std::make_unique<lab::Lab>(cfg);
    auto up = lab_->Up();
    ASSERT_TRUE(up) << up.error().message();
  }
  void TearDown() override {
    if (lab_ && HasFailure()) {
      // What the components said, for a failure seen only in CI (the lab's directory goes).
      for (const auto& n : lab_->topology().nodes()) {
        std::ifstream f(lab_->config().dir + "/agent-" + n.name + ".log");
        std::string line, tail;
        std::vector<std::string> lines;
        while (std::getline(f, line)) {
          if (line.find("level=debug") == std::string::npos) lines.push_back(line);
        }
        for (size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i) {
          tail += lines[i] + "\n";
        }
        std::fprintf(stderr, "---- agent %s (last %zu lines) ----\n%s", n.name.c_str(),
                     lines.size() > 40 ? size_t{40} : lines.size(), tail.c_str());
      }
    }
    if (lab_) {
      auto s = lab_->Down();
      EXPECT_TRUE(s) << s.error().message();
      EXPECT_FALSE(lab_->topology().Exists());
    }
  }
  virtual void Configure(lab::LabConfig*) {}

  lab::Lab& lab() { return *lab_; }

  void Apply(const std::string& manifest) {
    auto s = lab_->Apply(manifest);
    ASSERT_TRUE(s) << s.error().message();
  }

  Json GetJson(const std::vector<std::string>& args) {
    return test_support::KubectlJson(*lab_, args);
  }
  Json Service(const std::string& name, const std::string& ns = "default") {
    return GetJson({"get", "service", "-n", ns, name});
  }

  static std::vector<std::string> IngressIps(const Json& svc) {
    std::vector<std::string> out;
    try {
      for (const auto& i : svc.at("status").at("loadBalancer").at("ingress")) {
        out.push_back(i.at("ip").get<std::string>());
      }
    } catch (const std::exception&) {
    }
    return out;
  }
  static std::string Annotation(const Json& obj, const std::string& key) {
    try {
      return obj.at("metadata").at("annotations").at(key).get<std::string>();
    } catch (const std::exception&) {
      return "";
    }
  }
  // "node2,eth0" → "node2".
  static std::string Announcer(const Json& svc, bool v6) {
    std::string a = Annotation(svc, v6 ? "purelb.io/announcing-IPv6" : "purelb.io/announcing-IPv4");
    return a.substr(0, a.find(','));
  }

  // Waits until the Service has `count` ingress addresses and returns them (empty on timeout).
  std::vector<std::string> WaitIngress(const std::string& name, size_t count,
                                       Ms timeout = Ms(15000)) {
    std::vector<std::string> ips;
    Eventually(
        [&] {
          ips = IngressIps(Service(name));
          return ips.size() == count;
        },
        timeout);
    return ips.size() == count ? ips : std::vector<std::string>{};
  }

  // Reads the API server's audit log: no request of the allocator or an agent (ServiceAccounts
  // of purelb-system) was refused as malformed (400), forbidden (403) or invalid (422). Returns
  // how many requests they made.
  int ExpectNoRefusedComponentRequests() {
    std::ifstream f(lab_->control_plane().AuditLog());
    std::string line;
    int requests = 0;
    while (std::getline(f, line)) {
      Json e = Json::parse(line, nullptr, false);
      if (!e.is_object()) continue;
      const std::string user = e.value("user", Json::object()).value("username", "");
      if (user.rfind("system:serviceaccount:purelb-system:", 0) != 0) continue;
      ++requests;
      const int code = e.value("responseStatus", Json::object()).value("code", 0);
      EXPECT_TRUE(code != 400 && code != 403 && code != 422)
          << user << " " << e.value("verb", "") << " " << e.value("requestURI", "") << " -> "
          << code;
    }
    return requests;
  }

  lab::ProbeResult Probe(const std::string& ip, Ms timeout = Ms(300)) {
    auto r = lab::InNetns(lab_->topology().ClientNetns(),
                          [&] { return lab::ProbeOnce(ip, 80, timeout); });
    if (!r) return lab::ProbeResult{false, "", r.error().message()};
    return *r;
  }
  bool EventuallyReachable(const std::string& ip, Ms timeout = Ms(15000)) {
    return Eventually([&] { return Probe(ip).ok; }, timeout);
  }

  // Whether `ip` is configured on `dev` in the node's namespace.
  bool HasAddress(const lab::LabNode& node, const std::string& dev, const std::string& ip) {
    std::string out;
    auto rc = lab::RunCommand({"ip", "-o", "addr", "show", "dev", dev}, &out, node.netns);
    if (!rc || *rc != 0) return false;
    return out.find(" " + ip + "/") != std::string::npos;
  }
  // Nodes that have `ip` on `dev`.
  std::vector<std::string> NodesWith(const std::string& dev, const std::string& ip) {
    std::vector<std::string> out;
    for (const auto& n : lab_->topology().nodes()) {
      if (HasAddress(n, dev, ip)) out.push_back(n.name);
    }
    return out;
  }
  // MAC of a node's eth0 (all zero if it cannot be read).
  packet::MacAddress NodeMac(const std::string& name) {
    auto mac = lab::InterfaceMacIn(Node(name).netns, "eth0");
    return mac ? *mac : packet::MacAddress();
  }
  // Who answers ARP (IPv4) / NS (IPv6) for `ip`: one request from the client's eth0 as the lab's
  // observer (so the client's own neighbour cache is left alone), answers collected for `listen`.
  // Sorted MACs; an error counts as nobody.
  std::vector<packet::MacAddress> Answerers(const std::string& ip, Ms listen = Ms(50)) {
    const bool v6 = ip.find(':') != std::string::npos;
    const auto source = net::IpAddress::Parse(v6 ? lab::kObserverIpv6 : lab::kObserverIpv4);
    const auto target = net::IpAddress::Parse(ip);
    if (!source || !target) return {};
    auto r = lab::InNetns(lab_->topology().ClientNetns(),
                          [&]() -> Result<std::vector<packet::MacAddress>> {
                            auto p = lab::NeighborProber::Open("eth0", *source, lab::kObserverMac);
                            if (!p) return Fail(p.error());
                            return p->Ask(*target, listen);
                          });
    return r && *r ? **r : std::vector<packet::MacAddress>{};
  }
  // Whether `mac` alone answered each of `rounds` consecutive requests for `ip` (one lost or late
  // answer of another host must not pass for silence).
  bool OnlyAnswerer(const std::string& ip, const packet::MacAddress& mac, int rounds = 5) {
    for (int i = 0; i < rounds; ++i) {
      if (Answerers(ip) != std::vector<packet::MacAddress>{mac}) return false;
    }
    return true;
  }
  // A value of the agent's /metrics on `node` (a metric without labels); nullopt if unreadable.
  std::optional<double> AgentMetric(const std::string& node, const std::string& name) {
    auto r = lab::InNetns(Node(node).netns,
                          [&] { return lab::ProbeOnce("127.0.0.1", 7473, Ms(1000), "/metrics"); });
    if (!r || !r->ok) return std::nullopt;
    const std::string key = "\n" + name + " ";
    auto at = ("\n" + r->body).find(key);
    if (at == std::string::npos) return std::nullopt;
    try {
      return std::stod(r->body.substr(at + key.size() - 1));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  const lab::LabNode& Node(const std::string& name) {
    for (const auto& n : lab_->topology().nodes()) {
      if (n.name == name) return n;
    }
    return lab_->topology().nodes().front();
  }

  std::unique_ptr<lab::Lab> lab_;
};

}  // namespace pylon::e2e
