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

}  // namespace
}  // namespace pylon::config
