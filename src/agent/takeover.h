// The successor's wire check (docs/failover.md "A killed agent"), pure part: before this node
// takes over a local address whose recorded announcer (the holder) is another node, it asks the
// wire whether the holder still carries the address's traffic. An agent that died or restarts
// leaves its node up: the node's kernel keeps the address until its valid lifetime ends and
// answers ARP / NS for it, and kube-proxy keeps serving what arrives. Taking the address then
// would make two nodes answer and reset every connection twice; leaving it loses nothing.
//
// Per candidate address, from what this node knows of the holder (HolderSigns):
//  - the holder left in good order or was never a member (lease deleted, heartbeat "leaving",
//    excluded as being deleted or ToBeDeletedByClusterAutoscaler): take it at once (planned);
//  - otherwise the holder fell silent (crash, freeze, restart, lease expired), or released its
//    lease (not eligible: its kube-proxy fails, or a restarted agent whose kube-proxy check has
//    not passed yet; reason kube-proxy): one wire check
//    (WireCheckJob: one ARP probe / DAD NS for the address, then, if the holder's MAC answered,
//    a GET of the holder's kube-proxy /healthz). The address is withheld while a check runs.
//    The holder still answers with its own MAC, and its kube-proxy passes (or it said it is
//    restarting, HolderSigns::restarting): DEFER, and check again every `recheck`, until the
//    holder's agent comes back (then the election gives the address back to it and it stops
//    being a candidate) or nobody answers any more (its lifetime ended: two checks in a row, the
//    second at once, then take it over), and at the latest until last sign of life + lifetime +
//    margin (then take it over anyway). Anything else (nobody answers, another MAC answers,
//    kube-proxy fails, the check could not run, no MAC or kube-proxy address known for the holder):
//    take it at once, as before this gate existed. A frozen or powered-off node does not answer
//    ARP: no delay beyond the check itself (one probe interval).
//
// Pure: no clock reads (times are passed in), no I/O (the agent's WireChecker runs the checks).
// Not thread-safe (the agent loop owns it).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/types.h"
#include "common/clock.h"
#include "net/ip.h"
#include "net/mac.h"

namespace pylon::agent {

// Why an address moved to this node (purelb_address_moves_total{reason}; the AddressMoved event).
enum class MoveReason : std::uint8_t {
  kCrash,           // the holder fell silent and its node no longer carries the address
  kRestartAdopted,  // a restarted agent kept what its predecessor held (not a move)
  kPlanned,         // the holder left in good order (lease deleted, leaving, excluded)
  kKubeProxy,       // the holder is not eligible: its kube-proxy fails
  kElection,        // the holder is alive: an election input changed (endpoints, affinity)
};
inline constexpr MoveReason kMoveReasons[] = {MoveReason::kCrash, MoveReason::kRestartAdopted,
                                              MoveReason::kPlanned, MoveReason::kKubeProxy,
                                              MoveReason::kElection};
std::string_view MoveReasonName(MoveReason r);  // crash|restart-adopted|planned|kube-proxy|election

// What this node knows about the node recorded as announcing an address (the holder).
struct HolderSigns {
  bool member = false;      // its lease exists
  bool released = false;    // its lease names no holder (not eligible)
  bool live = false;        // live in this node's membership (lease and heartbeats)
  bool leaving = false;     // its last heartbeat said "leaving" (graceful stop)
  bool excluded = false;    // being deleted or marked for removal
  bool restarting = false;  // its lease says its agent is restarting (purelb.io/restarting)
  // The last sign of life seen here: its last heartbeat, or its lease's last renewal.
  std::optional<SteadyTime> last_alive;
  std::vector<net::MacAddress> macs;  // its announcing interfaces (purelb.io/macs)
  std::string kube_proxy_url;         // its kube-proxy /healthz; "" = cannot be checked
  // Its addresses on the segments (its heartbeat endpoints, purelb.io/heartbeat): where the drain
  // of a planned move sends the flows it still carries (drain.h). Empty: heartbeats off.
  std::vector<net::IpAddress> addresses;
};

// A takeover the planner wants now: a local address this node won, does not hold, and another
// node is recorded as announcing.
struct TakeoverCandidate {
  net::IpAddress address;
  std::string interface;
  int ifindex = 0;
  NodeName holder;
};

struct WireCheckJob {
  net::IpAddress address;
  std::string interface;
  int ifindex = 0;
  NodeName holder;
  std::vector<net::MacAddress> holder_macs;
  std::string kube_proxy_url;  // "" = do not check
  friend bool operator==(const WireCheckJob&, const WireCheckJob&) = default;
};

struct WireCheckResult {
  net::IpAddress address;
  NodeName holder;
  bool holder_answers = false;  // one of holder_macs answered the probe
  std::optional<net::MacAddress> answered_by;
  bool kube_proxy_ok = false;  // its /healthz answered 200 (checked only if holder_answers)
  std::string detail;          // for logs: "no answer", "HTTP 503", an error...
};

struct TakeoverGateOptions {
  Duration lifetime = std::chrono::seconds(10);  // the holder's address valid lifetime
  Duration recheck = std::chrono::milliseconds(200);
  // Past the lifetime: the kernel removes an expired address up to ~250 ms late (docs/failover.md).
  Duration margin = std::chrono::seconds(1);
};

class TakeoverGate {
 public:
  explicit TakeoverGate(TakeoverGateOptions options = {}) : options_(options) {}

  struct Deferral {
    net::IpAddress address;
    NodeName holder;
    SteadyTime until;
    std::string why;
  };
  struct Decision {
    std::vector<WireCheckJob> start;               // checks to run now
    std::set<net::IpAddress> withhold;             // not taken this pass
    std::vector<Deferral> deferred;                // newly deferred (log once per episode)
    std::map<net::IpAddress, MoveReason> allowed;  // taken this pass, and why
  };
  // `candidates` of this pass; `holders` by node name (a holder missing there is treated as
  // not a member). State of addresses that are no longer candidates is dropped.
  Decision Decide(const std::vector<TakeoverCandidate>& candidates,
                  const std::map<NodeName, HolderSigns>& holders, SteadyTime now);
  // A check finished (at `now`). Results of a check no longer wanted are dropped.
  void Record(const WireCheckResult& result, SteadyTime now);
  // When the next recheck or deadline is due, if any address is deferred.
  std::optional<SteadyTime> NextWakeup() const;
  void set_options(const TakeoverGateOptions& o) { options_ = o; }

 private:
  struct State {
    NodeName holder;
    SteadyTime first_seen{};
    bool in_flight = false;
    std::optional<WireCheckResult> result;
    SteadyTime result_at{};
    bool deferred_reported = false;
    int misses = 0;  // checks in a row without the holder's answer since it was deferred to
    std::optional<SteadyTime> deadline;
  };
  TakeoverGateOptions options_;
  std::map<net::IpAddress, State> states_;
};

// The reason of a move from `holder` (nullptr: unknown, not a member), when no wire check ran
// (the gate is off, or the holder needs none).
MoveReason ClassifyMove(const HolderSigns* holder);

}  // namespace pylon::agent
