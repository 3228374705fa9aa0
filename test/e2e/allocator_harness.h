// Integration harness: a real control plane (etcd + kube-apiserver, src/lab/control_plane.h) and
// `pylon allocator` replicas as child processes, driven with kubectl and the Kubernetes client as
// a user would. The allocator authenticates as the ServiceAccount deploy/ creates, so deploy's
// RBAC is enforced. With `fault_proxy`, the allocators reach the API server through
// `pylon-dev fault-proxy` (docs/fault-proxy.md), whose faults a test switches on and off.
// Waiting is polling with a deadline.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/client.h"
#include "k8s/client_impl.h"
#include "k8s/curl_transport.h"
#include "k8s/rest_config.h"
#include "lab/control_plane.h"
#include "lab/process.h"
#include "support/binaries.h"
#include "support/eventually.h"
#include "support/k8s/post_json.h"
#include "support/test_dir.h"

namespace pylon::allocator::e2e {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Lease timing of the allocator replicas the harness starts: loose enough that a replica stalled
// on a loaded machine does not lose its lease (which a negative assertion would catch as a flake).
inline constexpr const char* kLeaseDuration = "4s";

// Polls every 20 ms. The default deadline is generous: CI runs two test binaries at once on two
// loaded cores, and a first wait often also covers a process's start-up (informer sync, leader
// election).
inline constexpr test_support::Poll Eventually{.timeout = 20s};

inline std::string MakeTempDir(const std::string& tag) {
  std::string d = test_support::MakeTestDir("alloc-" + tag);
  if (d.empty())
    ADD_FAILURE() << "mkdtemp /tmp/pylon-alloc-" << tag << ": " << std::strerror(errno);
  return d;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct ClusterOptions {
  static ClusterOptions WithFaultProxy() {
    ClusterOptions o;
    o.fault_proxy = true;
    return o;
  }
  bool fault_proxy = false;
  std::vector<std::string> apiserver_args;  // extra kube-apiserver flags
  // false: deploy/crds are not installed (a test installs other CRDs first, e.g. PureLB's).
  bool install_crds = true;
};

class Cluster {
 public:
  // Starts the control plane and installs deploy/'s namespace, CRDs and the allocator's RBAC.
  explicit Cluster(const std::string& tag, ClusterOptions opts = {}) {
    dir_ = MakeTempDir(tag);
    if (dir_.empty()) return;
    lab::ControlPlaneConfig cpc;
    cpc.dir = dir_ + "/k8s";
    cpc.apiserver_args = opts.apiserver_args;
    control_plane_ = std::make_unique<lab::ControlPlane>(cpc);
    if (auto s = control_plane_->Start(); !s) {
      ADD_FAILURE() << s.error().message();
      return;
    }
    kubeconfig_ = control_plane_->AdminKubeconfig();
    auto rc = k8s::LoadKubeconfig(kubeconfig_);
    if (!rc) {
      ADD_FAILURE() << rc.error().message();
      return;
    }
    rest_ = *rc;
    auto c = k8s::NewClient(*rc, "pylon-allocator-test/0");
    if (!c) {
      ADD_FAILURE() << c.error().message();
      return;
    }
    client_ = std::move(*c);
    const std::string deploy = std::string(PYLON_SOURCE_DIR) + "/deploy";
    std::vector<std::string> apply = {"apply", "-f", deploy + "/namespace.yaml", "-f",
                                      deploy + "/rbac-allocator.yaml"};
    if (opts.install_crds) {
      apply.push_back("-f");
      apply.push_back(deploy + "/crds");
    }
    auto out = Kubectl(apply);
    EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().message());
    if (opts.install_crds) {
      auto w = Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"});
      EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
    }
    std::string server = control_plane_->Server();
    if (opts.fault_proxy) {
      const std::string addr_file = dir_ + "/fault-proxy.address";
      auto p = lab::Process::Spawn({{test_support::DevBinary(), "fault-proxy", "--upstream", server,
                                     "--upstream-ca", control_plane_->CaFile(), "--etcd",
                                     control_plane_->EtcdEndpoint(), "--address-out", addr_file},
                                    "",
                                    dir_ + "/fault-proxy.log",
                                    {},
                                    true});
      if (!p) {
        ADD_FAILURE() << p.error().message();
        return;
      }
      proxy_ = std::move(*p);
      if (!Eventually([&] { return !ReadAll(addr_file).empty(); }, 10s)) {
        ADD_FAILURE() << "fault-proxy did not start:\n" << ReadAll(dir_ + "/fault-proxy.log");
        return;
      }
      server = ReadAll(addr_file);
      while (!server.empty() && std::isspace(static_cast<unsigned char>(server.back()))) {
        server.pop_back();
      }
      proxy_url_ = server;
    }
    allocator_kubeconfig_ = dir_ + "/kubeconfig-allocator";
    auto s = control_plane_->WriteServiceAccountKubeconfig(allocator_kubeconfig_, "purelb-system",
                                                           "allocator", server);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  }
  ~Cluster() {
    allocators_.clear();
    proxy_.Stop(std::chrono::milliseconds(2000));
    if (control_plane_) control_plane_->Stop();
    if (!::testing::Test::HasFailure()) test_support::RemoveTestDir(dir_);
  }

  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  k8s::Client& client() { return *client_; }
  lab::ControlPlane& control_plane() { return *control_plane_; }

  // kubectl (of the server's release) as the admin.
  Result<std::string> Kubectl(std::vector<std::string> args) {
    return control_plane_->Kubectl(args);
  }
  // `kubectl apply -f` of a YAML/JSON document, with default validation.
  Result<std::string> Apply(const std::string& doc) {
    const std::string file = dir_ + "/apply-" + std::to_string(++files_) + ".yaml";
    std::ofstream(file) << doc;
    return Kubectl({"apply", "-f", file});
  }

  // POST /pylon/faults (or a sub-path) on the fault proxy (ClusterOptions::fault_proxy).
  Status Faults(const std::string& path, const std::string& body) {
    if (proxy_url_.empty()) return Fail(ErrorCode::kInvalidArgument, "no fault proxy");
    k8s::RestConfig rc;
    rc.server = proxy_url_;
    return k8s::PostJson(rc, path, body);
  }

  // Starts an allocator replica; returns its index.
  int StartAllocator(const std::string& identity, std::vector<std::string> extra = {}) {
    Replica r;
    r.log = dir_ + "/allocator-" + identity + "-" + std::to_string(++starts_) + ".log";
    const std::string pylon = test_support::ProductBinary();
    std::vector<std::string> argv = {pylon,
                                     "allocator",
                                     "--kubeconfig",
                                     allocator_kubeconfig_,
                                     "--namespace",
                                     "purelb-system",
                                     "--metrics-addr",
                                     "127.0.0.1:0",
                                     "--identity",
                                     identity,
                                     "--lease-duration",
                                     kLeaseDuration,
                                     "--renew-deadline",
                                     "3s",
                                     "--retry-period",
                                     "250ms",
                                     "--log-level",
                                     "debug"};
    for (auto& e : extra) argv.push_back(e);
    auto p = lab::Process::Spawn({argv, "", r.log, {}, true});
    if (!p) {
      ADD_FAILURE() << p.error().message();
      return -1;
    }
    r.proc = std::move(*p);
    r.identity = identity;
    r.extra = std::move(extra);
    allocators_.push_back(std::move(r));
    return static_cast<int>(allocators_.size()) - 1;
  }
  // What the allocator's Deployment does: a replica that lost its Lease exits ("leadership lost;
  // stopping", as client-go's leader election does) and is started again, with the same identity
  // and flags. On a busy machine a renewal round can pass its renew deadline (3 s here) without
  // one renewal landing. Any other exit is a failure. Returns whether the replica runs; `r`
  // becomes the index of the new replica.
  bool KeepAllocatorRunning(int& r) {
    if (r < 0) return false;
    Replica& old = allocators_[static_cast<size_t>(r)];
    if (old.proc.running()) return true;
    const std::string log = ReadAll(old.log);
    if (log.find("leadership lost; stopping") == std::string::npos) {
      ADD_FAILURE() << "the allocator exited, not for a lost Lease:\n"
                    << (log.size() > 5000 ? log.substr(log.size() - 5000) : log);
      r = -1;
      return false;
    }
    std::printf("the allocator %s lost its Lease and exited; started again (%d)\n",
                old.identity.c_str(), ++restarts_);
    const std::string identity = old.identity;
    const std::vector<std::string> extra = old.extra;
    r = StartAllocator(identity, extra);
    return r >= 0;
  }
  int allocator_restarts() const { return restarts_; }
  lab::Process& allocator(int i) { return allocators_[static_cast<size_t>(i)].proc; }
  std::string AllocatorLog(int i) { return ReadAll(allocators_[static_cast<size_t>(i)].log); }
  // The metrics URL the replica logged ("metrics listening" url=...).
  std::string MetricsUrl(int i) {
    std::string url;
    Eventually(
        [&] {
          std::smatch m;
          std::string log = AllocatorLog(i);
          static const std::regex re("url=\"?(http://[0-9.:]+)");
          if (std::regex_search(log, m, re)) url = m[1];
          return !url.empty();
        },
        10s);
    return url;
  }
  // GET on the replica's metrics server; "" on failure.
  std::string HttpGet(const std::string& url) {
    k8s::RestConfig rc;
    rc.server =
        url.substr(0, url.find('/', 7) == std::string::npos ? url.size() : url.find('/', 7));
    auto t = k8s::CurlTransport::Create(rc);
    if (!t) return "";
    k8s::HttpRequest req;
    req.path = url.substr(rc.server.size());
    req.accept = "text/plain";
    auto resp = (*t)->Do(req);
    if (!resp || resp->status != 200) return "";
    return resp->body;
  }

  // --- objects ---
  Result<json> GetService(const std::string& name, const std::string& ns = "default") {
    return client_->Get(k8s::resources::Services(), ns, name);
  }
  std::vector<std::string> Ingress(const std::string& name, const std::string& ns = "default") {
    std::vector<std::string> out;
    auto s = GetService(name, ns);
    if (!s) return out;
    const json* ing = Find(*s, {"status", "loadBalancer"});
    if (!ing || !ing->contains("ingress")) return out;
    for (const auto& e : (*ing)["ingress"]) {
      if (e.contains("ip")) out.push_back(e["ip"].get<std::string>());
    }
    return out;
  }
  // The purelb.io/AddressAllocated condition: {status, reason, message} or null.
  json Condition(const std::string& name, const std::string& ns = "default") {
    auto s = GetService(name, ns);
    if (!s) return nullptr;
    const json* st = Find(*s, {"status"});
    if (!st || !st->contains("conditions")) return nullptr;
    for (const auto& c : (*st)["conditions"]) {
      if (c.value("type", "") == "purelb.io/AddressAllocated") return c;
    }
    return nullptr;
  }
  std::string Annotation(const std::string& name, const std::string& key,
                         const std::string& ns = "default") {
    auto s = GetService(name, ns);
    return s ? k8s::Annotation(*s, key) : "";
  }
  bool WaitIngress(const std::string& name, std::vector<std::string> want,
                   std::chrono::milliseconds timeout = 20s, const std::string& ns = "default") {
    return Eventually([&] { return Ingress(name, ns) == want; }, timeout);
  }
  bool WaitReason(const std::string& name, const std::string& reason,
                  std::chrono::milliseconds timeout = 20s, const std::string& ns = "default") {
    return Eventually(
        [&] {
          json c = Condition(name, ns);
          return c.is_object() && c.value("reason", "") == reason;
        },
        timeout);
  }
  // Event reasons recorded for the object (kubectl's field selector).
  std::vector<std::string> Events(const std::string& kind, const std::string& name,
                                  const std::string& ns = "default") {
    std::vector<std::string> out;
    k8s::ListOptions lo;
    lo.field_selector = "involvedObject.kind=" + kind + ",involvedObject.name=" + name;
    auto l = client_->List(k8s::resources::Events(), ns, lo);
    if (!l) return out;
    for (const auto& e : l->items) {
      out.push_back(e.value("type", "") + " " + e.value("reason", "") + " " +
                    FindString(e, {"source", "component"}).value_or("") + " " +
                    e.value("message", ""));
    }
    return out;
  }
  bool WaitEvent(const std::string& kind, const std::string& name, const std::string& needle,
                 const std::string& ns = "default") {
    return Eventually([&] {
      for (const auto& e : Events(kind, name, ns)) {
        if (e.find(needle) != std::string::npos) return true;
      }
      return false;
    });
  }

 private:
  struct Replica {
    lab::Process proc;
    std::string log;
    std::string identity;
    std::vector<std::string> extra;
  };
  std::string dir_;
  std::string kubeconfig_;            // the admin's
  std::string allocator_kubeconfig_;  // the allocator ServiceAccount's (through the proxy if any)
  std::string proxy_url_;
  k8s::RestConfig rest_;
  std::unique_ptr<lab::ControlPlane> control_plane_;
  lab::Process proxy_;
  std::unique_ptr<k8s::Client> client_;
  std::vector<Replica> allocators_;
  int files_ = 0;
  int starts_ = 0;
  int restarts_ = 0;
};

// A Service manifest (JSON, which kubectl and the client both accept).
struct Svc {
  Svc(std::string name_ = "", std::string ns_ = "default",
      std::optional<std::string> cls_ = std::nullopt,
      std::vector<std::pair<std::string, std::string>> annotations_ = {},
      std::vector<std::string> families_ = {}, std::string policy_ = "")
      : name(std::move(name_)),
        ns(std::move(ns_)),
        cls(std::move(cls_)),
        annotations(std::move(annotations_)),
        families(std::move(families_)),
        policy(std::move(policy_)) {}

