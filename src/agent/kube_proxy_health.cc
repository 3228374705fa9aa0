#include "agent/kube_proxy_health.h"

#include <algorithm>

namespace pylon::agent {

Status ValidateKubeProxyCheck(const KubeProxyCheckOptions& o) {
  using std::chrono::milliseconds;
  if (o.url.rfind("http://", 0) != 0 && o.url.rfind("https://", 0) != 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "--kube-proxy-healthz \"" + o.url + "\": want an http:// or https:// URL");
  }
  if (o.interval < milliseconds(100) || o.interval > std::chrono::minutes(1)) {
    return Fail(ErrorCode::kInvalidArgument, "--kube-proxy-check-interval: want 100ms..1m");
  }
  if (o.timeout < milliseconds(10) || o.timeout > o.interval) {
    return Fail(ErrorCode::kInvalidArgument,
                "--kube-proxy-check-timeout: want 10ms up to the check interval");
  }
  if (o.fail_count < 1 || o.fail_count > 20) {
    return Fail(ErrorCode::kInvalidArgument, "--kube-proxy-fail-count: want 1..20");
  }
  if (o.pass_count < 1 || o.pass_count > 20) {
    return Fail(ErrorCode::kInvalidArgument, "--kube-proxy-pass-count: want 1..20");
  }
  return Ok();
}

std::string_view KubeProxyStateName(KubeProxyState s) {
  switch (s) {
    case KubeProxyState::kUnknown:
      return "unknown";
    case KubeProxyState::kHealthy:
      return "healthy";
    case KubeProxyState::kUnhealthy:
      return "unhealthy";
  }
  return "unknown";
}

KubeProxyHealth::KubeProxyHealth(int fail_count, int pass_count)
    : fail_count_(std::max(1, fail_count)), pass_count_(std::max(1, pass_count)) {}

std::optional<KubeProxyState> KubeProxyHealth::Record(bool passed, SteadyTime at) {
  if (streak_ > 0 && passed == last_passed_) {
    if (streak_ < 1000000) ++streak_;
  } else {
    streak_ = 1;
    last_passed_ = passed;
  }
  KubeProxyState next = state_;
  if (passed && state_ != KubeProxyState::kHealthy && streak_ >= pass_count_) {
    next = KubeProxyState::kHealthy;
  } else if (!passed && state_ != KubeProxyState::kUnhealthy && streak_ >= fail_count_) {
    next = KubeProxyState::kUnhealthy;
  }
  if (next == state_) return std::nullopt;
  state_ = next;
  since_ = at;
  return next;
}

}  // namespace pylon::agent
