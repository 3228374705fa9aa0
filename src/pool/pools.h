// Pool definitions as the allocator takes them: plain ranges, already parsed by src/config.
// Pure.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/ip.h"

namespace pylon::pool {

struct PoolDefinition {
  // Opaque, unique, non-empty, e.g. "ServiceGroup purelb-system/localdual" or
  // "LoadBalancerClass public". Also used in messages.
  std::string key;
  // Per family, tried in order: allocation falls through to the next range only when the
  // earlier ones are full.
  std::vector<net::AddressRange> v4;
  std::vector<net::AddressRange> v6;
  // PureLB v2 balancePools: a new address comes from the range with the fewest addresses in
  // use (ties: the earlier range), not from the first range with a free address.
  bool balance = false;

  const std::vector<net::AddressRange>& Ranges(net::Family f) const {
    return f == net::Family::kV4 ? v4 : v6;
  }
};

// kInvalidArgument unless: keys are non-empty and unique; every range is of its list's family;
// no two ranges overlap, within a pool or across pools (so every address belongs to at most
// one pool). The message names the pools and ranges at fault.
Status ValidatePools(std::span<const PoolDefinition> pools);

// Exact number of addresses in the ranges (sum of sizes; ranges are disjoint). Saturates at
// 2^128-1, which only the whole IPv6 space reaches.
net::Uint128 TotalSize(std::span<const net::AddressRange> ranges);

// "a-b, c-d" for messages.
std::string DescribeRanges(std::span<const net::AddressRange> ranges);

}  // namespace pylon::pool
