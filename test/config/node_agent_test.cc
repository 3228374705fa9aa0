#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/parse.h"
#include "test_objects.h"

namespace pylon::config {
namespace {

using testing::Parse;

nlohmann::json Agent(nlohmann::json local) {
  nlohmann::json o = {{"apiVersion", "purelb.io/v1"},
                      {"kind", "LBNodeAgent"},
                      {"metadata", {{"name", "default"}, {"namespace", "purelb-system"}}}};
  if (!local.is_discarded()) o["spec"] = {{"local", std::move(local)}};
  return o;
}

TEST(NodeAgent, DefaultManifest) {
  auto c = ParseNodeAgent(Agent(Parse(R"({"localint":"default","extlbint":"kube-lb0"})")));
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->meta.key.ToString(), "LBNodeAgent purelb-system/default");
  EXPECT_FALSE(c->local_interface.has_value());
  EXPECT_EQ(c->external_interface, "kube-lb0");
  EXPECT_FALSE(c->send_garp);
  EXPECT_TRUE(c->interfaces.empty());
}

TEST(NodeAgent, MissingSpecMeansDefaults) {
  auto c = ParseNodeAgent(Agent(nlohmann::json(nlohmann::json::value_t::discarded)));
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_FALSE(c->local_interface.has_value());
  EXPECT_EQ(c->external_interface, "kube-lb0");
  c = ParseNodeAgent(Agent(Parse("{}")));
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->external_interface, "kube-lb0");
}

