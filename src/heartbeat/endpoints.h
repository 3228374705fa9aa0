// Where a node listens for heartbeats, published on its node Lease so peers learn it from the
// same object that makes it a member (the lease stays the source of membership).
//
//   annotation purelb.io/heartbeat
//   value    = entry *( "," entry )
//   entry    = OWS ( ipv4 ":" port / "[" ipv6 "]" ":" port ) OWS
//   port     = 1..65535, decimal, no sign
// e.g. `192.0.2.11:7934,[2001:db8:1::11]:7934`. At most kMaxEndpoints entries are kept. A bad
// entry is skipped and reported as `entry N` (N counts every comma-separated piece, empty ones
// too, like the other annotation lists), never fatal: another node wrote it. A lease
// without the annotation (an older agent, heartbeats off) means "this node sends no heartbeats":
// its liveness comes from the lease alone.
// Pure.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/ip.h"

namespace pylon::heartbeat {

inline constexpr std::string_view kHeartbeatAnnotation = "purelb.io/heartbeat";
inline constexpr std::uint16_t kDefaultPort = 7934;
inline constexpr std::size_t kMaxEndpoints = 16;

struct Endpoint {
  net::IpAddress address;
  std::uint16_t port = kDefaultPort;
  std::string ToString() const;  // "192.0.2.11:7934" / "[2001:db8::1]:7934"
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
  friend auto operator<=>(const Endpoint& a, const Endpoint& b) {
    if (auto c = a.address <=> b.address; c != 0) return c;
    return a.port <=> b.port;
  }
};

struct ParsedEndpoints {
  std::vector<Endpoint> endpoints;  // IPv4 first, each family ascending, no duplicates
  std::vector<std::string> issues;  // `entry N "<text>": <reason>`
};

ParsedEndpoints ParseEndpoints(std::string_view value);
// The canonical value (sorted as above, deduplicated).
std::string FormatEndpoints(std::vector<Endpoint> endpoints);

}  // namespace pylon::heartbeat
