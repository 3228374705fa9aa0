#include <gtest/gtest.h>

#include "config/parse.h"
#include "config/validate.h"
#include "test_objects.h"

namespace pylon::config {
namespace {

using net::AddressRange;
using net::Family;
using net::IpAddress;
using testing::Parse;
using testing::V4Group;
using Json = nlohmann::json;

constexpr const char* kT1 = "2024-01-01T00:00:00Z";
constexpr const char* kT2 = "2024-01-02T00:00:00Z";
constexpr const char* kT3 = "2024-01-03T00:00:00Z";

ConfigKey Sg(const std::string& name) {
  return ConfigKey{ObjectKind::kServiceGroup, "purelb-system", name};
}
ConfigKey Class(const std::string& name) {
  return ConfigKey{ObjectKind::kLoadBalancerClass, "", name};
}
IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

const ObjectStatus& StatusOf(const ValidationResult& r, const ConfigKey& key) {
  for (const auto& s : r.statuses) {
    if (s.key == key) return s;
  }
  static const ObjectStatus kNone;
  ADD_FAILURE() << "no status for " << key.ToString();
  return kNone;
}

// The in-force ranges of a group, as the allocator would take them.
std::vector<AddressRange> InForce(const ValidationResult& r, const ConfigKey& key, Family f) {
  const Group* g = r.config.Find(key);
  return g == nullptr ? std::vector<AddressRange>{} : g->Ranges(f);
}

AddressRange Rg(const char* text) { return *AddressRange::Parse(text); }

TEST(Validate, SeedsTogetherAndLookups) {
  std::vector<Json> objs = {testing::SeedLocalDual(), testing::SeedLocalAddRange(),
                            testing::SeedPublicClass()};
  auto r = ValidateConfig(objs, InForceConfig{});
  ASSERT_EQ(r.statuses.size(), 3u);
  for (const auto& s : r.statuses) {
    EXPECT_TRUE(s.valid) << s.key.ToString() << ": " << s.message;
    EXPECT_EQ(s.message, "in force");
    EXPECT_EQ(s.in_force_generation, 1);
    EXPECT_EQ(s.observed_generation, 1);
  }
  EXPECT_EQ(r.statuses[0].SizeString(Family::kV4), "5");
  EXPECT_EQ(r.statuses[0].SizeString(Family::kV6), "4");
  EXPECT_EQ(r.statuses[1].SizeString(Family::kV6), "9151314442816847868");
  EXPECT_EQ(r.statuses[1].warnings.size(), 1u);
  EXPECT_EQ(r.statuses[2].SizeString(Family::kV4), "265");
  EXPECT_EQ(r.statuses[2].SizeString(Family::kV6), "18446744073709551615");

  EXPECT_NE(r.config.FindServiceGroup("purelb-system", "localdual"), nullptr);
  EXPECT_NE(r.config.FindServiceGroup("purelb", "localaddrange"), nullptr);
  EXPECT_EQ(r.config.FindServiceGroup("purelb-system", "localaddrange"), nullptr);
  EXPECT_NE(r.config.FindClass("public"), nullptr);

  struct Row {
    const char* ip;
    std::optional<ConfigKey> group;
    const char* subnet;  // "" = none
    int aggregation;
  };
  const Row rows[] = {
      {"192.168.10.226", Sg("localdual"), "192.168.10.0/24", 24},
      {"192.168.10.225", Sg("localdual"), "192.168.10.0/24", 24},
      {"192.168.10.229", Sg("localdual"), "192.168.10.0/24", 24},
      {"192.168.10.230", std::nullopt, "", 0},
      {"fc00:270:154:0:8000::5", Sg("localdual"), "fc00:270:154::/64", 64},
      {"fc00:270:154:0:8000::8", std::nullopt, "", 0},
      {"fc00:270:154:0:8100::4", ConfigKey{ObjectKind::kServiceGroup, "purelb", "localaddrange"},
       "fc00:270:154::/64", 64},
      {"fc00:270:154:0:ffff:ffff:ffff:ffff",
       ConfigKey{ObjectKind::kServiceGroup, "purelb", "localaddrange"}, "fc00:270:154::/64", 64},
      {"198.51.100.7", Class("public"), "198.51.100.0/24", 24},
      {"198.51.100.0", std::nullopt, "", 0},    // network address: never handed out
      {"198.51.100.255", std::nullopt, "", 0},  // broadcast
      {"203.0.113.15", Class("public"), "", 32},
      {"2001:db8:f00d::7", Class("public"), "2001:db8:f00d::/64", 64},
      {"2001:db8:f00d::", std::nullopt, "", 0},  // subnet-router anycast
      {"10.9.9.9", std::nullopt, "", 0},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.ip);
    auto m = r.config.FindAddress(Ip(row.ip));
    ASSERT_EQ(m.has_value(), row.group.has_value());
    if (!m) continue;
    EXPECT_EQ(m->group->key(), *row.group);
    EXPECT_TRUE(std::any_of(m->entry->ranges.begin(), m->entry->ranges.end(),
                            [&](const AddressRange& x) { return x.Contains(Ip(row.ip)); }));
    if (*row.subnet == '\0') {
      EXPECT_FALSE(m->subnet.has_value());
    } else {
      ASSERT_TRUE(m->subnet.has_value());
      EXPECT_EQ(m->subnet->ToString(), row.subnet);
    }
    EXPECT_EQ(m->aggregation_length, row.aggregation);
  }
}

TEST(Validate, StatusJsonPrintsSizesAsDecimalStrings) {
  std::vector<Json> objs = {testing::ServiceGroup(
      "big", Parse(R"({"v6pools":[{"pool":"fc00:2::/48","subnet":"fc00:2::/48"}],
                                            "v4pools":[{"pool":"10.0.0.10/24","subnet":"10.0.0.0/24"}]})"),
      kT1, 7)};
  auto r = ValidateConfig(objs, InForceConfig{});
  ASSERT_EQ(r.statuses.size(), 1u);
  EXPECT_EQ(r.statuses[0].ToJson(), Parse(R"({
    "valid": true, "message": "in force", "observedGeneration": 7, "inForceGeneration": 7,
    "warnings": ["spec.local.v4pools[0].pool: pool 10.0.0.10/24 has host bits set; using 10.0.0.10-10.0.0.255"],
    "poolSize": {"IPv4": "245", "IPv6": "1208925819614629174706175"}})"));
  objs = {V4Group("bad", "10.0.0.5-10.0.0.1", "10.0.0.0/24")};
  r = ValidateConfig(objs, InForceConfig{});
  auto j = r.statuses[0].ToJson();
  EXPECT_EQ(j["valid"], false);
  EXPECT_FALSE(j.contains("inForceGeneration"));
  EXPECT_EQ(j["poolSize"]["IPv4"], "0");
}

