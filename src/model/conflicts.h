// Address conflicts on a Service: one annotation per address that a node found in use by a host
// outside the cluster (a duplicate-address probe answered by a foreign MAC), so the address was
// not announced. Written by the agent that probed (docs/agent.md), read by the allocator, which
// keeps such an address out of the pool for a while and gives the Service another one unless the
// Service requested that very address (docs/allocator.md).
//
//   key:   conflict.purelb.io/<address as in L2Advertisement names>
//          e.g. conflict.purelb.io/ipv4-192-0-2-225, conflict.purelb.io/ipv6-2001-db8-1-0-8000--4
//   value: <address> <mac> <node> <interface> <time>
//          e.g. "192.0.2.225 02:00:00:00:00:99 node-a eth0 2025-01-02T03:04:05Z"
// <time> is when the probe saw the answer (RFC 3339, UTC, whole seconds). One key per address,
// so the nodes that probe the addresses of one Service (one per family) never overwrite each
// other's reports with a merge patch.
// Parsing is defensive (annotations are user-editable): bad values are skipped and reported.
// Pure.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "net/ip.h"

namespace pylon::model {

inline constexpr const char* kAnnConflictPrefix = "conflict.purelb.io/";

struct AddressConflict {
  net::IpAddress address;
  std::string mac;  // lower case "aa:bb:cc:dd:ee:ff"
  std::string node;
  std::string interface;
  WallTime since{};  // whole seconds
  friend bool operator==(const AddressConflict&, const AddressConflict&) = default;
};

// The annotation key of `address` (a valid Kubernetes annotation name).
std::string ConflictAnnotationKey(const net::IpAddress& address);

Result<AddressConflict> ParseAddressConflict(std::string_view value);
std::string FormatAddressConflict(const AddressConflict& c);

struct AddressConflictsParse {
  std::vector<AddressConflict> entries;  // by key order
  std::vector<std::string> issues;
};
// Every conflict annotation among `annotations`; a value whose address is not its key's is bad.
AddressConflictsParse ParseAddressConflicts(const std::map<std::string, std::string>& annotations);

}  // namespace pylon::model
