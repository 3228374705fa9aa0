#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "config/parse.h"
#include "test_objects.h"

namespace pylon::config {
namespace {

using net::AddressRange;
using net::Family;
using net::IpAddress;
using net::Prefix;
using testing::Parse;

AddressRange R(const char* text) { return *AddressRange::Parse(text); }
Prefix P(const char* text) { return *Prefix::Parse(text); }

TEST(ServiceGroup, Seed000LocalDualParsesAsWritten) {
  auto g = ParseServiceGroup(testing::SeedLocalDual());
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->key(), (ConfigKey{ObjectKind::kServiceGroup, "purelb-system", "localdual"}));
  EXPECT_EQ(g->mode, AnnounceMode::kLocalOrVirtual);
  EXPECT_EQ(g->meta.generation, 1);
  ASSERT_TRUE(g->meta.created.has_value());
  EXPECT_EQ(g->meta.created->time_since_epoch(),
            std::chrono::seconds(1641829800));  // 2022-01-10T15:50:00Z
  ASSERT_EQ(g->v4.size(), 1u);
  ASSERT_EQ(g->v6.size(), 1u);
  EXPECT_EQ(g->v4[0].path, "spec.local.v4pools[0].pool");
  EXPECT_EQ(g->v4[0].subnet, P("192.168.10.0/24"));
  EXPECT_EQ(g->v4[0].AggregationLength(), 24);
  EXPECT_EQ(g->Ranges(Family::kV4), std::vector<AddressRange>{R("192.168.10.225-192.168.10.229")});
  EXPECT_EQ(g->v6[0].subnet, P("fc00:270:154::/64"));
  EXPECT_EQ(g->v6[0].AggregationLength(), 64);
  EXPECT_EQ(g->Ranges(Family::kV6),
            std::vector<AddressRange>{R("fc00:270:154:0:8000::4-fc00:270:154:0:8000::7")});
  EXPECT_EQ(g->Size(Family::kV4), 5u);
  EXPECT_EQ(g->Size(Family::kV6), 4u);
  EXPECT_TRUE(g->warnings.empty());
}

TEST(ServiceGroup, Seed003PoolWithHostBitsStartsAtTheWrittenAddress) {
  auto g = ParseServiceGroup(testing::SeedLocalAddRange());
  ASSERT_TRUE(g) << g.error().message();
  ASSERT_EQ(g->v6.size(), 1u);
  EXPECT_EQ(
      g->Ranges(Family::kV6),
      std::vector<AddressRange>{R("fc00:270:154:0:8100::4-fc00:270:154:0:ffff:ffff:ffff:ffff")});
  EXPECT_EQ(net::ToDecimal(g->Size(Family::kV6)), "9151314442816847868");
  ASSERT_EQ(g->warnings.size(), 1u);
  EXPECT_EQ(g->warnings[0],
            "spec.local.v6pools[0].pool: pool fc00:270:154:0:8100::4/64 has host bits set; "
            "using fc00:270:154:0:8100::4-fc00:270:154:0:ffff:ffff:ffff:ffff");
}

// Valid pools: what may be handed out after the host-bits rule and the exclusions.
TEST(ServiceGroup, AllocatableRangesTable) {
  struct Row {
    const char* name;
    const char* local;
    Family family;
    std::vector<const char*> ranges;
    const char* size;
    int aggregation;
    std::vector<const char*> warnings;
  };
  const Row rows[] = {
      {"host bits: from the written address, never below; broadcast excluded",
       R"({"v4pools":[{"pool":"10.0.0.10/24","subnet":"10.0.0.0/24"}]})",
       Family::kV4,
       {"10.0.0.10-10.0.0.254"},
       "245",
       24,
       {"spec.local.v4pools[0].pool: pool 10.0.0.10/24 has host bits set; using "
        "10.0.0.10-10.0.0.255"}},
      {"pool equal to subnet: no network, no broadcast",
       R"({"v4pools":[{"pool":"192.168.1.0/24","subnet":"192.168.1.0/24"}]})",
       Family::kV4,
       {"192.168.1.1-192.168.1.254"},
       "254",
       24,
       {}},
      {"pool inside a wider subnet keeps its edges",
       R"({"v4pools":[{"pool":"10.1.0.0/24","subnet":"10.0.0.0/8"}]})",
       Family::kV4,
       {"10.1.0.0-10.1.0.255"},
       "256",
       8,
       {}},
      {"range spanning the broadcast",
       R"({"v4pools":[{"pool":"10.0.0.250-10.0.0.255","subnet":"10.0.0.0/24"}]})",
       Family::kV4,
       {"10.0.0.250-10.0.0.254"},
       "5",
       24,
       {}},
      {"/31 subnet: both addresses usable",
       R"({"v4pools":[{"pool":"10.0.0.0/31","subnet":"10.0.0.0/31"}]})",
       Family::kV4,
       {"10.0.0.0-10.0.0.1"},
       "2",
       31,
       {}},
      {"/32 single address",
       R"({"v4pools":[{"pool":"10.0.0.7","subnet":"10.0.0.7/32"}]})",
       Family::kV4,
       {"10.0.0.7"},
       "1",
       32,
       {}},
      {"spaces around the dash",
       R"({"v4pools":[{"pool":" 10.0.0.1 - 10.0.0.5 ","subnet":"10.0.0.0/24"}]})",
       Family::kV4,
       {"10.0.0.1-10.0.0.5"},
       "5",
       24,
       {}},
      {"explicit aggregation /32",
       R"({"v4pools":[{"pool":"10.0.0.1-10.0.0.5","subnet":"10.0.0.0/24","aggregation":"/32"}]})",
       Family::kV4,
       {"10.0.0.1-10.0.0.5"},
       "5",
       32,
       {}},
      {"aggregation may supernet the subnet (PureLB documents it)",
       R"({"v4pools":[{"pool":"10.0.0.1-10.0.0.5","subnet":"10.0.0.0/24","aggregation":"/16"}]})",
       Family::kV4,
       {"10.0.0.1-10.0.0.5"},
       "5",
       16,
       {}},
      {"missing and empty aggregation mean default",
       R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/24"},
                      {"pool":"10.0.0.2","subnet":"10.0.0.0/25","aggregation":""}]})",
       Family::kV4,
       {"10.0.0.1", "10.0.0.2"},
       "2",
       24,
       {}},
      {"subnet with host bits is masked, with a warning",
       R"({"v4pools":[{"pool":"10.0.0.1-10.0.0.5","subnet":"10.0.0.9/24"}]})",
       Family::kV4,
       {"10.0.0.1-10.0.0.5"},
       "5",
       24,
       {"spec.local.v4pools[0].subnet: subnet 10.0.0.9/24 has host bits set; using 10.0.0.0/24"}},
      {"IPv6 pool equal to subnet: subnet-router anycast excluded",
       R"({"v6pools":[{"pool":"fc00::/120","subnet":"fc00::/120"}]})",
       Family::kV6,
       {"fc00::1-fc00::ff"},
       "255",
       120,
       {}},
      {"IPv6 /64 is counted exactly",
       R"({"v6pools":[{"pool":"fc00:1::/64","subnet":"fc00:1::/64","aggregation":"/128"}]})",
       Family::kV6,
       {"fc00:1::1-fc00:1::ffff:ffff:ffff:ffff"},
       "18446744073709551615",
       128,
       {}},
      {"IPv6 /48 beyond int64",
       R"({"v6pools":[{"pool":"fc00:2::/48","subnet":"fc00:2::/48"}]})",
       Family::kV6,
       {"fc00:2::1-fc00:2:0:ffff:ffff:ffff:ffff:ffff"},
       "1208925819614629174706175",
       48,
       {}},
      {"IPv6 /127 keeps both addresses",
       R"({"v6pools":[{"pool":"fc00::/127","subnet":"fc00::/127"}]})",
       Family::kV6,
       {"fc00::-fc00::1"},
       "2",
       127,
       {}},
      {"order: v4pool, then v4pools, then the legacy flat pool",
       R"({"pool":"10.0.0.30","subnet":"10.0.0.0/24",
           "v4pools":[{"pool":"10.0.0.20","subnet":"10.0.0.0/24"}],
           "v4pool":{"pool":"10.0.0.10","subnet":"10.0.0.0/24"}})",
       Family::kV4,
       {"10.0.0.10", "10.0.0.20", "10.0.0.30"},
       "3",
       24,
       {}},
      {"legacy flat IPv6 pool: family from the addresses",
       R"({"pool":"fc00::10-fc00::20","subnet":"fc00::/64","aggregation":"/120"})",
       Family::kV6,
       {"fc00::10-fc00::20"},
       "17",
       120,
       {}},
      {"single v6pool object",
       R"({"v6pool":{"pool":"fc00::5","subnet":"fc00::/64"}})",
       Family::kV6,
       {"fc00::5"},
       "1",
       64,
       {}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto g = ParseServiceGroup(testing::ServiceGroup("sg", Parse(row.local)));
    ASSERT_TRUE(g) << g.error().message();
    std::vector<AddressRange> want;
    for (const char* r : row.ranges) want.push_back(R(r));
    EXPECT_EQ(g->Ranges(row.family), want);
    EXPECT_EQ(net::ToDecimal(g->Size(row.family)), row.size);
    EXPECT_EQ(g->entries(row.family).front().AggregationLength(), row.aggregation);
    EXPECT_EQ(g->warnings, std::vector<std::string>(row.warnings.begin(), row.warnings.end()));
    const Family other = row.family == Family::kV4 ? Family::kV6 : Family::kV4;
    EXPECT_FALSE(g->HasFamily(other));
  }
}