TEST(Validate, ServiceGroupAndClassNamesNeverCollide) {
  std::vector<Json> objs = {
      V4Group("public", "10.0.0.1-10.0.0.5", "10.0.0.0/24"),
      testing::LoadBalancerClass("public", Parse(R"({"ipv4Pools":[{"cidr":"10.1.0.0/24"}]})"))};
  auto r = ValidateConfig(objs, InForceConfig{});
  EXPECT_TRUE(r.statuses[0].valid) << r.statuses[0].message;
  EXPECT_TRUE(r.statuses[1].valid) << r.statuses[1].message;
  ASSERT_EQ(r.config.groups().size(), 2u);
  EXPECT_EQ(r.config.FindServiceGroup("purelb-system", "public")->Ranges(Family::kV4),
            std::vector<AddressRange>{Rg("10.0.0.1-10.0.0.5")});
  EXPECT_EQ(r.config.FindClass("public")->Ranges(Family::kV4),
            std::vector<AddressRange>{Rg("10.1.0.1-10.1.0.254")});
  // Same name in two namespaces: two groups.
  auto other = V4Group("public", "10.2.0.1", "10.2.0.0/24");
  other["metadata"]["namespace"] = "other";
  objs.push_back(other);
  r = ValidateConfig(objs, InForceConfig{});
  EXPECT_EQ(r.config.groups().size(), 3u);
}

