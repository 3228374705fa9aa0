// Watches the segment for other hosts claiming an address this node announces (RFC 5227 §2.4):
// a thread listens (packet::ClaimListener: every ARP packet, ICMPv6 NS/NA only) on each
// interface that holds local addresses and queues the claims on those addresses; the agent loop
// takes them and decides (ClaimTracker) what is foreign and what to report. Needs CAP_NET_RAW; a
// listener that cannot be opened is logged once and retried every few seconds.
//
// Threading: SetWatched / TakeClaims from any thread; one internal thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "agent/conflicts.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/worker.h"
#include "net/ip.h"

namespace pylon::agent {

class ClaimMonitor final : public ClaimSource {
 public:
  // `on_claim` (may be empty) is called from the monitor thread when claims were queued.
  ClaimMonitor(const Clock& clock, std::function<void()> on_claim);
  ~ClaimMonitor();
  ClaimMonitor(const ClaimMonitor&) = delete;
  ClaimMonitor& operator=(const ClaimMonitor&) = delete;

  void Start();
  void Stop();
  void SetWatched(std::map<int, std::set<net::IpAddress>> by_ifindex) override;
  std::vector<SeenClaim> TakeClaims() override;

 private:
  void Run();

  const Clock& clock_;
  std::function<void()> on_claim_;
  Mutex mu_;
  std::map<int, std::set<net::IpAddress>> watched_ PYLON_GUARDED_BY(mu_);
  std::vector<SeenClaim> claims_ PYLON_GUARDED_BY(mu_);
  Worker worker_;  // Run (last: stops first)
};

}  // namespace pylon::agent
