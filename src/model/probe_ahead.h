// What a node found when it probed pool addresses ahead of any Service (docs/agent.md
// "Probe ahead"): published by the probing agent on its own node lease, read by the other agents
// (an address proven free is announced at once by whichever node wins it) and by the allocator (an
// address found taken is never handed out and is named on its pool's status).
//
//   key:   purelb.io/probe-ahead (on the lease purelb-node-<node>)
//   value: comma-separated entries, each "<address> free <time>" or "<address> taken <mac> <time>"
//          e.g. "192.0.2.226 free 2025-01-02T03:04:05Z,192.0.2.225 taken 02:00:00:00:00:99
//          2025-01-02T03:04:00Z"
// <time> (RFC 3339, UTC, whole seconds) is when the current verdict was first seen: the address
// has been free (resp. taken) at every probe since. The node re-probes what it lists while it is
// live; a consumer trusts a "free" entry only while the lease is live. Parsing is defensive (a
// lease annotation can be edited): bad entries are skipped and reported. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "net/ip.h"

namespace pylon::model {

inline constexpr const char* kAnnProbeAhead = "purelb.io/probe-ahead";

struct ProbedAddress {
  net::IpAddress address;
  bool taken = false;
  std::string mac;  // lower case, when taken
  WallTime since{};
  friend bool operator==(const ProbedAddress&, const ProbedAddress&) = default;
};

struct ProbeAheadParse {
  std::vector<ProbedAddress> entries;  // as written
  std::vector<std::string> issues;
};
ProbeAheadParse ParseProbeAhead(std::string_view value);
// Entries in the given order; "" for none.
std::string FormatProbeAhead(const std::vector<ProbedAddress>& entries);

}  // namespace pylon::model
