// Duplicate-address detection in the agent, pure parts (docs/agent.md; RFC 5227, RFC 4862 DAD):
//
//  - ProbeGate decides, per pass, which local addresses wait for a probe before they are added:
//    an address this node won and is about to hold for the FIRST time (DesiredAddress::
//    first_announcement: no node is recorded as announcing it) is withheld until a probe of the
//    segment finished; one answered by a foreign MAC stays withheld (and is reported once) and is
//    probed again every `conflict_recheck`. Takeovers (a recorded announcer) are never probed: the
//    probe time would add to failover, and the dead holder's kernel still answers anyway.
//    An address proven free by a background probe shortly before (`preprobed`, probe_ahead.h) is
//    not withheld: it is added at once and one short probe (`verify`) runs in parallel; a foreign
//    answer to it withholds the address from then on (withdrawn, reported as any conflict).
//    A probe that fails to run (no CAP_NET_RAW, interface gone) lets the address through (fail
//    open, logged by the caller): losing every announcement to a local error would be worse.
//  - ClaimTracker decides which packets seen while HOLDING addresses are foreign claims worth a
//    report: sender = an address we announce, MAC = none of the cluster's nodes; one report per
//    (address, MAC) per `report_interval`, and at most one defending announcement per address per
//    `defend_interval` (RFC 5227 §2.4 (b): keep the address, broadcast one announcement).
//
// Not thread-safe (the agent loop owns both); no clock reads (times are passed in).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "net/ip.h"
#include "net/mac.h"

namespace pylon::agent {

struct ProbeTarget {
  net::IpAddress address;
  std::string interface;
  int ifindex = 0;
  friend bool operator==(const ProbeTarget&, const ProbeTarget&) = default;
};

struct ProbeResult {
  ProbeTarget target;
  std::optional<net::MacAddress> owner;  // a foreign host answered
  std::optional<std::string> error;      // the probe could not run
};

struct FoundConflict {
  net::IpAddress address;
  std::string interface;
  net::MacAddress mac;
  friend bool operator==(const FoundConflict&, const FoundConflict&) = default;
};

struct ProbeGateOptions {
  Duration conflict_recheck = std::chrono::seconds(30);
};

class ProbeGate {
 public:
  explicit ProbeGate(ProbeGateOptions options = {}) : options_(options) {}

  struct Decision {
    std::vector<ProbeTarget> start;       // probes to start now
    std::vector<ProbeTarget> verify;      // short probes of pre-probed addresses, not withheld
    std::set<net::IpAddress> withhold;    // not added this pass (probing or in conflict)
    std::vector<FoundConflict> reported;  // conflicts to report now (once per owner)
    std::vector<net::IpAddress> cleared;  // were in conflict, probed free now (clear reports)
  };
  // `candidates`: local addresses this node won and would add now for the first time (see the
  // file comment). State of addresses that are no longer candidates is dropped, except for a
  // probe still running. `preprobed` (may be null): candidates proven free recently (see the file
  // comment). Addresses being verified or in conflict must stay candidates while this node holds
  // them (Tracks).
  Decision Decide(std::span<const ProbeTarget> candidates, SteadyTime now,
                  const std::set<net::IpAddress>* preprobed = nullptr);
  // Whether a verification of a held address runs, or it is in conflict.
  bool Tracks(const net::IpAddress& address) const;
  // A probe finished (at `now`).
  void Record(const ProbeResult& result, SteadyTime now);

  // Addresses in conflict now (reported or not).
  std::vector<FoundConflict> Conflicts() const;
  // The earliest recheck of a conflicted address, if any.
  std::optional<SteadyTime> NextWakeup() const;

 private:
  enum class Phase { kProbing, kVerifying, kFree, kConflict };
  struct State {
    Phase phase = Phase::kProbing;
    ProbeTarget target;
    net::MacAddress owner;
    SteadyTime since{};
    bool reported = false;
    bool was_conflict = false;  // a conflict preceded this probe / free result
  };
  ProbeGateOptions options_;
  std::map<net::IpAddress, State> states_;
};

struct ClaimOptions {
  Duration report_interval = std::chrono::seconds(60);
  Duration defend_interval = std::chrono::seconds(10);  // RFC 5227 DEFEND_INTERVAL
  // How long a claim counts in ActiveCount() after it was last seen.
  Duration active_for = std::chrono::minutes(5);
};

// A packet seen on `ifindex` showing `mac` using `address`.
struct SeenClaim {
  net::IpAddress address;
  net::MacAddress mac;
  int ifindex = 0;
};

class ClaimTracker {
 public:
  explicit ClaimTracker(ClaimOptions options = {}) : options_(options) {}

  struct Decision {
    std::vector<SeenClaim> report;       // foreign claims to report now
    std::vector<net::IpAddress> defend;  // addresses to re-announce once now
  };
  // `held`: the local addresses this node announces; `known`: MACs of the cluster's nodes
  // (lower case). Claims of other addresses or from known MACs are ignored.
  Decision Observe(std::span<const SeenClaim> claims, const std::set<net::IpAddress>& held,
                   const std::set<std::string>& known, SteadyTime now);
  // Distinct addresses with a foreign claim seen within `active_for` of `now`.
  std::size_t ActiveCount(SteadyTime now) const;

 private:
  ClaimOptions options_;
  std::map<std::pair<net::IpAddress, net::MacAddress>, SteadyTime> last_report_;
  std::map<net::IpAddress, SteadyTime> last_defend_;
  std::map<net::IpAddress, SteadyTime> last_seen_;
};

// Where the agent loop gets claims from (ClaimMonitor; tests use a fake).
class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  // The local addresses held, by interface index. Interfaces no longer listed stop being watched.
  virtual void SetWatched(std::map<int, std::set<net::IpAddress>> by_ifindex) = 0;
  // Claims on watched addresses seen since the last call (any MAC, ours excluded).
  virtual std::vector<SeenClaim> TakeClaims() = 0;
};

}  // namespace pylon::agent
