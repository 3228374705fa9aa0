#include "pool/pools.h"

#include <algorithm>
#include <set>
#include <string_view>

namespace pylon::pool {

Status ValidatePools(std::span<const PoolDefinition> pools) {
  struct Placed {
    net::AddressRange range;
    std::string_view pool;
  };
  std::set<std::string_view> keys;
  std::vector<Placed> placed;
  for (const auto& p : pools) {
    if (p.key.empty()) return Fail(ErrorCode::kInvalidArgument, "pool with an empty key");
    if (!keys.insert(p.key).second) {
      return Fail(ErrorCode::kInvalidArgument, "pool \"" + p.key + "\" is defined twice");
    }
    for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
      for (const auto& r : p.Ranges(f)) {
        if (r.family() != f) {
          return Fail(ErrorCode::kInvalidArgument, "pool \"" + p.key + "\": range " + r.ToString() +
                                                       " listed as " +
                                                       std::string(net::FamilyName(f)));
        }
        placed.push_back({r, p.key});
      }
    }
  }
  std::sort(placed.begin(), placed.end(),
            [](const Placed& a, const Placed& b) { return a.range.first() < b.range.first(); });
  for (std::size_t i = 1; i < placed.size(); ++i) {
    const auto& a = placed[i - 1];
    const auto& b = placed[i];
    if (a.range.Overlaps(b.range)) {
      std::string where = a.pool == b.pool ? "pool \"" + std::string(a.pool) + "\""
                                           : "pools \"" + std::string(a.pool) + "\" and \"" +
                                                 std::string(b.pool) + "\"";
      return Fail(ErrorCode::kInvalidArgument, "ranges " + a.range.ToString() + " and " +
                                                   b.range.ToString() + " overlap in " + where);
    }
  }
  return Ok();
}

net::Uint128 TotalSize(std::span<const net::AddressRange> ranges) {
  const net::Uint128 max = ~net::Uint128{0};
  net::Uint128 total = 0;
  for (const auto& r : ranges) {
    const net::Uint128 s = r.Size();
    total = (max - total < s) ? max : total + s;
  }
  return total;
}

std::string DescribeRanges(std::span<const net::AddressRange> ranges) {
  std::string out;
  for (const auto& r : ranges) {
    if (!out.empty()) out += ", ";
    out += r.ToString();
  }
  return out.empty() ? "none" : out;
}

}  // namespace pylon::pool
