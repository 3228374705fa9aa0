#include "metrics/registry.h"

#include <thread>

#include <gtest/gtest.h>

namespace pylon::metrics {
namespace {

TEST(Registry, RendersTextFormat) {
  Registry r;
  r.Describe("purelb_election_member_count", "Live members seen", Type::kGauge);
  r.Describe("pylon_allocations_total", "Addresses allocated", Type::kCounter);
  r.Set("purelb_election_member_count", {}, 3);
  r.Add("pylon_allocations_total", {{"pool", "localdual"}, {"family", "IPv4"}});
  r.Add("pylon_allocations_total", {{"family", "IPv4"}, {"pool", "localdual"}}, 2);
  r.Set("pylon_pool_size", {{"pool", "a\"b\\c\nd"}}, 18446744073709551616.0);
  EXPECT_EQ(r.Render(),
            "# HELP purelb_election_member_count Live members seen\n"
            "# TYPE purelb_election_member_count gauge\n"
            "purelb_election_member_count 3\n"
            "# HELP pylon_allocations_total Addresses allocated\n"
            "# TYPE pylon_allocations_total counter\n"
            "pylon_allocations_total{family=\"IPv4\",pool=\"localdual\"} 3\n"
            "# TYPE pylon_pool_size gauge\n"
            "pylon_pool_size{pool=\"a\\\"b\\\\c\\nd\"} 1.8446744073709552e+19\n");
}

TEST(Registry, RemoveClearAndGet) {
  Registry r;
  r.Describe("g", "h", Type::kGauge);
  r.Set("g", {{"a", "1"}}, 5);
  r.Set("g", {{"a", "2"}}, 6);
  EXPECT_EQ(r.Get("g", {{"a", "1"}}), 5);
  r.Remove("g", {{"a", "1"}});
  EXPECT_EQ(r.Get("g", {{"a", "1"}}), 0);
  EXPECT_EQ(r.Get("g", {{"a", "2"}}), 6);
  r.Clear("g");
  EXPECT_EQ(r.Render(), "# HELP g h\n# TYPE g gauge\n");
}

TEST(Registry, ConcurrentAddsAreCounted) {
  Registry r;
  r.Describe("c", "", Type::kCounter);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) r.Add("c", {{"k", "v"}});
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(r.Get("c", {{"k", "v"}}), 4000);
}

}  // namespace
}  // namespace pylon::metrics
