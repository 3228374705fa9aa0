#include "pool/occupancy.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace pylon::pool {
namespace {

using V = net::Uint128;
constexpr V kMax = ~V{0};

TEST(Occupancy, MergesAndSplitsIntervals) {
  Occupancy o;
  EXPECT_TRUE(o.Insert(5));
  EXPECT_FALSE(o.Insert(5));
  EXPECT_TRUE(o.Insert(7));
  EXPECT_EQ(o.interval_count(), 2u);
  EXPECT_TRUE(o.Insert(6));  // joins [5,5] and [7,7]
  EXPECT_EQ(o.interval_count(), 1u);
  EXPECT_TRUE(o.Insert(4));
  EXPECT_TRUE(o.Insert(8));
  EXPECT_EQ(o.interval_count(), 1u);
  EXPECT_TRUE(o.Erase(6));  // splits [4,8]
  EXPECT_EQ(o.interval_count(), 2u);
  EXPECT_FALSE(o.Erase(6));
  EXPECT_TRUE(o.Erase(4));
  EXPECT_TRUE(o.Erase(8));
  EXPECT_TRUE(o.Contains(5));
  EXPECT_TRUE(o.Contains(7));
  EXPECT_FALSE(o.Contains(4));
  EXPECT_FALSE(o.Contains(6));
  EXPECT_FALSE(o.Contains(8));
}

TEST(Occupancy, FirstFreeSkipsARunInOneStep) {
  Occupancy o;
  for (V v = 10; v < 1010; ++v) o.Insert(v);
  EXPECT_EQ(o.interval_count(), 1u);
  struct Row {
    V from, last;
    std::optional<V> want;
  };
  const Row rows[] = {
      {0, 100, V{0}},       {10, 2000, V{1010}},        {500, 1009, std::nullopt},
      {500, 1010, V{1010}}, {1009, 1009, std::nullopt}, {1010, 1010, V{1010}},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(o.FirstFree(r.from, r.last), r.want)
        << net::ToDecimal(r.from) << ".." << net::ToDecimal(r.last);
  }
  EXPECT_EQ(o.LastOccupied(0, 5000), V{1009});
  EXPECT_EQ(o.LastOccupied(0, 500), V{500});
  EXPECT_EQ(o.LastOccupied(1010, 5000), std::nullopt);
  EXPECT_EQ(o.LastOccupied(0, 9), std::nullopt);
}

TEST(Occupancy, HandlesTheEdgesOf128Bits) {
  Occupancy o;
  EXPECT_TRUE(o.Insert(kMax));
  EXPECT_TRUE(o.Insert(kMax - 1));
  EXPECT_TRUE(o.Insert(0));
  EXPECT_EQ(o.interval_count(), 2u);
  EXPECT_EQ(o.FirstFree(kMax - 1, kMax), std::nullopt);
  EXPECT_EQ(o.FirstFree(0, kMax), V{1});
  EXPECT_TRUE(o.Erase(kMax));
  EXPECT_EQ(o.FirstFree(kMax - 1, kMax), kMax);
  EXPECT_TRUE(o.Erase(0));
  EXPECT_EQ(o.FirstFree(0, 0), V{0});
}

// Random inserts and erases against a std::set of values.
TEST(Occupancy, MatchesANaiveSet) {
  std::mt19937 rng(7);
  Occupancy o;
  std::set<V> model;
  std::uniform_int_distribution<int> value(0, 63);
  for (int i = 0; i < 20000; ++i) {
    V v = static_cast<V>(value(rng));
    if (rng() % 2) {
      EXPECT_EQ(o.Insert(v), model.insert(v).second);
    } else {
      EXPECT_EQ(o.Erase(v), model.erase(v) == 1);
    }
    V from = static_cast<V>(value(rng));
    V last = from + static_cast<V>(value(rng) % 8);
    std::optional<V> want;
    for (V x = from; x <= last; ++x) {
      if (!model.count(x)) {
        want = x;
        break;
      }
    }
    ASSERT_EQ(o.FirstFree(from, last), want);
    ASSERT_EQ(o.Contains(v), model.count(v) == 1);
  }
}

}  // namespace
}  // namespace pylon::pool
