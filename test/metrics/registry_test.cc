#include "metrics/registry.h"

#include <thread>

#include <gtest/gtest.h>

namespace pylon::metrics {
namespace {

TEST(Registry, RendersTextFormat) {
  Registry r;
  r.Describe("purelb_election_member_count", "Live members seen", Type::kGauge);
  r.Describe("pylon_allocations_total", "Addresses allocated", Type::kCounter,
             {{"pool", {}}, {"family", {}}});
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
  r.Describe("g", "h", Type::kGauge, {{"a", {}}});
  r.Set("g", {{"a", "1"}}, 5);
  r.Set("g", {{"a", "2"}}, 6);
  EXPECT_EQ(r.Get("g", {{"a", "1"}}), 5);
  r.Remove("g", {{"a", "1"}});
  EXPECT_EQ(r.Get("g", {{"a", "1"}}), 0);
  EXPECT_EQ(r.Get("g", {{"a", "2"}}), 6);
  r.Clear("g");
  EXPECT_EQ(r.Render(), "# HELP g h\n# TYPE g gauge\n");
}

// What a family declares → the series it exports before anything happened.
TEST(Registry, DeclaredSeriesStartAtZero) {
  struct Case {
    const char* what;
    Type type;
    std::vector<LabelValues> labels;
    Start start;
    std::string want;  // rendered, after "# HELP x h\n# TYPE x <type>\n"
  };
  const Case cases[] = {
      {"unlabelled counter", Type::kCounter, {}, Start::kAtZero, "x 0\n"},
      {"unlabelled gauge", Type::kGauge, {}, Start::kAtZero, "x 0\n"},
      {"one known label",
       Type::kCounter,
       {{"family", {"IPv4", "IPv6"}}},
       Start::kAtZero,
       "x{family=\"IPv4\"} 0\nx{family=\"IPv6\"} 0\n"},
      {"every combination, labels sorted by name",
       Type::kCounter,
       {{"op", {"add", "remove"}}, {"kind", {"local", "virtual"}}},
       Start::kAtZero,
       "x{kind=\"local\",op=\"add\"} 0\nx{kind=\"local\",op=\"remove\"} 0\n"
       "x{kind=\"virtual\",op=\"add\"} 0\nx{kind=\"virtual\",op=\"remove\"} 0\n"},
      {"an open-ended label",
       Type::kGauge,
       {{"pool", {}}, {"family", {"IPv4", "IPv6"}}},
       Start::kAtZero,
       ""},
      {"unlabelled, when set", Type::kGauge, {}, Start::kWhenSet, ""},
      {"known labels, when set", Type::kGauge, {{"state", {"alive", "dead"}}}, Start::kWhenSet, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Registry r;
    r.Describe("x", "h", c.type, c.labels, c.start);
    EXPECT_EQ(r.Render(), std::string("# HELP x h\n# TYPE x ") +
                              (c.type == Type::kCounter ? "counter" : "gauge") + "\n" + c.want);
  }
}

TEST(Registry, DeclaringAgainKeepsValues) {
  Registry r;
  r.Describe("c_total", "h", Type::kCounter, {{"kind", {"probe", "claim"}}});
  r.Add("c_total", {{"kind", "probe"}}, 2);
  r.Describe("c_total", "other", Type::kGauge, {{"kind", {"probe", "claim", "third"}}});
  EXPECT_EQ(r.Render(),
            "# HELP c_total h\n# TYPE c_total counter\n"
            "c_total{kind=\"claim\"} 0\nc_total{kind=\"probe\"} 2\n");
}

TEST(Registry, FamilySetBeforeItsDeclarationIsCompleted) {
  Registry r;
  r.Add("c_total", {{"family", "IPv6"}}, 3);
  r.Describe("c_total", "h", Type::kCounter, {{"family", {"IPv4", "IPv6"}}});
  EXPECT_EQ(r.Render(),
            "# HELP c_total h\n# TYPE c_total counter\n"
            "c_total{family=\"IPv4\"} 0\nc_total{family=\"IPv6\"} 3\n");
}

TEST(Registry, ConcurrentAddsAreCounted) {
  Registry r;
  r.Describe("c", "", Type::kCounter, {{"k", {}}});
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
