// Test harnesses for the Kubernetes client against a server on loopback:
//  - RealApiServer: the real etcd + kube-apiserver (lab::ControlPlane: TLS, RBAC, admin token)
//    with `pylon fault-proxy` (src/faultproxy) in front of it, run in-process. config() goes
//    through the proxy (faults apply), direct_config() straight to kube-apiserver over TLS.
//    SetFaults / CutWatches / Compact use the proxy's /pylon/faults control API.
//  - ApiServerProcess: the legacy in-memory `pylon apiserver`, still used by bench/k8s only; it
//    goes away with src/apiserver.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "faultproxy/proxy.h"
#include "k8s/client_impl.h"
#include "k8s/curl_transport.h"
#include "k8s/rest_config.h"
#include "lab/control_plane.h"

namespace pylon::k8s {

class ApiServerProcess {
 public:
  // Starts the server and waits (up to 20 s) for its kubeconfig. Fails if the binary is missing
  // or the server does not come up.
  // $PYLON_APISERVER_BINARY, when set, replaces `binary_default`.
  static Result<std::unique_ptr<ApiServerProcess>> Start(const std::string& binary_default,
                                                         bool tls,
                                                         std::vector<std::string> extra = {}) {
    const char* env = std::getenv("PYLON_APISERVER_BINARY");
    const std::string binary = env != nullptr && *env != '\0' ? env : binary_default;
    if (access(binary.c_str(), X_OK) != 0) {
      return Fail(ErrorCode::kNotFound, "no pylon binary at " + binary);
    }
    std::unique_ptr<ApiServerProcess> p(new ApiServerProcess());
    char tmpl[] = "/tmp/pylon-k8s-it-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return FailErrno(errno, "mkdtemp");
    p->dir_ = tmpl;
    p->kubeconfig_ = p->dir_ + "/kubeconfig";
    std::vector<std::string> args = {
        binary,         "apiserver",   "--listen", "127.0.0.1:0", "--kubeconfig-out",
        p->kubeconfig_, "--log-level", "warn"};
    if (tls) args.push_back("--tls");
    for (auto& e : extra) args.push_back(std::move(e));
    std::string log = p->dir_ + "/apiserver.log";
    pid_t pid = fork();
    if (pid < 0) return FailErrno(errno, "fork");
    if (pid == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      if (f != nullptr) dup2(fileno(stdout), STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    p->pid_ = pid;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(p->kubeconfig_)) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        p->pid_ = -1;
        return Fail(ErrorCode::kUnavailable, "pylon apiserver exited; see " + log);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(ErrorCode::kUnavailable, "pylon apiserver did not write its kubeconfig");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    auto cfg = LoadKubeconfig(p->kubeconfig_);
    if (!cfg) return Fail(cfg.error());
    p->config_ = *cfg;
    return p;
  }

  ~ApiServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 300; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  const RestConfig& config() const { return config_; }
  const std::string& kubeconfig() const { return kubeconfig_; }

  Status Post(const std::string& path, const std::string& body) {
    auto t = CurlTransport::Create(config_);
    if (!t) return Fail(t.error());
    HttpRequest req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.content_type = "application/json";
    auto resp = (*t)->Do(req);
    if (!resp) return Fail(resp.error());
    if (resp->status / 100 != 2) {
      return Fail(ErrorCode::kUnavailable, path + ": HTTP " + std::to_string(resp->status));
    }
    return Ok();
  }
  Status SetFaults(const std::string& json) { return Post("/pylon/faults", json); }
  Status CutWatches() { return Post("/pylon/faults/cut-watches", "{}"); }
  Status Compact() { return Post("/pylon/faults/compact", "{}"); }

 private:
  ApiServerProcess() = default;
  pid_t pid_ = -1;
  std::string dir_;
  std::string kubeconfig_;
  RestConfig config_;
};

// POSTs `body` to `path` with `config` and wants a 2xx.
inline Status PostJson(const RestConfig& config, const std::string& path,
                       const std::string& body) {
  auto t = CurlTransport::Create(config);
  if (!t) return Fail(t.error());
  HttpRequest req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.content_type = "application/json";
  auto resp = (*t)->Do(req);
  if (!resp) return Fail(resp.error());
  if (resp->status / 100 != 2) {
    return Fail(ErrorCode::kUnavailable,
                path + ": HTTP " + std::to_string(resp->status) + ": " + resp->body);
  }
  return Ok();
}

class RealApiServer {
 public:
  // Whether the Kubernetes binaries are there (tests skip, saying why, when they are not).
  static bool Available(std::string* why) {
    std::string dir = lab::K8sBinDir();
    for (const char* b : {"etcd", "kube-apiserver", "kubectl"}) {
      if (dir.empty() || access((dir + "/" + b).c_str(), X_OK) != 0) {
        *why = std::string("no ") + b + " in \"" + dir +
               "\" (scripts/k8s-components.sh builds it; set PYLON_K8S_BIN_DIR)";
        return false;
      }
    }
    return true;
  }

  // Starts etcd + kube-apiserver in a fresh temporary directory, then the fault proxy.
  static Result<std::unique_ptr<RealApiServer>> Start(
      std::vector<std::string> apiserver_args = {}) {
    std::unique_ptr<RealApiServer> s(new RealApiServer());
    char tmpl[] = "/tmp/pylon-k8s-it-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return FailErrno(errno, "mkdtemp");
    s->dir_ = tmpl;
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
      plane_->SignalApiserver(SIGCONT);  // in case a test left it stopped
      plane_->Stop();
    }
    plane_.reset();
    if (!dir_.empty() && std::getenv("PYLON_KEEP_TEST_DIRS") == nullptr) {
      std::filesystem::remove_all(dir_);
    }
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

}  // namespace pylon::k8s
