// Property test of the cross-object validator against an independent oracle: IPv4 groups drawn
// from one /24 (so they overlap often), address sets as bitsets, accepted greedily oldest first.
#include <bitset>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "config/validate.h"
#include "test_objects.h"

namespace pylon::config {
namespace {

using Bits = std::bitset<256>;

struct PoolDraw {
  bool cidr = false;
  int a = 0, b = 0;  // range a-b, or CIDR 10.0.0.a/b
  std::string Text() const {
    if (cidr) return "10.0.0." + std::to_string(a) + "/" + std::to_string(b);
    return "10.0.0." + std::to_string(a) + "-10.0.0." + std::to_string(b);
  }
  // Allocatable addresses (subnet 10.0.0.0/24: .0 and .255 excluded); nullopt if invalid.
  std::optional<Bits> Addresses() const {
    int first = a, last = b;
    if (cidr) {
      int host = 32 - b;
      last = a | ((1 << host) - 1);
    }
    if (first > last) return std::nullopt;
    Bits out;
    for (int i = first; i <= last; ++i) out.set(static_cast<std::size_t>(i));
    out.reset(0);
    out.reset(255);
    if (out.none()) return std::nullopt;
    return out;
  }
};

struct GroupDraw {
  std::string name;
  int day = 1;
  std::vector<PoolDraw> pools;

  nlohmann::json Json(int generation = 1) const {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : pools) list.push_back({{"pool", p.Text()}, {"subnet", "10.0.0.0/24"}});
    return testing::ServiceGroup(name, {{"v4pools", list}},
                                 "2024-01-0" + std::to_string(day) + "T00:00:00Z", generation);
  }
  // All addresses if every pool is valid and none overlaps another of the group.
  std::optional<Bits> Addresses() const {
    Bits all;
    for (const auto& p : pools) {
      auto bits = p.Addresses();
      if (!bits || (all & *bits).any()) return std::nullopt;
      all |= *bits;
    }
    return all;
  }
};

rc::Gen<PoolDraw> GenPool() {
  return rc::gen::apply(
      [](bool cidr, int a, int b, int len) {
        PoolDraw p;
        p.cidr = cidr;
        p.a = a;
        p.b = cidr ? len : b;
        return p;
      },
      rc::gen::arbitrary<bool>(), rc::gen::inRange(0, 256), rc::gen::inRange(0, 256),
      rc::gen::inRange(24, 33));
}

rc::Gen<std::vector<GroupDraw>> GenGroups() {
  return rc::gen::mapcat(rc::gen::inRange(1, 8), [](int n) {
    return rc::gen::container<std::vector<GroupDraw>>(
        static_cast<std::size_t>(n),
        rc::gen::apply(
            [](int day, std::vector<PoolDraw> pools) {
              GroupDraw g;
              g.day = day;
              g.pools = std::move(pools);
              return g;
            },
            rc::gen::inRange(1, 6), rc::gen::mapcat(rc::gen::inRange(1, 4), [](int k) {
              return rc::gen::container<std::vector<PoolDraw>>(static_cast<std::size_t>(k),
                                                               GenPool());
            })));
  });
}

Bits InForceBits(const Group& g) {
  Bits out;
  for (const auto& r : g.Ranges(net::Family::kV4)) {
    for (auto v = r.first().value(); v <= r.last().value(); ++v) {
      out.set(static_cast<std::size_t>(v & 0xff));
    }
  }
  return out;
}

RC_GTEST_PROP(ValidateProperty, MatchesGreedyOldestFirstOracle, ()) {
  auto groups = *GenGroups();
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i].name = "g" + std::to_string(i);
  std::vector<nlohmann::json> objs;
  for (const auto& g : groups) objs.push_back(g.Json());

  auto r = ValidateConfig(objs, InForceConfig{});
  RC_ASSERT(r.statuses.size() == groups.size());

  // Oracle: oldest first (day, then name), accept when valid and disjoint from the accepted.
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::tie(groups[x].day, groups[x].name) < std::tie(groups[y].day, groups[y].name);
  });
  Bits taken;
  std::map<std::size_t, Bits> accepted;
  for (std::size_t i : order) {
    auto bits = groups[i].Addresses();
    if (bits && (taken & *bits).none()) {
      taken |= *bits;
      accepted[i] = *bits;
    }
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const bool want = accepted.count(i) > 0;
    RC_ASSERT(r.statuses[i].valid == want);
    const Group* g = r.config.Find(r.statuses[i].key);
    RC_ASSERT((g != nullptr) == want);
    if (want) {
      RC_ASSERT(InForceBits(*g) == accepted[i]);
      RC_ASSERT(r.statuses[i].size_v4 == accepted[i].count());
    }
  }

  // Round 2: every group edited to one drawn afresh. Whatever was in force keeps some version
  // in force, in-force groups stay disjoint, and a rejected edit leaves the old version.
  auto edits = *GenGroups();
  std::vector<nlohmann::json> objs2;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    GroupDraw g = groups[i];
    if (i < edits.size()) g.pools = edits[i].pools;
    objs2.push_back(g.Json(2));
  }
  auto r2 = ValidateConfig(objs2, r.config);
  Bits all;
  for (const auto& [key, g] : r2.config.groups()) {
    Bits b = InForceBits(g);
    RC_ASSERT((all & b).none());
    all |= b;
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& s = r2.statuses[i];
    if (r.statuses[i].valid) {
      RC_ASSERT(s.in_force_generation.has_value());
      if (!s.valid) RC_ASSERT(*s.in_force_generation == 1);
    }
    if (s.valid) RC_ASSERT(s.in_force_generation == std::optional<std::int64_t>(2));
  }
}

}  // namespace
}  // namespace pylon::config