TEST(NodeAgent, PatternsAndOptions) {
  auto c = ParseNodeAgent(Agent(Parse(
      R"({"localint":"enp1s0","extlbint":"lb-virt0","sendgarp":true,
          "interfaces":["^eth[0-9]+$","bond0"]})")));
  ASSERT_TRUE(c) << c.error().message();
  ASSERT_TRUE(c->local_interface.has_value());
  EXPECT_EQ(c->local_interface->text(), "enp1s0");
  // PureLB semantics: the pattern is searched anywhere in the name.
  EXPECT_TRUE(c->local_interface->Matches("enp1s0"));
  EXPECT_TRUE(c->local_interface->Matches("enp1s0.100"));
  EXPECT_FALSE(c->local_interface->Matches("eth0"));
  EXPECT_EQ(c->external_interface, "lb-virt0");
  EXPECT_TRUE(c->send_garp);
  ASSERT_EQ(c->interfaces.size(), 2u);
  EXPECT_TRUE(c->interfaces[0].Matches("eth12"));
  EXPECT_FALSE(c->interfaces[0].Matches("veth12"));
  EXPECT_TRUE(c->interfaces[1].Matches("bond0"));
}

TEST(NodeAgent, ErrorsTable) {
  struct Row {
    const char* local;
    const char* error;  // after "LBNodeAgent purelb-system/default: "; prefix match for regexes
    bool prefix;
  };
  const Row rows[] = {
      {R"({"localint":"("})",
       "spec.local.localint: \"(\" is not a valid regular expression: ", true},
      {R"({"localint":7})", "spec.local.localint: must be a string, got a number", false},
      {R"({"extlbint":"this-name-is-16c"})",
       "spec.local.extlbint: \"this-name-is-16c\" is not a valid interface name (1-15 "
       "characters, no '/', ':' or whitespace, not \".\" or \"..\")",
       false},
      {R"({"extlbint":"kube/lb0"})",
       "spec.local.extlbint: \"kube/lb0\" is not a valid interface name (1-15 characters, no "
       "'/', ':' or whitespace, not \".\" or \"..\")",
       false},
      {R"({"extlbint":".."})",
       "spec.local.extlbint: \"..\" is not a valid interface name (1-15 characters, no '/', ':' "
       "or whitespace, not \".\" or \"..\")",
       false},
      {R"({"extlbint":"kube lb"})",
       "spec.local.extlbint: \"kube lb\" is not a valid interface name (1-15 characters, no "
       "'/', ':' or whitespace, not \".\" or \"..\")",
       false},
      {R"({"extlbint":null})", "spec.local.extlbint: must be a string, got null", false},
      {R"({"sendgarp":"true"})", "spec.local.sendgarp: must be a boolean, got a string", false},
      {R"({"interfaces":"eth1"})", "spec.local.interfaces: must be an array, got a string", false},
      {R"({"interfaces":["eth1",2]})", "spec.local.interfaces[1]: must be a string, got a number",
       false},
      {R"({"interfaces":[""]})", "spec.local.interfaces[0]: required", false},
      {R"({"interfaces":["eth1","[a-"]})",
       "spec.local.interfaces[1]: \"[a-\" is not a valid regular expression: ", true},
      {R"("default")", "spec.local: must be an object, got a string", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.local);
    auto c = ParseNodeAgent(Agent(Parse(row.local)));
    ASSERT_FALSE(c);
    std::string want = std::string("LBNodeAgent purelb-system/default: ") + row.error;
    if (row.prefix) {
      EXPECT_THAT(c.error().message(), ::testing::StartsWith(want));
    } else {
      EXPECT_EQ(c.error().message(), want);
    }
  }
  std::string long_pattern(300, 'a');
  auto c = ParseNodeAgent(Agent({{"localint", long_pattern}}));
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(),
            "LBNodeAgent purelb-system/default: spec.local.localint: pattern is longer than 256 "
            "characters");
}

TEST(NodeAgent, InterfaceNames) {
  for (const char* ok : {"kube-lb0", "a", "123456789012345", "eth0.100", "lb_0"}) {
    EXPECT_TRUE(IsValidInterfaceName(ok)) << ok;
  }
  for (const char* bad : {"", ".", "..", "1234567890123456", "a/b", "a:b", "a b", "a\tb"}) {
    EXPECT_FALSE(IsValidInterfaceName(bad)) << bad;
  }
}

nlohmann::json AgentV2(nlohmann::json spec) {
  nlohmann::json o = Agent(nlohmann::json(nlohmann::json::value_t::discarded));
  o["apiVersion"] = "purelb.io/v2";
  o["spec"] = std::move(spec);
  return o;
}

// purelb.io/v2 LBNodeAgents: the renamed fields, exact interface names, garpConfig.
TEST(NodeAgent, V2Table) {
  struct Row {
    const char* name;
    const char* spec;
    const char* local_interface;  // nullptr: default
    const char* dummy;
    bool send_garp;
    std::vector<std::string> interfaces_match, interfaces_no_match;
    std::size_t warnings;
  };
  const Row rows[] = {
      {"the shipped default: no garpConfig",
       R"({"local":{"localInterface":"default",
       "dummyInterface":"kube-lb0"}})",
       nullptr,
       "kube-lb0",
       false,
       {},
       {},
       0},
      {"no local at all: defaults", R"({})", nullptr, "kube-lb0", false, {}, {}, 0},
      {"regex, dummy, exact interface names",
       R"({"local":{"localInterface":"^enp",
       "dummyInterface":"lb-v2","interfaces":["eth1","bond0.100","br-lan"],
       "garpConfig":{"enabled":true}}})",
       "^enp",
       "lb-v2",
       true,
       {"eth1", "bond0.100", "br-lan"},
       {"eth10", "veth1", "bond0x100", "br-lan2"},
       0},
      {"garpConfig present: enabled defaults to true",
       R"({"local":{"garpConfig":{"count":5,"interval":"250ms"}}})",
       nullptr,
       "kube-lb0",
       true,
       {},
       {},
       0},
      {"garpConfig disabled",
       R"({"local":{"garpConfig":{"enabled":false}}})",
       nullptr,
       "kube-lb0",
       false,
       {},
       {},
       0},
      {"nodeSelector and addressConfig accepted",
       R"({"nodeSelector":{"matchLabels":
       {"pool":"edge"}},"local":{"garpConfig":{},"addressConfig":{"localInterface":
       {"validLifetime":600}}}})",
       nullptr,
       "kube-lb0",
       true,
       {},
       {},
       0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    auto c = ParseNodeAgent(AgentV2(Parse(row.spec)));
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_EQ(c->version, PurelbVersion::kV2);
    if (row.local_interface == nullptr) {
      EXPECT_FALSE(c->local_interface.has_value());
    } else {
      ASSERT_TRUE(c->local_interface.has_value());
      EXPECT_EQ(c->local_interface->text(), row.local_interface);
    }
    EXPECT_EQ(c->external_interface, row.dummy);
    EXPECT_EQ(c->send_garp, row.send_garp);
    for (const auto& n : row.interfaces_match) {
      bool any = false;
      for (const auto& p : c->interfaces) any = any || p.Matches(n);
      EXPECT_TRUE(any) << n;
    }
    for (const auto& n : row.interfaces_no_match) {
      for (const auto& p : c->interfaces) EXPECT_FALSE(p.Matches(n)) << n << " " << p.text();
    }
    EXPECT_EQ(c->warnings.size(), row.warnings) << ::testing::PrintToString(c->warnings);
  }
}

