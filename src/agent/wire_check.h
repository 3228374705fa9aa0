// The successor's wire checks (takeover.h) as the agent loop sees them: it starts a check and
// picks its result up on a later pass (ThreadWireChecker in worker_threads.h runs them off the
// loop). One check: one ARP probe (IPv4) or DAD NS (IPv6) for the address from this
// node's interface, answers collected for `arp_wait`; if one of the holder's MACs answered and a
// kube-proxy URL is given, one GET of it with `http_timeout` (200 = passes).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/takeover.h"
#include "common/result.h"
#include "packet/announcer.h"

namespace pylon::agent {

class WireChecker {
 public:
  virtual ~WireChecker() = default;
  // Never waits for the check; `own_mac` is the MAC of job.interface. Thread: the agent loop.
  virtual void Start(WireCheckJob job, net::MacAddress own_mac) = 0;
  // The checks finished since the last call. Thread: the agent loop.
  virtual std::vector<WireCheckResult> TakeResults() = 0;
};

// One GET of `url` with `timeout`: the HTTP status, or the transport error.
using HttpStatusFn = std::function<Result<int>(const std::string& url, Duration timeout)>;

struct WireCheckOptions {
  std::chrono::milliseconds arp_wait{50};
  Duration http_timeout = std::chrono::milliseconds(100);
};

// One check, blocking for at most arp_wait + http_timeout (shared by the checkers).
WireCheckResult RunWireCheck(packet::Announcer& announcer, const HttpStatusFn& http,
                             const WireCheckJob& job, net::MacAddress own_mac,
                             const WireCheckOptions& options);

// Checks run in parallel: a silent holder's addresses are each checked by listening 50 ms, so 32
// workers check 64 of them within about 100 ms (one heartbeat bound is 300 ms). A worker is a
// thread blocked on a condition variable while idle; a check opens its own packet socket.
inline constexpr int kWireCheckWorkers = 32;

}  // namespace pylon::agent
