// ServiceGroup purelb.io/v2 (PureLB 0.15-0.17) and the choice between v1 and v2 rules
// (spec.writtenAs, else apiVersion): scenario tables of accepted specs with what they become,
// and of refused specs with the exact message.
#include <gtest/gtest.h>

#include "config/parse.h"
#include "config/validate.h"
#include "test_objects.h"

// Scenario rows name only the fields they care about (designated initializers).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace pylon::config {
namespace {

using net::AddressRange;
using net::Family;
using testing::Parse;

AddressRange R(const char* text) { return *AddressRange::Parse(text); }

std::vector<std::string> Paths(const std::vector<PoolEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.path);
  return out;
}

TEST(ServiceGroupV2, AcceptedSpecsTable) {
  // Rows name what differs from the defaults (designated initializers).
  struct Row {
    const char* name;
    const char* spec;
    AnnounceMode mode;
    std::vector<std::string> v4_paths = {};  // entries in the order tried
    std::vector<std::string> v6_paths = {};
    bool skip_dad = false, multi = false, balance = false;
    std::vector<std::string> namespaces = {};
    bool enforce = false, ns_default = false;
    std::size_t warnings = 0;
  };
  const Row rows[] = {
      {.name = "local, one list",
       .spec =
           R"({"local":{"v4pools":[{"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"}]}})",
       .mode = AnnounceMode::kLocal,
       .v4_paths = {"spec.local.v4pools[0].pool"}},
      {.name = "remote, dual stack, aggregation",
       .spec = R"({"remote":{"v4pools":[{"pool":"203.0.113.0/28","subnet":"203.0.113.0/24",
                                 "aggregation":"/32"}],
                     "v6pools":[{"pool":"2001:db8:5::/120","subnet":"2001:db8:5::/64",
                                 "aggregation":"/128"}]}})",
       .mode = AnnounceMode::kRemote,
       .v4_paths = {"spec.remote.v4pools[0].pool"},
       .v6_paths = {"spec.remote.v6pools[0].pool"}},
      {.name = "single form appended after the list (PureLB v2 order)",
       .spec = R"({"local":{"v4pool":{"pool":"192.0.2.50-192.0.2.59","subnet":"192.0.2.0/24"},
                    "v4pools":[{"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"},
                               {"pool":"192.0.2.30-192.0.2.39","subnet":"192.0.2.0/24"}]}})",
       .mode = AnnounceMode::kLocal,
       .v4_paths = {"spec.local.v4pools[0].pool", "spec.local.v4pools[1].pool",
                    "spec.local.v4pool.pool"}},
      {.name = "flags as the CRD defaults them",
       .spec = R"({"local":{"v6pool":{"pool":"fd00::10-fd00::1f","subnet":"fd00::/64"},
                    "skipIPv6DAD":true,"multiPool":false,"balancePools":false},
           "enforceNamespaces":false,"namespaceDefault":false})",
       .mode = AnnounceMode::kLocal,
       .v6_paths = {"spec.local.v6pool.pool"},
       .skip_dad = true},
      {.name = "multiPool and balancePools are kept; both: a warning",
       .spec = R"({"remote":{"v4pools":[{"pool":"198.51.100.0/29","subnet":"198.51.100.0/24"}],
                     "multiPool":true,"balancePools":true}})",
       .mode = AnnounceMode::kRemote,
       .v4_paths = {"spec.remote.v4pools[0].pool"},
       .multi = true,
       .balance = true,
       .warnings = 1},
      {.name = "namespaces de-duplicated and sorted, enforced, default",
       .spec = R"({"local":{"v4pools":[{"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"}]},
           "namespaces":["team-b","team-a","team-b"],"enforceNamespaces":true,
           "namespaceDefault":true})",
       .mode = AnnounceMode::kLocal,
       .v4_paths = {"spec.local.v4pools[0].pool"},
       .namespaces = {"team-a", "team-b"},
       .enforce = true,
       .ns_default = true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    auto g = ParseServiceGroup(testing::V2Group("g", Parse(row.spec)));
    ASSERT_TRUE(g) << g.error().message();
    EXPECT_EQ(g->version, PurelbVersion::kV2);
    EXPECT_EQ(g->mode, row.mode);
    EXPECT_EQ(Paths(g->v4), row.v4_paths);
    EXPECT_EQ(Paths(g->v6), row.v6_paths);
    EXPECT_EQ(g->skip_ipv6_dad, row.skip_dad);
    EXPECT_EQ(g->multi_pool, row.multi);
    EXPECT_EQ(g->balance_pools, row.balance);
    EXPECT_EQ(g->namespaces, row.namespaces);
    EXPECT_EQ(g->enforce_namespaces, row.enforce);
    EXPECT_EQ(g->namespace_default, row.ns_default);
    EXPECT_EQ(g->warnings.size(), row.warnings);
  }
}