TEST(NodeAgent, V2ErrorsTable) {
  struct Row {
    const char* spec;
    const char* error;
  };
  const Row rows[] = {
      {R"({"local":{"localint":"eth0"}})",
       "spec.local.localint: is a purelb.io/v1 field; purelb.io/v2 calls it localInterface"},
      {R"({"local":{"extlbint":"kube-lb0"}})",
       "spec.local.extlbint: is a purelb.io/v1 field; purelb.io/v2 calls it dummyInterface"},
      {R"({"local":{"sendgarp":true}})",
       "spec.local.sendgarp: is a purelb.io/v1 field; purelb.io/v2 calls it garpConfig"},
      {R"({"local":{"dummyInterface":"far-too-long-name"}})",
       "spec.local.dummyInterface: \"far-too-long-name\" is not a valid interface name (1-15 "
       "characters, no '/', ':' or whitespace, not \".\" or \"..\")"},
      {R"({"local":{"interfaces":["eth/1"]}})",
       "spec.local.interfaces[0]: \"eth/1\" is not a valid interface name"},
      {R"({"local":{"garpConfig":{"enabled":"yes"}}})",
       "spec.local.garpConfig.enabled: must be a boolean, got a string"},
      {R"({"local":{"garpConfig":true}})",
       "spec.local.garpConfig: must be an object, got a boolean"},
      {R"({"nodeSelector":"edge"})", "spec.nodeSelector: must be an object, got a string"},
      {R"({"local":{"garpConfig":{"count":"3"}}})",
       "spec.local.garpConfig.count: must be an integer, got a string"},
      {R"({"local":{"garpConfig":{"interval":500}}})",
       "spec.local.garpConfig.interval: must be a string, got a number"},
      {R"({"local":{"addressConfig":{"localInterface":{"validLifetime":-1}}}})",
       "spec.local.addressConfig.localInterface.validLifetime: must not be negative"},
      {R"({"local":{"addressConfig":{"dummyInterface":{"preferredLifetime":4294967295}}}})",
       "spec.local.addressConfig.dummyInterface.preferredLifetime: at most 4294967294 seconds "
       "(0: permanent)"},
      {R"({"local":{"addressConfig":{"localInterface":{"noPrefixRoute":"yes"}}}})",
       "spec.local.addressConfig.localInterface.noPrefixRoute: must be a boolean, got a string"},
      {R"({"local":{"addressConfig":{"localInterface":300}}})",
       "spec.local.addressConfig.localInterface: must be an object, got a number"},
      {R"({"writtenAs":"v9"})", "spec.writtenAs: \"v9\" is not v1 or v2"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.spec);
    auto c = ParseNodeAgent(AgentV2(Parse(row.spec)));
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().message(), std::string("LBNodeAgent purelb-system/default: ") + row.error);
  }
}