  std::string name;
  std::string ns = "default";
  std::optional<std::string> cls;
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<std::string> families;  // empty: server default
  std::string policy;                 // empty: server default
  std::vector<std::pair<std::string, int>> ports = {{"TCP", 80}};
  std::string type = "LoadBalancer";

  json ToJson() const {
    json ann = json::object();
    for (const auto& [k, v] : annotations) ann[k] = v;
    json ports_j = json::array();
    for (const auto& [proto, port] : ports) {
      ports_j.push_back(
          {{"name", proto == "TCP" ? "p" + std::to_string(port) : "u" + std::to_string(port)},
           {"protocol", proto},
           {"port", port},
           {"targetPort", port}});
    }
    json spec = {{"type", type}, {"ports", ports_j}, {"selector", {{"app", name}}}};
    if (cls) spec["loadBalancerClass"] = *cls;
    // Pylon never needs NodePorts (seed 003); 10^4 Services would exhaust the NodePort range.
    if (type == "LoadBalancer") spec["allocateLoadBalancerNodePorts"] = false;
    if (!families.empty()) spec["ipFamilies"] = families;
    if (!policy.empty()) spec["ipFamilyPolicy"] = policy;
    return {{"apiVersion", "v1"},
            {"kind", "Service"},
            {"metadata", {{"name", name}, {"namespace", ns}, {"annotations", ann}}},
            {"spec", spec}};
  }
};

}  // namespace pylon::allocator::e2e
