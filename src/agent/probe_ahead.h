// Probe ahead (docs/agent.md "Probe ahead"), the pure part: which pool addresses this node probes
// in the background, when, and what it found.
//
// The allocator publishes, per ServiceGroup and family, the next few addresses its next-fit order
// will hand out (status.probeAhead). Each is probed by one node: the node the election would pick
// for it (same hash, same live members on its subnet: election::Elector), which is also the node
// that will announce it in the common case. That node probes it (RFC 5227 / RFC 4862 DAD, the full
// probe) in the background at a bounded rate, re-probes it every `refresh`, and publishes what it
// found on its lease (model/probe_ahead.h). When a Service then gets the address, its winner
// announces at once if the address was proven free within `fresh_for` (ProbeGate's pre-probed
// path: one short probe runs in parallel); a found-taken address is skipped by the allocator.
//
// ProbeAhead keeps the per-address state: free / taken / never probed, a token bucket bounding the
// probes started (`rate` per second, `burst` at once), and the counters the metrics show. A taken
// address stays listed for `taken_hold` after its last taken verdict even once it is no longer a
// target (the allocator stops offering it because this node lists it), and is re-probed every
// `taken_recheck` while it is still a target.
//
// Not thread-safe (the agent loop owns it); no clock reads (times are passed in).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "agent/conflicts.h"
#include "common/clock.h"
#include "model/probe_ahead.h"
#include "net/ip.h"

namespace pylon::agent {

struct ProbeAheadOptions {
  Duration refresh = std::chrono::seconds(10);    // a free address is probed again this often
  Duration fresh_for = std::chrono::seconds(30);  // a free verdict counts as pre-probed this long
  double rate = 4;                                // probes started per second at most
  int burst = 4;                                  // ... and at once
  Duration taken_recheck = std::chrono::seconds(30);
  Duration taken_hold = std::chrono::minutes(5);
};

class ProbeAhead {
 public:
  explicit ProbeAhead(ProbeAheadOptions options = {}) : options_(options) {}

  // The addresses this node is elected to probe ahead now, with their interface. State of
  // addresses that are no longer targets is dropped, except taken ones (kept `taken_hold`), free
  // ones while fresh (a Service just got it: its winner asks Fresh; no longer published nor
  // re-probed) and probes still running.
  void SetTargets(std::span<const ProbeTarget> targets, SteadyTime now);
  // The probes to start now (never probed first, then the least recently probed), within the
  // rate; each is marked running until Record.
  std::vector<ProbeTarget> Due(SteadyTime now);
  // A background probe finished. An error leaves the address unproven (tried again at the next
  // refresh).
  void Record(const ProbeResult& result, SteadyTime now, WallTime wall);

  // Proven free within `fresh_for`, on `interface` (the interface its winner would add it on).
  bool Fresh(const net::IpAddress& address, const std::string& interface, SteadyTime now) const;
  // Addresses proven free within `fresh_for`.
  std::set<net::IpAddress> FreshAddresses(SteadyTime now) const;
  // What to publish (model/probe_ahead.h): fresh free targets and held taken ones, by address.
  std::vector<model::ProbedAddress> Published(SteadyTime now) const;
  // Taken addresses still listed (so the caller keeps electing them).
  std::vector<ProbeTarget> Taken() const;
  // The earliest instant a probe falls due (or a token for one), if any.
  std::optional<SteadyTime> NextWakeup(SteadyTime now) const;

  std::uint64_t probes_started() const { return probes_started_; }
  std::uint64_t conflicts_found() const { return conflicts_found_; }

 private:
  enum class Verdict { kNone, kFree, kTaken };
  struct State {
    ProbeTarget target;
    Verdict verdict = Verdict::kNone;
    bool running = false;
    bool target_now = true;
    SteadyTime last_probe{};  // last result (any verdict)
    SteadyTime verdict_at{};  // last result that gave the verdict
    WallTime since{};         // first result of the current verdict (published)
    std::string mac;          // taken
  };
  SteadyTime DueAt(const State& s) const;
  void Refill(SteadyTime now);

  ProbeAheadOptions options_;
  std::map<net::IpAddress, State> states_;
  double tokens_ = -1;  // < 0: full at the first call
  SteadyTime refilled_{};
  std::uint64_t probes_started_ = 0;
  std::uint64_t conflicts_found_ = 0;
};

}  // namespace pylon::agent