// Cross-object overlap, both directions of containment: the later-created object is rejected,
// whatever the order of the candidates.
TEST(Validate, CrossObjectOverlapRejectsTheLaterObject) {
  struct Row {
    const char* name;
    Json earlier;
    Json later;
    const char* message;  // the later object's status
  };
  const Row rows[] = {
      {"earlier /24 contains later range", V4Group("a", "10.0.0.0/24", "10.0.0.0/24", kT1),
       V4Group("b", "10.0.0.10-10.0.0.20", "10.0.0.0/24", kT2),
       "generation 1 rejected: ServiceGroup purelb-system/b: spec.local.v4pools[0].pool: "
       "10.0.0.10-10.0.0.20 overlaps 10.0.0.0/24 (spec.local.v4pools[0].pool) of ServiceGroup "
       "purelb-system/a, which was created earlier"},
      {"later /24 contains earlier range", V4Group("a", "10.0.0.10-10.0.0.20", "10.0.0.0/24", kT1),
       V4Group("b", "10.0.0.0/24", "10.0.0.0/24", kT2),
       "generation 1 rejected: ServiceGroup purelb-system/b: spec.local.v4pools[0].pool: "
       "10.0.0.0/24 overlaps 10.0.0.10-10.0.0.20 (spec.local.v4pools[0].pool) of ServiceGroup "
       "purelb-system/a, which was created earlier"},
      {"partial overlap at one address", V4Group("z", "10.0.0.1-10.0.0.10", "10.0.0.0/24", kT1),
       V4Group("a", "10.0.0.10-10.0.0.12", "10.0.0.0/24", kT2),
       "generation 1 rejected: ServiceGroup purelb-system/a: spec.local.v4pools[0].pool: "
       "10.0.0.10-10.0.0.12 overlaps 10.0.0.1-10.0.0.10 (spec.local.v4pools[0].pool) of "
       "ServiceGroup purelb-system/z, which was created earlier"},
      {"class against group",
       testing::LoadBalancerClass("c", Parse(R"({"ipv4Pools":[{"cidr":"10.0.0.0/24"}]})"), kT1),
       V4Group("g", "10.0.0.200-10.0.0.210", "10.0.0.0/24", kT2),
       "generation 1 rejected: ServiceGroup purelb-system/g: spec.local.v4pools[0].pool: "
       "10.0.0.200-10.0.0.210 overlaps 10.0.0.0/24 (spec.ipv4Pools[0].cidr) of LoadBalancerClass "
       "c, which was created earlier"},
      {"same timestamp: kind then name break the tie",
       testing::LoadBalancerClass("z", Parse(R"({"ipv6Pools":[{"cidr":"fc00::/64"}]})"), kT1),
       testing::ServiceGroup("a", Parse(R"({"v6pools":[{"pool":"fc00::5","subnet":"fc00::/64"}]})"),
                             kT1),
       "generation 1 rejected: ServiceGroup purelb-system/a: spec.local.v6pools[0].pool: fc00::5 "
       "overlaps fc00::/64 (spec.ipv6Pools[0].cidr) of LoadBalancerClass z, which was created "
       "earlier"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto earlier_key = ParseAddressSource(row.earlier)->key();
    auto later_key = ParseAddressSource(row.later)->key();
    for (bool reversed : {false, true}) {
      std::vector<Json> objs = reversed ? std::vector<Json>{row.later, row.earlier}
                                        : std::vector<Json>{row.earlier, row.later};
      auto r = ValidateConfig(objs, InForceConfig{});
      EXPECT_TRUE(StatusOf(r, earlier_key).valid);
      const auto& s = StatusOf(r, later_key);
      EXPECT_FALSE(s.valid);
      EXPECT_EQ(s.message, row.message);
      EXPECT_FALSE(s.in_force_generation.has_value());
      EXPECT_EQ(s.size_v4, 0u);
      EXPECT_EQ(r.config.Find(later_key), nullptr);
      EXPECT_NE(r.config.Find(earlier_key), nullptr);
    }
  }
}

TEST(Validate, OverlapWithinOneObjectIsRejected) {
  std::vector<Json> objs = {testing::ServiceGroup(
      "one", Parse(R"({"v4pools":[{"pool":"10.0.0.10-10.0.0.20","subnet":"10.0.0.0/24"},
                                  {"pool":"10.0.0.0/24","subnet":"10.0.0.0/24"}]})"))};
  auto r = ValidateConfig(objs, InForceConfig{});
  ASSERT_EQ(r.statuses.size(), 1u);
  EXPECT_FALSE(r.statuses[0].valid);
  EXPECT_EQ(r.statuses[0].message,
            "generation 1 rejected: ServiceGroup purelb-system/one: spec.local.v4pools[1].pool: "
            "10.0.0.0/24 overlaps spec.local.v4pools[0].pool (10.0.0.10-10.0.0.20)");
  EXPECT_TRUE(r.config.empty());
}

TEST(Validate, AdjacentRangesDoNotOverlap) {
  std::vector<Json> objs = {V4Group("a", "10.0.0.1-10.0.0.10", "10.0.0.0/24", kT1),
                            V4Group("b", "10.0.0.11-10.0.0.20", "10.0.0.0/24", kT2)};
  auto r = ValidateConfig(objs, InForceConfig{});
  EXPECT_TRUE(r.statuses[0].valid);
  EXPECT_TRUE(r.statuses[1].valid);
}

// Two pools that share only the subnet's network/broadcast addresses do not overlap: those
// addresses are never handed out.
TEST(Validate, ExcludedAddressesDoNotCountAsOverlap) {
  std::vector<Json> objs = {V4Group("a", "10.0.0.0/24", "10.0.0.0/24", kT1),
                            V4Group("b", "10.0.0.255", "10.0.0.0/16", kT2)};
  auto r = ValidateConfig(objs, InForceConfig{});
  EXPECT_TRUE(r.statuses[0].valid) << r.statuses[0].message;
  EXPECT_TRUE(r.statuses[1].valid) << r.statuses[1].message;
  EXPECT_EQ(r.config.FindAddress(Ip("10.0.0.255"))->group->key(), Sg("b"));
}

// "The last valid config stays in force", as scenario tables: each step is one validation round
// fed with the previous round's in-force config.
TEST(Validate, LastValidConfigStaysInForce) {
  struct Expect {
    ConfigKey key;
    bool valid;
    std::optional<std::int64_t> in_force_generation;
    std::vector<const char*> v4;  // in-force ranges
    const char* message;          // "" = don't check
  };
  struct Step {
    const char* what;
    std::vector<Json> objects;
    std::vector<Expect> expect;
  };
  struct Scenario {
    const char* name;
    std::vector<Step> steps;
  };
  // An object in force at `generation` with the IPv4 ranges `v4`; `message` "" = don't check.
  auto in_force = [](const char* name, std::int64_t generation, std::vector<const char*> v4,
                     const char* message = "in force") {
    return Expect{Sg(name), true, generation, std::move(v4), message};
  };
  // An object refused; `kept` is the generation that stays in force (with `v4`), if any.
  auto refused = [](const char* name, std::optional<std::int64_t> kept, std::vector<const char*> v4,
                    const char* message = "") {
    return Expect{Sg(name), false, kept, std::move(v4), message};
  };
  // A step with one object and one expectation.
  auto one_object = [](const char* what, Json object, Expect expect) {
    return Step{what, {std::move(object)}, {std::move(expect)}};
  };
  const Json a1 = V4Group("a", "10.0.0.1-10.0.0.10", "10.0.0.0/24", kT1, 1);
  const Json b1 = V4Group("b", "10.0.0.20-10.0.0.30", "10.0.0.0/24", kT2, 1);
  // The first step of most scenarios: a1 alone, or a1 and b1, accepted.
  const Step a_valid = {"a valid", {a1}, {in_force("a", 1, {"10.0.0.1-10.0.0.10"})}};
  const Step ab_valid = {
      "a and b valid",
      {a1, b1},
      {in_force("a", 1, {"10.0.0.1-10.0.0.10"}), in_force("b", 1, {"10.0.0.20-10.0.0.30"})}};
  const Scenario scenarios[] = {
      {"edited into something invalid, then fixed",
       {a_valid,
        one_object(
            "a edited: pool outside subnet",
            V4Group("a", "10.0.1.1-10.0.1.10", "10.0.0.0/24", kT1, 2),
            refused(
                "a", 1, {"10.0.0.1-10.0.0.10"},
                "generation 2 rejected: ServiceGroup purelb-system/a: spec.local.v4pools[0].pool: "
                "10.0.1.1-10.0.1.10 is outside subnet 10.0.0.0/24; generation 1 stays in force")),
        one_object(
            "a edited again: wrong type",
            testing::ServiceGroup("a", Parse(R"({"v4pools":"oops"})"), kT1, 3),
            refused("a", 1, {"10.0.0.1-10.0.0.10"},
                    "generation 3 rejected: ServiceGroup purelb-system/a: spec.local.v4pools: "
                    "must be an array, got a string; generation 1 stays in force")),
        one_object("a fixed", V4Group("a", "10.0.0.1-10.0.0.5", "10.0.0.0/24", kT1, 4),
                   in_force("a", 4, {"10.0.0.1-10.0.0.5"}))}},
      {"earlier object edited into an overlap keeps its old version",
       {ab_valid,
        {"a grows over b",
         {V4Group("a", "10.0.0.1-10.0.0.25", "10.0.0.0/24", kT1, 2), b1},
         {refused(
              "a", 1, {"10.0.0.1-10.0.0.10"},
              "generation 2 rejected: ServiceGroup purelb-system/a: spec.local.v4pools[0].pool: "
              "10.0.0.1-10.0.0.25 overlaps 10.0.0.20-10.0.0.30 (spec.local.v4pools[0].pool) "
              "of ServiceGroup purelb-system/b, which is in force; generation 1 stays in "
              "force"),
          in_force("b", 1, {"10.0.0.20-10.0.0.30"})}},
        one_object("b deleted: a's edit goes through",
                   V4Group("a", "10.0.0.1-10.0.0.25", "10.0.0.0/24", kT1, 2),
                   in_force("a", 2, {"10.0.0.1-10.0.0.25"}))}},
      {"later object edited into an overlap keeps its old version",
       {ab_valid,
        {"b edited to contain a",
         {a1, V4Group("b", "10.0.0.0/24", "10.0.0.0/24", kT2, 2)},
         {in_force("a", 1, {"10.0.0.1-10.0.0.10"}),
          refused(
              "b", 1, {"10.0.0.20-10.0.0.30"},
              "generation 2 rejected: ServiceGroup purelb-system/b: spec.local.v4pools[0].pool: "
              "10.0.0.0/24 overlaps 10.0.0.1-10.0.0.10 (spec.local.v4pools[0].pool) of "
              "ServiceGroup purelb-system/a, which is in force; generation 1 stays in force")}}}},
      {"a rejected object is accepted once the overlap goes away",
       {{"b overlaps a",
         {a1, V4Group("b", "10.0.0.0/24", "10.0.0.0/24", kT2, 1)},
         {in_force("a", 1, {"10.0.0.1-10.0.0.10"}, ""), refused("b", std::nullopt, {})}},
        {"a moves away",
         {V4Group("a", "10.1.0.1", "10.1.0.0/24", kT1, 2),
          V4Group("b", "10.0.0.0/24", "10.0.0.0/24", kT2, 1)},
         {in_force("a", 2, {"10.1.0.1"}, ""), in_force("b", 1, {"10.0.0.1-10.0.0.254"})}}}},
      {"an edit may take addresses another edit releases in the same round",
       {ab_valid,
        {"a moves into b's old space, b moves on",
         {V4Group("a", "10.0.0.20-10.0.0.25", "10.0.0.0/24", kT1, 2),
          V4Group("b", "10.0.0.40-10.0.0.50", "10.0.0.0/24", kT2, 2)},
         {in_force("a", 2, {"10.0.0.20-10.0.0.25"}), in_force("b", 2, {"10.0.0.40-10.0.0.50"})}}}},
      {"a new object never displaces one in force, even if created earlier",
       {{"b valid; a invalid",
         {V4Group("a", "bogus", "10.0.0.0/24", kT1, 1), b1},
         {refused("a", std::nullopt, {}), in_force("b", 1, {"10.0.0.20-10.0.0.30"}, "")}},
        {"a fixed into b's space",
         {V4Group("a", "10.0.0.25", "10.0.0.0/24", kT1, 2), b1},
         {refused(
              "a", std::nullopt, {},
              "generation 2 rejected: ServiceGroup purelb-system/a: spec.local.v4pools[0].pool: "
              "10.0.0.25 overlaps 10.0.0.20-10.0.0.30 (spec.local.v4pools[0].pool) of "
              "ServiceGroup purelb-system/b, which is in force"),
          in_force("b", 1, {"10.0.0.20-10.0.0.30"})}}}},
      {"metadata-only change keeps the object in force with its new generation",
       {a_valid, one_object("same spec, generation 5",
                            V4Group("a", "10.0.0.1-10.0.0.10", "10.0.0.0/24", kT1, 5),
                            in_force("a", 5, {"10.0.0.1-10.0.0.10"}))}},
      {"an invalid new object that was never valid",
       {one_object(
           "never valid", V4Group("a", "10.0.0.9-10.0.0.1", "10.0.0.0/24", kT1, 1),
           refused(
               "a", std::nullopt, {},
               "generation 1 rejected: ServiceGroup purelb-system/a: spec.local.v4pools[0].pool: "
               "10.0.0.9-10.0.0.1: start 10.0.0.9 is after end 10.0.0.1"))}},
  };
  for (const auto& sc : scenarios) {
    SCOPED_TRACE(sc.name);
    InForceConfig config;
    for (const auto& step : sc.steps) {
      SCOPED_TRACE(step.what);
      auto r = ValidateConfig(step.objects, config);
      ASSERT_EQ(r.statuses.size(), step.objects.size());
      for (const auto& e : step.expect) {
        SCOPED_TRACE(e.key.ToString());
        const auto& s = StatusOf(r, e.key);
        EXPECT_EQ(s.valid, e.valid) << s.message;
        EXPECT_EQ(s.in_force_generation, e.in_force_generation);
        std::vector<AddressRange> want;
        for (const char* x : e.v4) want.push_back(Rg(x));
        EXPECT_EQ(InForce(r, e.key, Family::kV4), want);
        EXPECT_EQ(net::ToDecimal(s.size_v4), net::ToDecimal([&] {
                    net::Uint128 n = 0;
                    for (const auto& x : want) n += x.Size();
                    return n;
                  }()));
        if (*e.message != '\0') {
          EXPECT_EQ(s.message, e.message);
        }
      }
      // Deleted objects (not among the candidates) are never in force.
      EXPECT_LE(r.config.groups().size(), step.objects.size());
      config = r.config;
    }
  }
}

TEST(Validate, IsIdempotent) {
  std::vector<Json> objs = {testing::SeedLocalDual(), testing::SeedPublicClass(),
                            V4Group("b", "192.168.10.228", "192.168.10.0/24", kT3),
                            V4Group("c", "nonsense", "192.168.10.0/24", kT3)};
  auto r1 = ValidateConfig(objs, InForceConfig{});
  auto r2 = ValidateConfig(objs, r1.config);
  ASSERT_EQ(r1.statuses.size(), r2.statuses.size());
  for (std::size_t i = 0; i < r1.statuses.size(); ++i) {
    EXPECT_EQ(r1.statuses[i].valid, r2.statuses[i].valid);
    EXPECT_EQ(r1.statuses[i].message, r2.statuses[i].message);
  }
  EXPECT_EQ(r1.config.groups().size(), 2u);
  EXPECT_EQ(r2.config.groups().size(), 2u);
}

TEST(Validate, GarbageCandidatesNeverCrash) {
  std::vector<Json> objs = {Parse("null"),
                            Parse("42"),
                            Parse(R"("ServiceGroup")"),
                            Parse("[1,2]"),
                            Parse(R"({"kind":"Foo","metadata":{"name":"x"}})"),
                            Parse(R"({"kind":"ServiceGroup","metadata":{"name":"x","namespace":"n"},
                                      "spec":{"local":{"v4pools":[{"pool":[],"subnet":{}}]}}})"),
                            testing::SeedLocalDual()};
  auto r = ValidateConfig(objs, InForceConfig{});
  ASSERT_EQ(r.statuses.size(), objs.size());
  for (std::size_t i = 0; i + 1 < objs.size(); ++i) {
    EXPECT_FALSE(r.statuses[i].valid);
    EXPECT_FALSE(r.statuses[i].message.empty());
  }
  EXPECT_EQ(r.statuses[4].message,
            "rejected: kind: \"Foo\" is not ServiceGroup or LoadBalancerClass");
  EXPECT_EQ(r.statuses[5].message,
            "rejected: ServiceGroup n/x: spec.local.v4pools[0].pool: must be a string, got an "
            "array");
  EXPECT_TRUE(r.statuses.back().valid);
  EXPECT_EQ(r.config.groups().size(), 1u);
}

