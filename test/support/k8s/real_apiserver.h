// Harness for the Kubernetes client against a server on loopback (tests and bench/k8s; the
// target links pylon_k8s, pylon_lab and pylon_faultproxy):
// RealApiServer is the real etcd + kube-apiserver (lab::ControlPlane: TLS, RBAC, admin token)
// with `pylon-dev fault-proxy` (src/faultproxy) in front of it, run in-process. config() goes
// through the proxy (faults apply), direct_config() straight to kube-apiserver over TLS. SetFaults
// / CutWatches / Compact use the proxy's /pylon/faults control API.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "faultproxy/proxy.h"
#include "k8s/client_impl.h"
#include "k8s/curl_transport.h"
#include "k8s/rest_config.h"
#include "lab/control_plane.h"
#include "support/apiserver.h"
#include "support/k8s/post_json.h"
#include "support/test_dir.h"

namespace pylon::k8s {

class RealApiServer {
 public:
  // Starts etcd + kube-apiserver in a fresh temporary directory, then the fault proxy.
  static Result<std::unique_ptr<RealApiServer>> Start(
      std::vector<std::string> apiserver_args = {}) {
    std::unique_ptr<RealApiServer> s(new RealApiServer());
    s->dir_ = test_support::MakeTestDir("k8s-it");
    if (s->dir_.empty()) return FailErrno(errno, "mkdtemp");
    lab::ControlPlaneConfig cc;
    cc.dir = s->dir_ + "/cp";
    cc.audit = false;
    cc.apiserver_args = std::move(apiserver_args);
    s->plane_ = std::make_unique<lab::ControlPlane>(cc);
    if (auto st = s->plane_->Start(); !st) return Fail(st.error());
    auto direct = LoadKubeconfig(s->plane_->AdminKubeconfig());
    if (!direct) return Fail(direct.error());
    s->direct_ = *direct;
    faultproxy::ProxyOptions po;
    po.upstream = s->plane_->Server();
    po.upstream_ca_pem = s->direct_.ca_pem;
    po.etcd = s->plane_->EtcdEndpoint();
    auto proxy = faultproxy::FaultProxy::Start(po);
    if (!proxy) return Fail(proxy.error());
    s->proxy_ = std::move(*proxy);
    s->config_ = s->direct_;
    s->config_.server = s->proxy_->Url();
    s->config_.ca_pem.clear();
    return s;
  }

  ~RealApiServer() {
    if (proxy_) proxy_->Stop();
    proxy_.reset();
    if (plane_) {
      // In case a test left it stopped. Ignored on failure: Stop() below ends it either way.
      (void)plane_->SignalApiserver(SIGCONT);
      plane_->Stop();
    }
    plane_.reset();
    test_support::RemoveTestDir(dir_);
  }

  lab::ControlPlane& plane() { return *plane_; }
  faultproxy::FaultProxy& proxy() { return *proxy_; }
  // Through the fault proxy (plain HTTP on loopback), as the admin.
  const RestConfig& config() const { return config_; }
  // Straight to kube-apiserver (TLS with the control plane's CA), as the admin.
  const RestConfig& direct_config() const { return direct_; }
  const std::string& dir() const { return dir_; }

  Status SetFaults(const std::string& json) { return PostJson(config_, "/pylon/faults", json); }
  Status CutWatches() { return PostJson(config_, "/pylon/faults/cut-watches", "{}"); }
  Status Compact() { return PostJson(config_, "/pylon/faults/compact", "{}"); }

 private:
  RealApiServer() = default;
  std::string dir_;
  std::unique_ptr<lab::ControlPlane> plane_;
  std::unique_ptr<faultproxy::FaultProxy> proxy_;
  RestConfig direct_;
  RestConfig config_;
};

// For a fixture's SetUpTestSuite: starts `*server` unless it runs already or the Kubernetes
// binaries are missing (the fixture's SetUp then skips or fails: PYLON_NEED_APISERVER). Returns
// why it could not start, or "".
inline std::string StartSuiteApiServer(RealApiServer** server) {
  if (*server != nullptr || test_support::ApiServerMissing()) return "";
  auto s = RealApiServer::Start();
  if (!s) return s.error().message();
  *server = s->release();
  return "";
}

}  // namespace pylon::k8s
