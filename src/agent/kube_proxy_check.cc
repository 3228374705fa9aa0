#include "agent/kube_proxy_check.h"

#include <utility>

#include "common/log.h"
#include "k8s/curl_transport.h"

namespace pylon::agent {

Result<int> HttpGetStatus(const std::string& url, Duration timeout, const Clock& clock) {
  k8s::RestConfig rc;
  rc.server = url;
  rc.user_agent = "pylon-agent/wire-check";
  rc.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  rc.request_timeout = rc.connect_timeout;
  auto t = k8s::CurlTransport::Create(rc, clock);
  if (!t) return Fail(t.error());
  k8s::HttpRequest req;
  req.path = "";
  req.accept = "*/*";
  req.timeout = rc.request_timeout;
  auto r = (*t)->Do(req);
  if (!r) return Fail(r.error());
  return static_cast<int>(r->status);
}

Result<std::unique_ptr<KubeProxyChecker>> KubeProxyChecker::Create(KubeProxyCheckOptions options,
                                                                   const Clock& clock,
                                                                   std::function<void()> on_change,
                                                                   Probe probe) {
  if (auto st = ValidateKubeProxyCheck(options); !st) return Fail(st.error());
  std::unique_ptr<KubeProxyChecker> c(
      new KubeProxyChecker(options, clock, std::move(on_change), std::move(probe)));
  if (!c->probe_) {
    // The whole URL is the transport's base; each request's path is empty. Connect and total
    // timeouts are both the per-request timeout; no token.
    k8s::RestConfig rc;
    rc.server = options.url;
    rc.user_agent = "pylon-agent/kube-proxy-check";
    rc.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
    rc.request_timeout = rc.connect_timeout;
    auto t = k8s::CurlTransport::Create(rc, clock);
    if (!t) return Fail(t.error().Wrap("--kube-proxy-healthz"));
    c->transport_ = std::move(*t);
    k8s::Transport* tr = c->transport_.get();
    const auto timeout = rc.request_timeout;
    c->probe_ = [tr, timeout]() -> Result<int> {
      k8s::HttpRequest req;
      req.path = "";
      req.accept = "*/*";
      req.timeout = timeout;
      auto r = tr->Do(req);
      if (!r) return Fail(r.error());
      return static_cast<int>(r->status);
    };
  }
  return c;
}

KubeProxyChecker::KubeProxyChecker(KubeProxyCheckOptions options, const Clock& clock,
                                   std::function<void()> on_change, Probe probe)
    : options_(std::move(options)),
      clock_(clock),
      on_change_(std::move(on_change)),
      probe_(std::move(probe)),
      health_(options_.fail_count, options_.pass_count) {}

KubeProxyChecker::~KubeProxyChecker() { Stop(); }

void KubeProxyChecker::Start() {
  // Real time for the wait, as the lease keeper's: the thread paces real requests; tests drive
  // CheckOnce() with an injected probe and clock.
  worker_.StartPeriodic([this] {
    (void)CheckOnce();
    return options_.interval;
  });
}

void KubeProxyChecker::Stop() { worker_.Stop(); }

KubeProxyHealth KubeProxyChecker::health() const {
  MutexLock lock(mu_);
  return health_;
}

std::vector<KubeProxyTransition> KubeProxyChecker::TakeTransitions() {
  MutexLock lock(mu_);
  return std::exchange(pending_, {});
}

std::string KubeProxyChecker::CheckOnce() {
  auto r = probe_();
  const bool passed = r && *r == 200;
  std::string text = r ? "HTTP " + std::to_string(*r) : r.error().message();
  bool changed = false;
  {
    MutexLock lock(mu_);
    const KubeProxyState before = health_.state();
    if (auto next = health_.Record(passed, clock_.Now())) {
      pending_.push_back({before, *next, text});
      changed = true;
    }
    if (passed) {
      last_logged_.clear();
    } else if (text != last_logged_) {
      last_logged_ = text;
      log::Warn("kube-proxy health check failed",
                {{"url", options_.url},
                 {"result", text},
                 {"consecutive", std::to_string(health_.streak())}});
    }
  }
  if (changed && on_change_) on_change_();
  return text;
}

}  // namespace pylon::agent
