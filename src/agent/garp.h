// Gratuitous ARP / unsolicited Neighbor Advertisement: when this node takes a local address it
// tells the segment, because the kernel does not (docs/references.md). A burst of `count`
// announcements spaced `interval` apart, the first `initial_delay` after the takeover. The
// scheduler is pure (the agent loop asks it what is due); packet::Announcer does the I/O.
//
// What the LBNodeAgent asks for (node_agent_policy.h): purelb.io/v1 `sendgarp: false` means ONE
// announcement per takeover (without one, clients keep the failed node's MAC until their
// neighbour entry goes stale, tens of seconds), `true` (and no LBNodeAgent) the full burst. A
// purelb.io/v2 object without `garpConfig`, or with `enabled: false`, means none at all (count 0:
// Schedule does nothing), as PureLB v2.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "net/ip.h"

namespace pylon::agent {

struct GarpOptions {
  int count = 3;  // 0: nothing is ever sent
  Duration interval = std::chrono::milliseconds(300);
  Duration initial_delay{0};
  friend bool operator==(const GarpOptions&, const GarpOptions&) = default;
};

class GarpScheduler {
 public:
  explicit GarpScheduler(GarpOptions options = {}) : options_(options) {}

  struct Due {
    std::string interface;
    int ifindex = 0;
    net::IpAddress address;
  };
  // Starts (or restarts) a burst for `address`, first one due at `now` + initial_delay.
  void Schedule(const std::string& interface, int ifindex, const net::IpAddress& address,
                SteadyTime now);
  void Cancel(const net::IpAddress& address);
  // The announcements due at `now`; each burst advances by one.
  std::vector<Due> TakeDue(SteadyTime now);
  std::optional<SteadyTime> NextDue() const;
  void set_options(GarpOptions options) { options_ = options; }
  const GarpOptions& options() const { return options_; }

 private:
  struct Burst {
    Due what;
    int remaining = 0;
    SteadyTime next{};
  };
  GarpOptions options_;
  std::map<net::IpAddress, Burst> bursts_;
};

}  // namespace pylon::agent