TEST(ServiceGroupV2, RangesAndAggregationAreTheV1Rules) {
  auto g = ParseServiceGroup(testing::V2Group("g", Parse(R"({"remote":{
      "v4pools":[{"pool":"203.0.113.10/24","subnet":"203.0.113.0/24","aggregation":"/32"}]}})")));
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->Ranges(Family::kV4), std::vector<AddressRange>{R("203.0.113.10-203.0.113.254")});
  EXPECT_EQ(g->v4[0].AggregationLength(), 32);
  ASSERT_EQ(g->warnings.size(), 1u);  // host bits
}

TEST(ServiceGroupV2, RefusedSpecsTable) {
  struct Row {
    const char* spec;
    const char* error;
  };
  const Row rows[] = {
      {R"({})", "spec: exactly one of local, remote or external must be set (found none)"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
           "remote":{"v4pools":[{"pool":"203.0.113.1","subnet":"203.0.113.0/24"}]}})",
       "spec: exactly one of local, remote or external must be set (found local, remote)"},
      {R"({"external":{"provider":"netbox","announce":"local"}})",
       "spec.external: external IPAM (provider netbox) is not supported by Pylon; use spec.local "
       "or spec.remote"},
      {R"({"external":{}})",
       "spec.external: external IPAM is not supported by Pylon; use spec.local or spec.remote"},
      {R"({"netbox":{"url":"http://netbox"}})",
       "spec.netbox: Netbox IPAM is not supported (PureLB 0.17 replaced it by spec.external, "
       "which Pylon does not support either); use spec.local or spec.remote"},
      {R"({"local":{}})", "spec.local: no address pools (set v4pools, v6pools, v4pool or v6pool)"},
      {R"({"remote":null})", "spec.remote: must be an object, got null"},
      {R"({"local":{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}})",
       "spec.local.pool: the single-pool form is purelb.io/v1 only; use v4pools / v6pools"},
      {R"({"remote":{"v4pools":[{"pool":"203.0.113.1","subnet":"198.51.100.0/24"}]}})",
       "spec.remote.v4pools[0].pool: 203.0.113.1 is outside subnet 198.51.100.0/24"},
      {R"({"remote":{"v6pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]}})",
       "spec.remote.v6pools[0].pool: 192.0.2.1 is IPv4 in an IPv6 list"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24",
                                "aggregation":"/33"}]}})",
       "spec.local.v4pools[0].aggregation: \"/33\" is not a valid aggregation for IPv4 (want "
       "default or /8 to /32)"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}],
                    "multiPool":"yes"}})",
       "spec.local.multiPool: must be a boolean, got a string"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
           "namespaces":"team-a"})",
       "spec.namespaces: must be an array, got a string"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
           "namespaces":["Team-A"]})",
       "spec.namespaces[0]: \"Team-A\" is not a namespace name (a DNS label: at most 63 of a-z, "
       "0-9 and '-', starting and ending alphanumeric)"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
           "namespaces":["ok",3]})",
       "spec.namespaces[1]: must be a string, got a number"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
           "enforceNamespaces":true})",
       "spec.enforceNamespaces: requires a non-empty spec.namespaces (it would enforce nothing)"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
           "namespaces":[],"namespaceDefault":true})",
       "spec.namespaceDefault: requires a non-empty spec.namespaces (it would default nothing)"},
      {R"({"local":{"v4pools":[{"pool":"192.0.2.0/25","subnet":"192.0.2.0/24"}],
                    "v4pool":{"pool":"192.0.2.100","subnet":"192.0.2.0/24"}}})",
       "spec.local.v4pool.pool: 192.0.2.100 overlaps spec.local.v4pools[0].pool (192.0.2.0/25)"},
      {R"({"writtenAs":"v3","local":{}})", "spec.writtenAs: \"v3\" is not v1 or v2"},
  };
  std::string many = R"({"local":{"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]},
                          "namespaces":[)";
  for (int i = 0; i <= 1024; ++i) many += (i == 0 ? "\"ns" : ",\"ns") + std::to_string(i) + "\"";
  many += "]}";
  EXPECT_TRUE(testing::RefusedWith(ParseServiceGroup(testing::V2Group("g", Parse(many.c_str()))),
                                   "ServiceGroup purelb-system/g: spec.namespaces: more than 1024 "
                                   "entries"));
  for (const Row& row : rows) {
    SCOPED_TRACE(row.spec);
    EXPECT_TRUE(testing::RefusedWith(ParseServiceGroup(testing::V2Group("g", Parse(row.spec))),
                                     std::string("ServiceGroup purelb-system/g: ") + row.error));
  }
}