TEST(Validate, DuplicateCandidateIsRejected) {
  std::vector<Json> objs = {V4Group("a", "10.0.0.1", "10.0.0.0/24"),
                            V4Group("a", "10.0.0.2", "10.0.0.0/24")};
  auto r = ValidateConfig(objs, InForceConfig{});
  EXPECT_TRUE(r.statuses[0].valid);
  EXPECT_FALSE(r.statuses[1].valid);
  EXPECT_EQ(r.statuses[1].message,
            "generation 1 rejected: ServiceGroup purelb-system/a: duplicate of another candidate "
            "with the same kind, namespace and name");
  EXPECT_EQ(r.config.Find(Sg("a"))->Ranges(Family::kV4), std::vector<AddressRange>{Rg("10.0.0.1")});
}

TEST(Validate, MissingCreationTimestampSortsLast) {
  Json undated = V4Group("a", "10.0.0.5", "10.0.0.0/24");
  undated["metadata"].erase("creationTimestamp");
  std::vector<Json> objs = {undated, V4Group("z", "10.0.0.0/24", "10.0.0.0/24", kT3)};
  auto r = ValidateConfig(objs, InForceConfig{});
  EXPECT_FALSE(StatusOf(r, Sg("a")).valid);
  EXPECT_TRUE(StatusOf(r, Sg("z")).valid);
}

}  // namespace
}  // namespace pylon::config
