// Multi-pool (multi_pool.h, AllocateMultiPool) walked through the reconcile core.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/multi_pool.h"
#include "reconcile_world.h"
#include "test_objects.h"

namespace pylon::allocator::testing {
namespace {

// Multi-pool (PureLB v2): one address from every range whose subnet a live node advertises;
// exhausted ranges skipped; newly live ranges add an address on a later reconcile and none is
// ever taken away; the annotation overrides the group; refused with balancePools or a sharing
// key; a restart keeps every address.
TEST(MultiPoolTest, V2MultiPool) {
  World w({testing::V2GroupJson("mp", json::parse(R"({"local":{"multiPool":true,
      "v4pools":[{"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"},
                 {"pool":"198.51.100.10-198.51.100.11","subnet":"198.51.100.0/24"},
                 {"pool":"203.0.113.10-203.0.113.19","subnet":"203.0.113.0/24"}],
      "v6pools":[{"pool":"fd00::10-fd00::19","subnet":"fd00::/64"}]}})")),
           testing::V2GroupJson("bal", json::parse(R"({"local":{"balancePools":true,
      "v4pools":[{"pool":"192.0.3.10-192.0.3.19","subnet":"192.0.3.0/24"}]}})")),
           testing::V2GroupJson("far", json::parse(R"({"remote":{"multiPool":true,
      "v4pools":[{"pool":"10.1.0.1-10.1.0.2","subnet":"10.1.0.0/24"},
                 {"pool":"10.2.0.1-10.2.0.2","subnet":"10.2.0.0/24"}]}})"))});
  auto svc = [](std::string name, std::string group = "mp",
                std::map<std::string, std::string> more = {}) {
    SvcSpec s;
    s.name = std::move(name);
    s.annotations = {{"purelb.io/service-group", group}};
    for (auto& [k, v] : more) s.annotations[k] = v;
    return s;
  };
  auto in_use = [&](const char* group) {
    return w.pool()
        .Stats(std::string("ServiceGroup purelb-system/") + group, net::Family::kV4)
        ->in_use;
  };
  Walk(w, {R("no live node subnet: refused", svc("early"), Outcome::kRefused,
             Reason::kPoolExhausted)});
  w.SetLiveSubnets({"192.0.2.0/24", "198.51.100.0/24"});
  Decision d = w.Run(svc("a"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10", "198.51.100.10"}));
  ASSERT_EQ(EventReasons(d), (std::vector<std::string>{"AddressAssigned"}));
  EXPECT_EQ(d.events[0].message, "Multi-pool: assigned 2 IPs from pool mp");
  EXPECT_EQ(d.pool_type, "local");
  Walk(w, {R("b: one from each live range", svc("b"), Outcome::kAllocated, Reason::kNone,
             {"192.0.2.11", "198.51.100.11"})});
  d = w.Run(svc("c"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.12"}));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].message,
            "Multi-pool: assigned 1 IPs from pool mp; no free address in "
            "198.51.100.10-198.51.100.11");
  EXPECT_EQ(in_use("mp"), 5u);
  // A third subnet goes live: a re-run adds its address and keeps the others.
  w.SetLiveSubnets({"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"});
  d = w.Run(svc("a"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10", "198.51.100.10", "203.0.113.10"}));
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].message, "Incremental multi-pool: added 1 IPs (total 3) from pool mp");
  // The 198.51.100.0/24 node dies: nothing is taken away, nothing is written.
  w.SetLiveSubnets({"192.0.2.0/24", "203.0.113.0/24"});
  d = w.Run(svc("a"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.10", "198.51.100.10", "203.0.113.10"}));
  EXPECT_TRUE(d.events.empty());
  EXPECT_FALSE(w.last_writes().status.has_value());
  EXPECT_EQ(in_use("mp"), 6u);
  Walk(w,
       {R("annotation false: one address", svc("d", "mp", {{"purelb.io/multi-pool", "no"}}),
          Outcome::kAllocated, Reason::kNone, {"192.0.2.13"}),
        R("annotation true on a balancePools group: refused",
          svc("e", "bal", {{"purelb.io/multi-pool", "true"}}), Outcome::kRefused,
          Reason::kMultiPoolRefused),
        R("with a sharing key: refused", svc("f", "mp", {{"purelb.io/allow-shared-ip", "k"}}),
          Outcome::kRefused, Reason::kMultiPoolRefused),
        R("annotation false on a balancePools group: fine",
          svc("e", "bal", {{"purelb.io/multi-pool", "false"}}), Outcome::kAllocated, Reason::kNone,
          {"192.0.3.10"}),
        R("remote: every range, whatever the leases", svc("g", "far"), Outcome::kAllocated,
          Reason::kNone, {"10.1.0.1", "10.2.0.1"}),
        R("turning it off keeps the first address", svc("a", "mp", {{"purelb.io/multi-pool", "x"}}),
          Outcome::kAllocated, Reason::kNone, {"192.0.2.10"})});
  d = w.Run(svc("e", "bal", {{"purelb.io/multi-pool", "true"}}));
  EXPECT_EQ(d.condition->message,
            "multi-pool and balancePools allocation are mutually exclusive for pool bal");
  EXPECT_EQ(in_use("mp"), 5u);  // a: 2 freed; b 2, c 1, d 1
  // Dual stack once fd00::/64 is live: the IPv6 range joins.
  w.SetLiveSubnets({"192.0.2.0/24", "fd00::/64"});
  SvcSpec dual = svc("h");
  dual.families = {"IPv4", "IPv6"};
  dual.policy = "RequireDualStack";
  Walk(w, {R("dual", dual, Outcome::kAllocated, Reason::kNone, {"192.0.2.14", "fd00::10"})});
  // A restart rebuilds every address of the multi-pool Services from their status.
  EXPECT_EQ(w.Restart({svc("b"), svc("c"), svc("g", "far"), dual}), 7u);
  EXPECT_EQ(in_use("mp"), 4u);
  d = w.Run(svc("b"));
  EXPECT_EQ(Ips(d), (std::vector<std::string>{"192.0.2.11", "198.51.100.11"}));
  EXPECT_TRUE(d.events.empty());
  EXPECT_FALSE(w.last_writes().status.has_value());
}

}  // namespace
}  // namespace pylon::allocator::testing