// The v2 settings the agent acts on: garpConfig timings (PureLB's defaults and clamps),
// addressConfig per interface kind, nodeSelector, spec.local presence.
TEST(NodeAgent, V2SettingsTable) {
  using std::chrono::milliseconds;
  struct Row {
    const char* name;
    const char* spec;
    std::optional<GarpTimings> garp;
    std::optional<AddressConfig> address_config;
    bool has_selector;
    bool has_local;
    bool garp_off;
    std::vector<std::string> warnings;
  };
  const GarpTimings defaults;
  const Row rows[] = {
      {"no garpConfig: GARP off",
       R"({"local":{}})",
       std::nullopt,
       std::nullopt,
       false,
       true,
       true,
       {}},
      {"garpConfig {}: PureLB's defaults",
       R"({"local":{"garpConfig":{}}})",
       defaults,
       std::nullopt,
       false,
       true,
       false,
       {}},
      {"enabled false: off, timings dropped",
       R"({"local":{"garpConfig":{"enabled":false,"count":5}}})",
       std::nullopt,
       std::nullopt,
       false,
       true,
       true,
       {}},
      {"timings",
       R"({"local":{"garpConfig":{"initialDelay":"1s","count":5,"interval":"250ms",
       "verifyBeforeSend":false}}})",
       GarpTimings{milliseconds(1000), 5, milliseconds(250), false},
       std::nullopt,
       false,
       true,
       false,
       {}},
      {"count clamped, bad durations take defaults",
       R"({"local":{"garpConfig":{"initialDelay":"soon","count":40,"interval":"-1s"}}})",
       GarpTimings{milliseconds(100), 10, milliseconds(500), true},
       std::nullopt,
       false,
       true,
       false,
       {"spec.local.garpConfig.initialDelay: \"soon\" is not a duration; using the default 100ms",
        "spec.local.garpConfig.interval: \"-1s\" is not a duration; using the default 500ms",
        "spec.local.garpConfig.count: 40 is outside 1..10; using 10"}},
      {"addressConfig both kinds",
       R"({"local":{"addressConfig":{"localInterface":{"validLifetime":600,
       "preferredLifetime":300,"noPrefixRoute":false},"dummyInterface":{"validLifetime":0}}}})",
       std::nullopt,
       AddressConfig{InterfaceAddressConfig{600, 300, false},
                     InterfaceAddressConfig{0, std::nullopt, std::nullopt}},
       false,
       true,
       true,
       {}},
      {"addressConfig lifetime below 60 raised",
       R"({"local":{"addressConfig":{"localInterface":{"validLifetime":10}}}})",
       std::nullopt,
       AddressConfig{InterfaceAddressConfig{60, std::nullopt, std::nullopt}, std::nullopt},
       false,
       true,
       true,
       {"spec.local.addressConfig.localInterface.validLifetime: 10s raised to 60s (the minimum)"}},
      {"empty addressConfig",
       R"({"local":{"addressConfig":{}}})",
       std::nullopt,
       AddressConfig{},
       false,
       true,
       true,
       {}},
      {"nodeSelector, no local",
       R"({"nodeSelector":{"matchLabels":{"pool":"edge"}}})",
       std::nullopt,
       std::nullopt,
       true,
       false,
       true,
       {}},
      {"nodeSelector {} is a catch-all",
       R"({"nodeSelector":{},"local":{}})",
       std::nullopt,
       std::nullopt,
       false,
       true,
       true,
       {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    auto c = ParseNodeAgent(AgentV2(Parse(row.spec)));
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_EQ(c->garp, row.garp);
    EXPECT_EQ(c->address_config, row.address_config);
    EXPECT_EQ(c->node_selector.has_value(), row.has_selector);
    EXPECT_EQ(c->has_local, row.has_local);
    EXPECT_EQ(c->garp_off(), row.garp_off);
    EXPECT_EQ(c->warnings, row.warnings);
  }
  // v1: sendgarp false is not "off" (one announcement per takeover), and v2 fields are ignored.
  auto v1 = ParseNodeAgent(
      Agent(Parse(R"({"sendgarp":false,"addressConfig":{"localInterface":{"validLifetime":9}}})")));
  ASSERT_TRUE(v1) << v1.error().message();
  EXPECT_FALSE(v1->garp_off());
  EXPECT_FALSE(v1->address_config.has_value());
}

// writtenAs decides: a v1 object read through v2 keeps the v1 names and meaning, and the reverse.
TEST(NodeAgent, WrittenAsDecides) {
  nlohmann::json v1_read_as_v2 = AgentV2(
      Parse(R"({"writtenAs":"v1","local":{"localint":"eth0","extlbint":"lb1","sendgarp":true}})"));
  auto c = ParseNodeAgent(v1_read_as_v2);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->version, PurelbVersion::kV1);
  EXPECT_EQ(c->external_interface, "lb1");
  EXPECT_TRUE(c->send_garp);
  nlohmann::json v2_read_as_v1 = Agent(Parse(R"({"dummyInterface":"lb2","garpConfig":{}})"));
  v2_read_as_v1["spec"]["writtenAs"] = "v2";
  c = ParseNodeAgent(v2_read_as_v1);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->version, PurelbVersion::kV2);
  EXPECT_EQ(c->external_interface, "lb2");
  EXPECT_TRUE(c->send_garp);
  // A v1 object ignores the v2 names (the CRD refuses them on v1 writes).
  c = ParseNodeAgent(Agent(Parse(R"({"dummyInterface":"lb2"})")));
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->external_interface, "kube-lb0");
}

}  // namespace
}  // namespace pylon::config
