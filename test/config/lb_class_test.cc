#include <gtest/gtest.h>

#include "config/parse.h"
#include "test_objects.h"

namespace pylon::config {
namespace {

using net::AddressRange;
using net::Family;
using net::Prefix;
using testing::Parse;

AddressRange R(const char* text) { return *AddressRange::Parse(text); }

TEST(LoadBalancerClass, Seed002PublicParses) {
  auto g = ParseLoadBalancerClass(testing::SeedPublicClass());
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->key(), (ConfigKey{ObjectKind::kLoadBalancerClass, "", "public"}));
  EXPECT_EQ(g->key().ToString(), "LoadBalancerClass public");
  EXPECT_EQ(g->mode, AnnounceMode::kL2);
  ASSERT_EQ(g->v4.size(), 2u);
  ASSERT_EQ(g->v6.size(), 1u);
  // A cidr entry is its own subnet: network and broadcast are never handed out.
  EXPECT_EQ(g->v4[0].path, "spec.ipv4Pools[0].cidr");
  EXPECT_EQ(g->v4[0].subnet, *Prefix::Parse("198.51.100.0/24"));
  EXPECT_EQ(g->v4[0].AggregationLength(), 24);
  // A start/end entry is taken as written and has no subnet.
  EXPECT_EQ(g->v4[1].path, "spec.ipv4Pools[1]");
  EXPECT_EQ(g->v4[1].written, "203.0.113.10-203.0.113.20");
  EXPECT_FALSE(g->v4[1].subnet.has_value());
  EXPECT_EQ(g->v4[1].AggregationLength(), 32);
  EXPECT_EQ(g->Ranges(Family::kV4), (std::vector<AddressRange>{R("198.51.100.1-198.51.100.254"),
                                                               R("203.0.113.10-203.0.113.20")}));
  EXPECT_EQ(g->Ranges(Family::kV6),
            std::vector<AddressRange>{R("2001:db8:f00d::1-2001:db8:f00d::ffff:ffff:ffff:ffff")});
  EXPECT_EQ(net::ToDecimal(g->Size(Family::kV4)), "265");
  EXPECT_EQ(net::ToDecimal(g->Size(Family::kV6)), "18446744073709551615");
  EXPECT_TRUE(g->warnings.empty());
}

TEST(LoadBalancerClass, ValidVariants) {
  // Mode defaults to l2; a namespace on a cluster-scoped object is ignored.
  auto obj =
      testing::LoadBalancerClass("v6only", Parse(R"({"ipv6Pools":[{"cidr":"2001:db8::/120"}]})"));
  obj["metadata"]["namespace"] = "ignored";
  auto g = ParseLoadBalancerClass(obj);
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->key().namespace_, "");
  EXPECT_EQ(g->mode, AnnounceMode::kL2);
  EXPECT_FALSE(g->HasFamily(Family::kV4));
  EXPECT_EQ(g->Ranges(Family::kV6), std::vector<AddressRange>{R("2001:db8::1-2001:db8::ff")});

  // A cidr with host bits: from the written address on, with a warning.
  g = ParseLoadBalancerClass(testing::LoadBalancerClass(
      "hb", Parse(R"({"mode":"l2","ipv4Pools":[{"cidr":"198.51.100.10/24"}],"ipv6Pools":[]})")));
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->Ranges(Family::kV4), std::vector<AddressRange>{R("198.51.100.10-198.51.100.254")});
  EXPECT_EQ(g->warnings, std::vector<std::string>{
                             "spec.ipv4Pools[0].cidr: cidr 198.51.100.10/24 has host bits set; "
                             "using 198.51.100.10-198.51.100.255"});

  // A single-address start/end entry, and a /32 cidr.
  g = ParseLoadBalancerClass(testing::LoadBalancerClass(
      "one", Parse(R"({"ipv4Pools":[{"start":"203.0.113.5","end":"203.0.113.5"},
                                    {"cidr":"203.0.113.9/32"}]})")));
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->Ranges(Family::kV4),
            (std::vector<AddressRange>{R("203.0.113.5"), R("203.0.113.9")}));
}