// spec.writtenAs decides over apiVersion: the API server rewrites apiVersion to whatever version
// the reader asked for (conversion None), while writtenAs keeps the version written.
TEST(ServiceGroupV2, WrittenAsDecidesWhichRulesApply) {
  struct Row {
    const char* name;
    const char* api_version;
    const char* written_as;  // nullptr: absent
    const char* local;       // spec.local
    bool ok;
    PurelbVersion version;
    AnnounceMode mode;
  };
  const char* flat = R"({"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"})";
  const char* list = R"({"v4pools":[{"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"}]})";
  const Row rows[] = {
      {"v1 object read as v1", "purelb.io/v1", "v1", list, true, PurelbVersion::kV1,
       AnnounceMode::kLocalOrVirtual},
      {"v1 object read as v2 keeps v1 behaviour", "purelb.io/v2", "v1", list, true,
       PurelbVersion::kV1, AnnounceMode::kLocalOrVirtual},
      {"v1 flat form read as v2", "purelb.io/v2", "v1", flat, true, PurelbVersion::kV1,
       AnnounceMode::kLocalOrVirtual},
      {"v2 object read as v1 keeps v2 behaviour", "purelb.io/v1", "v2", list, true,
       PurelbVersion::kV2, AnnounceMode::kLocal},
      {"v2 object with the flat form is refused whatever it is read as", "purelb.io/v1", "v2", flat,
       false, PurelbVersion::kV2, AnnounceMode::kLocal},
      {"no writtenAs (created before it existed): apiVersion v1", "purelb.io/v1", nullptr, flat,
       true, PurelbVersion::kV1, AnnounceMode::kLocalOrVirtual},
      {"no writtenAs, apiVersion v2", "purelb.io/v2", nullptr, list, true, PurelbVersion::kV2,
       AnnounceMode::kLocal},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    nlohmann::json o = testing::ServiceGroup("g", Parse(row.local));
    o["apiVersion"] = row.api_version;
    if (row.written_as != nullptr) o["spec"]["writtenAs"] = row.written_as;
    auto g = ParseServiceGroup(o);
    ASSERT_EQ(static_cast<bool>(g), row.ok) << (g ? "" : g.error().message());
    if (!g) continue;
    EXPECT_EQ(g->version, row.version);
    EXPECT_EQ(g->mode, row.mode);
    EXPECT_EQ(g->Size(Family::kV4), 10u);
  }
}

