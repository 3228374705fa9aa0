// Runs `pylon apiserver` on loopback for integration tests and benchmarks: port 0, a kubeconfig
// written to a temporary directory, killed (SIGTERM, then SIGKILL) on destruction. Fault
// injection through its /pylon/faults endpoints.
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

#include "k8s/client_impl.h"
#include "k8s/curl_transport.h"
#include "k8s/rest_config.h"

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

}  // namespace pylon::k8s
