// The adapter around KubeProxyHealth: a thread that GETs this node's kube-proxy /healthz (by
// default http://127.0.0.1:10256/healthz) every interval with a per-request timeout, through the
// Kubernetes client's CurlTransport, and feeds each outcome (HTTP 200 = pass; any other status,
// a refused connection or a timeout = fail) to the pure hysteresis. On a change of verdict it
// queues a transition and calls `on_change` (the agent wakes its loop, which drains the
// transitions for the event, the log line and the metrics, and re-runs the election).
//
// Threading: Start/Stop from the owner; health() and TakeTransitions() from any
// thread. `on_change` runs on the checker thread and must not block.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/kube_proxy_health.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/worker.h"
#include "k8s/transport.h"

namespace pylon::agent {

struct KubeProxyTransition {
  KubeProxyState from = KubeProxyState::kUnknown;
  KubeProxyState to = KubeProxyState::kUnknown;
  std::string last_result;  // e.g. "HTTP 200", "HTTP 503", "connection refused ..."
};

// One GET of `url` (http:// or https://, no client certificate) with `timeout` for connecting and
// for the whole request: the HTTP status, or the transport error. For the wire check of another
// node's kube-proxy (takeover.h).
Result<int> HttpGetStatus(const std::string& url, Duration timeout, const Clock& clock);

class KubeProxyChecker {
 public:
  // One GET of the health URL: the HTTP status, or the transport error. Tests inject one.
  using Probe = std::function<Result<int>()>;

  // Fails on a URL CurlTransport cannot use.
  static Result<std::unique_ptr<KubeProxyChecker>> Create(KubeProxyCheckOptions options,
                                                          const Clock& clock,
                                                          std::function<void()> on_change,
                                                          Probe probe = {});
  ~KubeProxyChecker();

  void Start();
  void Stop();  // idempotent; joins the thread
  // One check now (what the thread runs every interval). Returns the outcome's text.
  std::string CheckOnce();

  // A copy of the verdict so far, taken under one lock: its state() and eligible() agree.
  KubeProxyHealth health() const;
  std::vector<KubeProxyTransition> TakeTransitions();
  const KubeProxyCheckOptions& options() const { return options_; }

 private:
  KubeProxyChecker(KubeProxyCheckOptions options, const Clock& clock,
                   std::function<void()> on_change, Probe probe);

  const KubeProxyCheckOptions options_;
  const Clock& clock_;
  std::function<void()> on_change_;
  Probe probe_;
  std::unique_ptr<k8s::Transport> transport_;  // null when a probe was injected

  mutable Mutex mu_;
  KubeProxyHealth health_ PYLON_GUARDED_BY(mu_);
  std::vector<KubeProxyTransition> pending_ PYLON_GUARDED_BY(mu_);
  // The last failing outcome logged (no repeat every interval).
  std::string last_logged_ PYLON_GUARDED_BY(mu_);
  Worker worker_;  // CheckOnce every interval (last: stops first)
};

}  // namespace pylon::agent
