// Eligibility from this node's kube-proxy: a node whose kube-proxy cannot serve (not running, or
// its /healthz failing: what cloud load balancers probe on the same port) must not win a local
// address. This is the pure decision: consecutive check results in, a three-state verdict out,
// with hysteresis so that one slow or failed answer does not move addresses.
//
//  - kUnknown at start (no verdict yet): not eligible. `pass_count` consecutive passes make it
//    kHealthy; `fail_count` consecutive failures make it kUnhealthy.
//  - kHealthy: eligible. `fail_count` consecutive failures (a timeout is a failure) make it
//    kUnhealthy; a pass in between starts the count again.
//  - kUnhealthy: not eligible. `pass_count` consecutive passes make it kHealthy.
//
// The agent leaves the election while not eligible (docs/agent.md "kube-proxy health"): it
// withdraws its local addresses and releases its node lease (holderIdentity ""), so peers re-elect
// at once; it takes its lease back when eligible again.
//
// Pure: the time of each result is passed in (the adapter's injected clock). Not thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace pylon::agent {

struct KubeProxyCheckOptions {
  bool enabled = true;                                 // --kube-proxy-check on|off
  std::string url = "http://127.0.0.1:10256/healthz";  // --kube-proxy-healthz
  Duration interval = std::chrono::seconds(1);         // --kube-proxy-check-interval
  Duration timeout = std::chrono::seconds(1);          // --kube-proxy-check-timeout (per request)
  int fail_count = 3;                                  // --kube-proxy-fail-count: to leave
  int pass_count = 2;                                  // --kube-proxy-pass-count: to return
};

// url http:// or https://; interval 100ms..1m; timeout 10ms..interval; counts 1..20.
Status ValidateKubeProxyCheck(const KubeProxyCheckOptions& o);

enum class KubeProxyState { kUnknown, kHealthy, kUnhealthy };
std::string_view KubeProxyStateName(KubeProxyState s);  // unknown|healthy|unhealthy

class KubeProxyHealth {
 public:
  KubeProxyHealth(int fail_count, int pass_count);

  // One check's outcome at `at`. Returns the new state when this result changed it.
  std::optional<KubeProxyState> Record(bool passed, SteadyTime at);

  KubeProxyState state() const { return state_; }
  bool eligible() const { return state_ == KubeProxyState::kHealthy; }
  // When the current state began (nullopt: kUnknown since start).
  std::optional<SteadyTime> since() const { return since_; }
  // The current run of equal results (passes when the last result passed, else failures).
  int streak() const { return streak_; }

 private:
  int fail_count_;
  int pass_count_;
  KubeProxyState state_ = KubeProxyState::kUnknown;
  std::optional<SteadyTime> since_;
  bool last_passed_ = false;
  int streak_ = 0;
};

}  // namespace pylon::agent