TEST(LoadBalancerClass, ModeL3IsVirtual) {
  auto g = ParseLoadBalancerClass(testing::LoadBalancerClass(
      "bgp", Parse(R"({"mode":"l3","ipv4Pools":[{"cidr":"203.0.113.0/28"}]})")));
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->mode, AnnounceMode::kL3);
  g = ParseLoadBalancerClass(
      testing::LoadBalancerClass("l2", Parse(R"({"ipv4Pools":[{"cidr":"203.0.113.0/28"}]})")));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->mode, AnnounceMode::kL2);
}

TEST(LoadBalancerClass, ErrorsTable) {
  struct Row {
    const char* spec;
    const char* error;  // after "LoadBalancerClass public: "
  };
  const Row rows[] = {
      {R"({"mode":"bgp","ipv4Pools":[{"cidr":"198.51.100.0/24"}]})",
       "spec.mode: unknown mode \"bgp\" (want l2 or l3)"},
      {R"({"mode":"L2","ipv4Pools":[{"cidr":"198.51.100.0/24"}]})",
       "spec.mode: unknown mode \"L2\" (want l2 or l3)"},
      {R"({"mode":2,"ipv4Pools":[{"cidr":"198.51.100.0/24"}]})",
       "spec.mode: must be a string, got a number"},
      {R"({"mode":null,"ipv4Pools":[{"cidr":"198.51.100.0/24"}]})",
       "spec.mode: must be a string, got null"},
      {R"({"mode":"l2"})", "spec: at least one of ipv4Pools and ipv6Pools must be non-empty"},
      {R"({"ipv4Pools":[],"ipv6Pools":[]})",
       "spec: at least one of ipv4Pools and ipv6Pools must be non-empty"},
      {R"({"ipv4Pools":[{"cidr":"198.51.100.0/24","start":"198.51.100.1","end":"198.51.100.2"}]})",
       "spec.ipv4Pools[0]: has both cidr and start/end; set one"},
      {R"({"ipv4Pools":[{"cidr":"198.51.100.0/24","end":"198.51.100.2"}]})",
       "spec.ipv4Pools[0]: has both cidr and start/end; set one"},
      {R"({"ipv4Pools":[{}]})", "spec.ipv4Pools[0]: needs cidr, or start and end"},
      {R"({"ipv4Pools":[{"start":"203.0.113.10"}]})", "spec.ipv4Pools[0].end: required"},
      {R"({"ipv4Pools":[{"end":"203.0.113.10"}]})", "spec.ipv4Pools[0].start: required"},
      {R"({"ipv4Pools":[{"start":"203.0.113.20","end":"203.0.113.10"}]})",
       "spec.ipv4Pools[0]: start 203.0.113.20 is after end 203.0.113.10"},
      {R"({"ipv4Pools":[{"start":"203.0.113.10","end":"2001:db8::1"}]})",
       "spec.ipv4Pools[0]: start 203.0.113.10 and end 2001:db8::1 mix IPv4 and IPv6"},
      {R"({"ipv4Pools":[{"start":"bogus","end":"203.0.113.10"}]})",
       "spec.ipv4Pools[0].start: \"bogus\" is not an IP address"},
      {R"({"ipv4Pools":[{"cidr":"2001:db8::/64"}]})",
       "spec.ipv4Pools[0].cidr: 2001:db8::/64 is IPv6 in an IPv4 list"},
      {R"({"ipv6Pools":[{"cidr":"198.51.100.0/24"}]})",
       "spec.ipv6Pools[0].cidr: 198.51.100.0/24 is IPv4 in an IPv6 list"},
      {R"({"ipv4Pools":[{"cidr":"198.51.100.0/24"}],
           "ipv6Pools":[{"cidr":"2001:db8::/64"},{"start":"203.0.113.1","end":"203.0.113.2"}]})",
       "spec.ipv6Pools[1]: 203.0.113.1-203.0.113.2 is IPv4 in an IPv6 list"},
      {R"({"ipv4Pools":[{"cidr":"198.51.100.7"}]})",
       "spec.ipv4Pools[0].cidr: \"198.51.100.7\" is not a CIDR"},
      {R"({"ipv4Pools":[{"cidr":"198.51.100.0/40"}]})",
       "spec.ipv4Pools[0].cidr: \"198.51.100.0/40\" is not a valid CIDR: prefix length 40 is out "
       "of range for IPv4"},
      {R"({"ipv4Pools":[{"cidr":"198.51.100.7/32"},{"cidr":""}]})",
       "spec.ipv4Pools[1].cidr: required"},
      // Overlaps inside the class, both directions.
      {R"({"ipv4Pools":[{"cidr":"198.51.100.0/24"},
                        {"start":"198.51.100.10","end":"198.51.100.20"}]})",
       "spec.ipv4Pools[1]: 198.51.100.10-198.51.100.20 overlaps spec.ipv4Pools[0].cidr "
       "(198.51.100.0/24)"},
      {R"({"ipv4Pools":[{"start":"198.51.100.10","end":"198.51.100.20"},
                        {"cidr":"198.51.100.0/24"}]})",
       "spec.ipv4Pools[1].cidr: 198.51.100.0/24 overlaps spec.ipv4Pools[0] "
       "(198.51.100.10-198.51.100.20)"},
      // Types.
      {R"({"ipv4Pools":{"cidr":"198.51.100.0/24"}})",
       "spec.ipv4Pools: must be an array, got an object"},
      {R"({"ipv4Pools":["198.51.100.0/24"]})",
       "spec.ipv4Pools[0]: must be an object, got a string"},
      {R"({"ipv4Pools":[{"cidr":24}]})", "spec.ipv4Pools[0].cidr: must be a string, got a number"},
      {R"({"ipv6Pools":[{"start":["2001:db8::1"],"end":"2001:db8::2"}]})",
       "spec.ipv6Pools[0].start: must be a string, got an array"},
      {R"({"ipv6Pools":[{"start":"2001:db8::1","end":null}]})",
       "spec.ipv6Pools[0].end: must be a string, got null"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.spec);
    EXPECT_TRUE(testing::RefusedWith(
        ParseLoadBalancerClass(testing::LoadBalancerClass("public", Parse(row.spec))),
        std::string("LoadBalancerClass public: ") + row.error));
  }
  // Envelope errors.
  auto g = ParseLoadBalancerClass(Parse(R"({"kind":"LoadBalancerClass","metadata":{"name":"x"}})"));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message(), "LoadBalancerClass x: spec: required");
  g = ParseLoadBalancerClass(
      Parse(R"({"apiVersion":"lace-cni.io/v1","metadata":{"name":"x"},"spec":{}})"));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message(),
            "LoadBalancerClass x: apiVersion: \"lace-cni.io/v1\" is not supported (want "
            "lace-cni.io/v1alpha1)");
  g = ParseLoadBalancerClass(Parse(R"({"metadata":{"name":"x"},"spec":"l2"})"));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message(), "LoadBalancerClass x: spec: must be an object, got a string");
}

TEST(ParseAddressSource, DispatchesOnKind) {
  EXPECT_EQ(ParseAddressSource(testing::SeedPublicClass())->key().kind,
            ObjectKind::kLoadBalancerClass);
  EXPECT_EQ(ParseAddressSource(testing::SeedLocalDual())->key().kind, ObjectKind::kServiceGroup);
  struct Row {
    const char* object;
    const char* error;
  };
  const Row rows[] = {
      {R"({"kind":"LBNodeAgent","metadata":{"name":"x"}})",
       "kind: \"LBNodeAgent\" is not ServiceGroup or LoadBalancerClass"},
      {R"({"metadata":{"name":"x"}})", "kind: required"},
      {R"({"kind":null})", "kind: must be a string, got null"},
      {R"(42)", "must be a JSON object, got a number"},
  };
  for (const auto& row : rows) {
    auto g = ParseAddressSource(Parse(row.object));
    ASSERT_FALSE(g) << row.object;
    EXPECT_EQ(g.error().message(), row.error);
  }
}

}  // namespace
}  // namespace pylon::config