TEST(ServiceGroupV2, V1ObjectsRefuseTheV2OnlyKinds) {
  for (const char* kind : {"remote", "external"}) {
    SCOPED_TRACE(kind);
    nlohmann::json o = testing::ServiceGroup(
        "g", Parse(R"({"v4pools":[{"pool":"192.0.2.1","subnet":"192.0.2.0/24"}]})"));
    o["spec"]["writtenAs"] = "v1";
    o["spec"][kind] = nlohmann::json::object();
    auto g = ParseServiceGroup(o);
    ASSERT_FALSE(g);
    EXPECT_EQ(g.error().message(),
              std::string("ServiceGroup purelb-system/g: spec.") + kind +
                  ": is a purelb.io/v2 field, and this object follows purelb.io/v1 "
                  "(spec.writtenAs); write it as apiVersion purelb.io/v2");
  }
}

// A change of a v2-only setting is a change of content (the allocator re-resolves Services).
TEST(ServiceGroupV2, SameContentSeesEveryV2Field) {
  const nlohmann::json base = Parse(R"({"local":{"v4pools":[
      {"pool":"192.0.2.10-192.0.2.19","subnet":"192.0.2.0/24"}]},"namespaces":["a"]})");
  auto a = ParseServiceGroup(testing::V2Group("g", base));
  ASSERT_TRUE(a) << a.error().message();
  std::vector<nlohmann::json> variants;
  for (const char* flag : {"skipIPv6DAD", "multiPool", "balancePools"}) {
    nlohmann::json v = base;
    v["local"][flag] = true;
    variants.push_back(v);
  }
  for (const char* flag : {"enforceNamespaces", "namespaceDefault"}) {
    nlohmann::json v = base;
    v[flag] = true;
    variants.push_back(v);
  }
  nlohmann::json other_ns = base;
  other_ns["namespaces"] = {"b"};
  variants.push_back(other_ns);
  nlohmann::json remote = base;
  remote["remote"] = remote["local"];
  remote.erase("local");
  variants.push_back(remote);
  nlohmann::json as_v1 = base;
  as_v1.erase("namespaces");
  variants.push_back(as_v1);
  for (const auto& v : variants) {
    SCOPED_TRACE(v.dump());
    auto b = ParseServiceGroup(testing::V2Group("g", v));
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_FALSE(a->SameContent(*b));
  }
  auto same = ParseServiceGroup(testing::V2Group("g", base));
  EXPECT_TRUE(a->SameContent(*same));
}

// A v1 and a v2 group side by side in one config; the external one is refused with its reason
// in the status, the others are in force.
TEST(ServiceGroupV2, ValidateConfigTakesV1AndV2Together) {
  std::vector<nlohmann::json> candidates = {
      testing::V4Group("old", "192.0.2.10-192.0.2.19", "192.0.2.0/24"),
      testing::V2Group("new", Parse(R"({"remote":{"v4pools":[
          {"pool":"203.0.113.0/28","subnet":"203.0.113.0/24","aggregation":"/32"}]}})")),
      testing::V2Group("ipam",
                       Parse(R"({"external":{"provider":"infoblox","announce":"remote"}})")),
  };
  ValidationResult vr = ValidateConfig(candidates, InForceConfig());
  const Group* old_g = vr.config.FindServiceGroup("purelb-system", "old");
  const Group* new_g = vr.config.FindServiceGroup("purelb-system", "new");
  ASSERT_NE(old_g, nullptr);
  ASSERT_NE(new_g, nullptr);
  EXPECT_EQ(old_g->version, PurelbVersion::kV1);
  EXPECT_EQ(new_g->version, PurelbVersion::kV2);
  EXPECT_EQ(new_g->mode, AnnounceMode::kRemote);
  EXPECT_EQ(vr.config.FindServiceGroup("purelb-system", "ipam"), nullptr);
  ASSERT_EQ(vr.statuses.size(), 3u);
  EXPECT_TRUE(vr.statuses[0].valid);
  EXPECT_TRUE(vr.statuses[1].valid);
  EXPECT_FALSE(vr.statuses[2].valid);
  EXPECT_NE(vr.statuses[2].message.find("external IPAM (provider infoblox) is not supported"),
            std::string::npos)
      << vr.statuses[2].message;
}

}  // namespace
}  // namespace pylon::config
