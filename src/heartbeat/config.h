// Configuration of the heartbeat failure detector. `pylon agent` declares a flag for each setting,
// with its variable as the flag's default (agent/options.cc):
//
//   flag                      environment                      default
//   --heartbeat-key-file F    PYLON_HEARTBEAT_KEY_FILE         (none)
//   --heartbeat-key-secret S  PYLON_HEARTBEAT_KEY_SECRET       (none; the manifests set
//                                                              pylon-heartbeat-key)
//   --heartbeat-interval D    PYLON_HEARTBEAT_INTERVAL         100ms   (10ms..10s)
//   --heartbeat-miss-count N  PYLON_HEARTBEAT_MISS_COUNT       3       (2..20)
//   --heartbeat-port P        PYLON_HEARTBEAT_PORT             7934
//   --heartbeat-interface I   PYLON_HEARTBEAT_INTERFACE        (the announcing interface)
// Flags override the environment. The key comes from the key file when one is given, else from the
// Secret named by the key secret (created with a random key when absent, agent/heartbeat_key.h).
// Neither (an explicit "" secret): heartbeats are off and the agent behaves exactly as with leases
// alone (failover after the lease duration; addresses withdrawn when renewals fail for
// RENEW_DEADLINE). A key file that is given but missing or invalid, or a Secret that cannot be read
// or created, is an error at start: a typo must not silently turn fast failover off.
// The settings and their range checks; no I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/result.h"

namespace pylon::heartbeat {

struct HeartbeatConfig {
  std::string key_file;
  std::string key_secret;  // a Secret's name in the agent's namespace
  Duration interval = std::chrono::milliseconds(100);
  int miss_count = 3;
  std::uint16_t port = 7934;
  std::string interface;  // empty: the interface the agent announces on
  // Datagrams stay below this many bytes (no IP fragmentation on a 1500-byte MTU); longer
  // address lists are sent in rotating windows flagged kPartialAddresses.
  std::size_t max_datagram_bytes = 1400;

  bool enabled() const { return !key_file.empty() || !key_secret.empty(); }
  // How long a silent peer stays alive: miss_count x interval.
  Duration bound() const { return interval * miss_count; }
};

// Range checks (see the table above).
Status ValidateHeartbeatConfig(const HeartbeatConfig& config);

}  // namespace pylon::heartbeat
