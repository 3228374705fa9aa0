// The pool state at a start (rebuild.h): startup order and the records rebuilt from the status.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/rebuild.h"
#include "reconcile_world.h"
#include "test_objects.h"

namespace pylon::allocator::testing {
namespace {

TEST(RebuildTest, RebuildOrderAndRecords) {
  World w({testing::SeedLocalDual(), testing::SeedPublicClass()});
  std::vector<model::Service> views;
  auto add = [&](SvcSpec s) { views.push_back(*model::ParseService(testing::ServiceJson(s))); };
  SvcSpec young = Dual("young");
  young.created = "2024-02-01T00:00:00Z";
  young.ingress = {"192.168.10.226", "fc00:270:154:0:8000::4"};
  SvcSpec old = Dual("old");
  old.created = "2023-01-01T00:00:00Z";
  old.ingress = {"192.168.10.226"};  // the same IPv4 as young: the older one wins
  SvcSpec fresh = Dual("fresh");
  fresh.created = "2020-01-01T00:00:00Z";
  SvcSpec foreign;
  foreign.name = "foreign";
  foreign.cls = "example.com/x";
  foreign.ingress = {"198.51.100.50"};
  SvcSpec moved = Lace("moved");  // now selects the class, status still in localdual
  moved.ingress = {"192.168.10.229"};
  add(young);
  add(old);
  add(fresh);
  add(foreign);
  add(moved);
  std::vector<const model::Service*> ptrs;
  for (const auto& v : views) ptrs.push_back(&v);
  auto ordered = StartupOrder(ptrs);
  std::vector<std::string> names;
  for (const auto* s : ordered) names.push_back(s->name);
  EXPECT_EQ(names, (std::vector<std::string>{"old", "foreign", "moved", "young", "fresh"}));
  auto records = RebuildRecords(ordered, w.config());
  ASSERT_EQ(records.size(), 4u);  // foreign not ours; fresh has no status
  auto conflicts = w.pool().Rebuild(records);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].record.service.name(), "young");
  // moved's old address stays held under localdual until its reconcile moves it.
  EXPECT_TRUE(w.pool().Lookup(*net::IpAddress::Parse("192.168.10.229")).has_value());
  Decision d = w.Run(Lace("moved"));
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_FALSE(w.pool().Lookup(*net::IpAddress::Parse("192.168.10.229")).has_value());
  // young lost its IPv4 to old: it gets a fresh pair, never old's address.
  SvcSpec young_again = young;
  d = w.Run(young_again);
  ASSERT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_NE(Ips(d)[0], "192.168.10.226");
}

}  // namespace
}  // namespace pylon::allocator::testing