TEST(ServiceGroup, LegacyPathsAndSubnets) {
  auto g = ParseServiceGroup(
      testing::ServiceGroup("sg", Parse(R"({"pool":"192.168.5.0/29","subnet":"192.168.5.0/24"})")));
  ASSERT_TRUE(g) << g.error().message();
  ASSERT_EQ(g->v4.size(), 1u);
  EXPECT_EQ(g->v4[0].path, "spec.local.pool");
  EXPECT_EQ(g->v4[0].written, "192.168.5.0/29");
  EXPECT_EQ(g->v4[0].span, R("192.168.5.0-192.168.5.7"));
  // The pool starts at the subnet's network address, which is excluded.
  EXPECT_EQ(g->Ranges(Family::kV4), std::vector<AddressRange>{R("192.168.5.1-192.168.5.7")});
}

// Every invalid spec.local: the exact field path and reason.
TEST(ServiceGroup, LocalErrorsTable) {
  struct Row {
    const char* local;
    const char* error;  // after "ServiceGroup purelb-system/localdual: "
  };
  const Row rows[] = {
      // Outside the subnet (fully and partly).
      {R"({"v4pools":[{"pool":"192.168.10.225-192.168.10.229","subnet":"192.168.10.0/24"},
                      {"pool":"192.168.11.5-192.168.11.9","subnet":"192.168.10.0/24"}]})",
       "spec.local.v4pools[1].pool: 192.168.11.5-192.168.11.9 is outside subnet 192.168.10.0/24"},
      {R"({"v4pools":[{"pool":"192.168.10.250-192.168.11.2","subnet":"192.168.10.0/24"}]})",
       "spec.local.v4pools[0].pool: 192.168.10.250-192.168.11.2 is outside subnet "
       "192.168.10.0/24"},
      {R"({"v4pools":[{"pool":"192.168.10.0/23","subnet":"192.168.10.0/24"}]})",
       "spec.local.v4pools[0].pool: 192.168.10.0/23 is outside subnet 192.168.10.0/24"},
      {R"({"v6pools":[{"pool":"fc00:270:155::1","subnet":"fc00:270:154::/64"}]})",
       "spec.local.v6pools[0].pool: fc00:270:155::1 is outside subnet fc00:270:154::/64"},
      // start > end, mixed families.
      {R"({"v4pools":[{"pool":"10.0.0.9-10.0.0.5","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: 10.0.0.9-10.0.0.5: start 10.0.0.9 is after end 10.0.0.5"},
      {R"({"v4pools":[{"pool":"10.0.0.1-fc00::1","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: 10.0.0.1-fc00::1 mixes IPv4 and IPv6"},
      // Wrong family for the list, or between pool and subnet.
      {R"({"v4pools":[{"pool":"fc00::1-fc00::5","subnet":"fc00::/64"}]})",
       "spec.local.v4pools[0].pool: fc00::1-fc00::5 is IPv6 in an IPv4 list"},
      {R"({"v6pools":[{"pool":"10.0.0.0/24","subnet":"10.0.0.0/24"}]})",
       "spec.local.v6pools[0].pool: 10.0.0.0/24 is IPv4 in an IPv6 list"},
      {R"({"v4pool":{"pool":"fc00::1","subnet":"fc00::/64"}})",
       "spec.local.v4pool.pool: fc00::1 is IPv6 in an IPv4 list"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"fc00::/64"}]})",
       "spec.local.v4pools[0].subnet: subnet fc00::/64 is IPv6 but pool 10.0.0.1 is IPv4"},
      {R"({"pool":"fc00::1","subnet":"10.0.0.0/8"})",
       "spec.local.subnet: subnet 10.0.0.0/8 is IPv4 but pool fc00::1 is IPv6"},
      // Overlaps inside one object, both directions of containment.
      {R"({"v4pools":[{"pool":"10.0.0.0/24","subnet":"10.0.0.0/24"},
                      {"pool":"10.0.0.10-10.0.0.20","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[1].pool: 10.0.0.10-10.0.0.20 overlaps spec.local.v4pools[0].pool "
       "(10.0.0.0/24)"},
      {R"({"v4pools":[{"pool":"10.0.0.10-10.0.0.20","subnet":"10.0.0.0/24"},
                      {"pool":"10.0.0.0/24","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[1].pool: 10.0.0.0/24 overlaps spec.local.v4pools[0].pool "
       "(10.0.0.10-10.0.0.20)"},
      {R"({"v4pools":[{"pool":"10.0.0.1-10.0.0.10","subnet":"10.0.0.0/24"},
                      {"pool":"10.0.0.50","subnet":"10.0.0.0/24"},
                      {"pool":"10.0.0.10-10.0.0.12","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[2].pool: 10.0.0.10-10.0.0.12 overlaps spec.local.v4pools[0].pool "
       "(10.0.0.1-10.0.0.10)"},
      {R"({"v4pool":{"pool":"10.0.0.5","subnet":"10.0.0.0/24"},
           "v4pools":[{"pool":"10.0.0.1-10.0.0.9","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: 10.0.0.1-10.0.0.9 overlaps spec.local.v4pool.pool "
       "(10.0.0.5)"},
      {R"({"pool":"fc00::8","subnet":"fc00::/64",
           "v6pools":[{"pool":"fc00::/120","subnet":"fc00::/64"}]})",
       "spec.local.pool: fc00::8 overlaps spec.local.v6pools[0].pool (fc00::/120)"},
      // Aggregation.
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/24","aggregation":"/4"}]})",
       "spec.local.v4pools[0].aggregation: \"/4\" is not a valid aggregation for IPv4 (want "
       "default or /8 to /32)"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/24","aggregation":"/33"}]})",
       "spec.local.v4pools[0].aggregation: \"/33\" is not a valid aggregation for IPv4 (want "
       "default or /8 to /32)"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/24","aggregation":"24"}]})",
       "spec.local.v4pools[0].aggregation: \"24\" is not a valid aggregation for IPv4 (want "
       "default or /8 to /32)"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/24","aggregation":"/024"}]})",
       "spec.local.v4pools[0].aggregation: \"/024\" is not a valid aggregation for IPv4 (want "
       "default or /8 to /32)"},
      {R"({"v6pools":[{"pool":"fc00::1","subnet":"fc00::/64","aggregation":"/129"}]})",
       "spec.local.v6pools[0].aggregation: \"/129\" is not a valid aggregation for IPv6 (want "
       "default or /8 to /128)"},
      {R"({"v6pools":[{"pool":"fc00::1","subnet":"fc00::/64","aggregation":"Default"}]})",
       "spec.local.v6pools[0].aggregation: \"Default\" is not a valid aggregation for IPv6 "
       "(want default or /8 to /128)"},
      // Malformed addresses.
      {R"({"v4pools":[{"pool":"abc","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: \"abc\" is not an IP address, an a-b range or a CIDR"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/33"}]})",
       "spec.local.v4pools[0].subnet: \"10.0.0.0/33\" is not a valid CIDR: prefix length 33 is "
       "out of range for IPv4"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0"}]})",
       "spec.local.v4pools[0].subnet: \"10.0.0.0\" is not a valid CIDR: \"10.0.0.0\" is not a "
       "CIDR (missing /length)"},
      {R"({"v4pools":[{"pool":"10.0.0.0","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: 10.0.0.0 has no allocatable address (the network address "
       "and broadcast of subnet 10.0.0.0/24 are never handed out)"},
      // Wrong JSON types, nulls, missing fields.
      {R"({"v4pools":"10.0.0.0/24"})", "spec.local.v4pools: must be an array, got a string"},
      {R"({"v4pools":["10.0.0.0/24"]})", "spec.local.v4pools[0]: must be an object, got a string"},
      {R"({"v4pools":[null]})", "spec.local.v4pools[0]: must be an object, got null"},
      {R"({"v4pools":[{"pool":5,"subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: must be a string, got a number"},
      {R"({"v4pools":[{"pool":null,"subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: must be a string, got null"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":{"cidr":"10.0.0.0/24"}}]})",
       "spec.local.v4pools[0].subnet: must be a string, got an object"},
      {R"({"v4pools":[{"pool":"10.0.0.1","subnet":"10.0.0.0/24","aggregation":24}]})",
       "spec.local.v4pools[0].aggregation: must be a string, got a number"},
      {R"({"v4pool":[]})", "spec.local.v4pool: must be an object, got an array"},
      {R"({"v6pools":[{"pool":"fc00::1","subnet":"fc00::/64"}], "pool": true})",
       "spec.local.pool: must be a string, got a boolean"},
      {R"({"v4pools":[{"subnet":"10.0.0.0/24"}]})", "spec.local.v4pools[0].pool: required"},
      {R"({"v4pools":[{"pool":"","subnet":"10.0.0.0/24"}]})",
       "spec.local.v4pools[0].pool: required"},
      {R"({"v4pools":[{"pool":"10.0.0.1"}]})", "spec.local.v4pools[0].subnet: required"},
      {R"({"pool":"10.0.0.1"})", "spec.local.subnet: required"},
      {R"({"aggregation":"/32"})", "spec.local.pool: required"},
      {R"({})",
       "spec.local: no address pools (set v4pools, v6pools, v4pool, v6pool, or pool and subnet)"},
      {R"({"v4pools":[],"v6pools":[]})",
       "spec.local: no address pools (set v4pools, v6pools, v4pool, v6pool, or pool and subnet)"},
      {R"("10.0.0.0/24")", "spec.local: must be an object, got a string"},
      {R"(null)", "spec.local: must be an object, got null"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.local);
    EXPECT_TRUE(testing::RefusedWith(
        ParseServiceGroup(testing::ServiceGroup("localdual", Parse(row.local))),
        std::string("ServiceGroup purelb-system/localdual: ") + row.error));
  }
}

