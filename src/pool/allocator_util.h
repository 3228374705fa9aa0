// Small helpers the pool::Allocator files share (allocator.cc, allocator_multi.cc,
// allocator_rebuild.cc). Internal to the pool module. Pure.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "net/ip.h"

namespace pylon::pool::detail {

inline bool InRanges(const std::vector<net::AddressRange>& ranges, const net::IpAddress& a) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const net::AddressRange& r) { return r.Contains(a); });
}

inline std::string Quote(const std::string& s) { return "\"" + s + "\""; }

inline std::string FamilyText(net::Family f) { return std::string(net::FamilyName(f)); }

// a - b, keeping a's order.
inline std::vector<net::IpAddress> Minus(const std::vector<net::IpAddress>& a,
                                         const std::vector<net::IpAddress>& b) {
  std::vector<net::IpAddress> out;
  for (const auto& x : a) {
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  }
  return out;
}

}  // namespace pylon::pool::detail
