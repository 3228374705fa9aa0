// Helpers for the end-to-end tests: a whole lab (src/lab/lab.h) per test, kubectl, the client
// prober and checks of the addresses on the nodes. Waiting is polling with a deadline, never a
// fixed sleep.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lab/lab.h"
#include "lab/netns.h"
#include "lab/process.h"
#include "lab/responder.h"

namespace pylon::e2e {

using Ms = std::chrono::milliseconds;
using Json = nlohmann::json;

// Polls `pred` every 20 ms until it holds or `timeout` passes.
inline bool Eventually(const std::function<bool()>& pred, Ms timeout = Ms(15000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(Ms(20));
  }
  return pred();
}

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
    // PYLON_E2E_BINARY overrides the pylon binary under test (default: this build's).
    const char* bin = std::getenv("PYLON_E2E_BINARY");
    cfg.binary = bin != nullptr && *bin != 0 ? bin : PYLON_BINARY;
    cfg.dir = "/tmp/pylon-lab/" + cfg.name;
    Configure(&cfg);
    lab_ = std::make_unique<lab::Lab>(cfg);
    auto up = lab_->Up();
    ASSERT_TRUE(up) << up.error().message();
  }
  void TearDown() override {
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
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-o", "json"});
    auto out = lab_->Kubectl(a);
    if (!out) return Json();
    try {
      return Json::parse(*out);
    } catch (const std::exception&) {
      return Json();
    }
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
  const lab::LabNode& Node(const std::string& name) {
    for (const auto& n : lab_->topology().nodes()) {
      if (n.name == name) return n;
    }
    return lab_->topology().nodes().front();
  }

  std::unique_ptr<lab::Lab> lab_;
};

}  // namespace pylon::e2e