// Invalid envelopes: the object, kind, apiVersion, metadata, spec.
TEST(ServiceGroup, ObjectErrorsTable) {
  // The message about a group not named yet, and about ns/sg.
  auto unnamed = [](const char* e) { return std::string("ServiceGroup (unnamed): ") + e; };
  auto sg = [](const char* e) { return std::string("ServiceGroup ns/sg: ") + e; };
  const std::pair<const char*, std::string> rows[] = {
      {R"([])", unnamed("must be a JSON object, got an array")},
      {R"("x")", unnamed("must be a JSON object, got a string")},
      {R"(null)", unnamed("must be a JSON object, got null")},
      {R"({"kind":"ServiceGroup","spec":{}})", unnamed("metadata: required")},
      {R"({"metadata":"sg"})", unnamed("metadata: must be an object, got a string")},
      {R"({"metadata":{"namespace":"ns"}})", unnamed("metadata.name: required")},
      {R"({"metadata":{"name":7,"namespace":"ns"}})",
       unnamed("metadata.name: must be a string, got a number")},
      {R"({"metadata":{"name":"sg"}})",
       std::string("ServiceGroup sg: metadata.namespace: required")},
      {R"({"kind":"Service","metadata":{"name":"sg","namespace":"ns"}})",
       sg("kind: \"Service\" is not ServiceGroup")},
      {R"({"kind":3,"metadata":{"name":"sg","namespace":"ns"}})",
       sg("kind: must be a string, got a number")},
      {R"({"apiVersion":"purelb.io/v3","metadata":{"name":"sg","namespace":"ns"}})",
       sg("apiVersion: \"purelb.io/v3\" is not supported (want purelb.io/v1 or purelb.io/v2)")},
      {R"({"metadata":{"name":"sg","namespace":"ns","generation":-1}})",
       sg("metadata.generation: must not be negative")},
      {R"({"metadata":{"name":"sg","namespace":"ns","generation":"1"}})",
       sg("metadata.generation: must be an integer, got a string")},
      {R"({"metadata":{"name":"sg","namespace":"ns","generation":1.5}})",
       sg("metadata.generation: must be an integer, got a number")},
      {R"({"metadata":{"name":"sg","namespace":"ns","creationTimestamp":"yesterday"}})",
       sg("metadata.creationTimestamp: \"yesterday\" is not an RFC 3339 time")},
      {R"({"metadata":{"name":"sg","namespace":"ns","creationTimestamp":0}})",
       sg("metadata.creationTimestamp: must be a string, got a number")},
      {R"({"metadata":{"name":"sg","namespace":"ns","uid":false}})",
       sg("metadata.uid: must be a string, got a boolean")},
      {R"({"metadata":{"name":"sg","namespace":"ns"}})", sg("spec: required")},
      {R"({"metadata":{"name":"sg","namespace":"ns"},"spec":[]})",
       sg("spec: must be an object, got an array")},
      {R"({"metadata":{"name":"sg","namespace":"ns"},"spec":{}})", sg("spec.local: required")},
      {R"({"metadata":{"name":"sg","namespace":"ns"},"spec":{"netbox":{"url":"http://x"}}})",
       sg("spec.netbox: Netbox IPAM is not supported; use spec.local")},
  };
  for (const auto& [object, error] : rows) {
    SCOPED_TRACE(object);
    auto g = ParseServiceGroup(Parse(object));
    ASSERT_FALSE(g);
    EXPECT_EQ(g.error().message(), error);
  }
}

TEST(ServiceGroup, IgnoresStatusAndUnknownFields) {
  auto obj = testing::SeedLocalDual();
  obj["status"] = {{"anything", {1, 2, 3}}};
  obj["spec"]["local"]["skipIPv6DAD"] = true;
  obj["metadata"]["labels"] = {{"a", "b"}};
  auto g = ParseServiceGroup(obj);
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_TRUE(g->SameContent(*ParseServiceGroup(testing::SeedLocalDual())));
}

}  // namespace
}  // namespace pylon::config
