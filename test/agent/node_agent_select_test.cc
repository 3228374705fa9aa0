// Which LBNodeAgent governs a node: nodeSelector precedence, catch-alls, objects without
// spec.local, objects of several namespaces, invalid selectors and objects, and the deselected
// and invalid verdicts.
#include "agent/node_agent_select.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace pylon::agent {
namespace {

using nlohmann::json;

constexpr char kInstallNs[] = "purelb-system";

json V2(const std::string& name, json spec, const std::string& ns = kInstallNs) {
  return {{"apiVersion", "purelb.io/v2"},
          {"kind", "LBNodeAgent"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", std::move(spec)}};
}

json V1(const std::string& name, const std::string& ns = kInstallNs) {
  return {{"apiVersion", "purelb.io/v1"},
          {"kind", "LBNodeAgent"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"local", {{"localint", "default"}}}}}};
}

// Does not parse: a purelb.io/v1 field name in a v2 object.
json Broken(const std::string& name, const std::string& ns = kInstallNs) {
  return V2(name, {{"local", {{"localint", "eth0"}}}}, ns);
}

json Node(const std::map<std::string, std::string>& labels) {
  return {{"metadata", {{"name", "node1"}, {"labels", labels}}}};
}

const json kLocal = {{"dummyInterface", "kube-lb0"}};
json Selecting(const std::string& label, const std::string& value) {
  return {{"nodeSelector", {{"matchLabels", {{label, value}}}}}, {"local", kLocal}};
}

// An object without a nodeSelector (a catch-all), announcing on kube-lb0.
json CatchAll(const std::string& name, const std::string& ns = kInstallNs) {
  return V2(name, {{"local", kLocal}}, ns);
}

TEST(ChooseNodeAgent, Table) {
  struct Row {
    const char* name;
    std::vector<json> objects;
    std::map<std::string, std::string> labels;
    NodeAgentState state;
    const char* governing;           // "<namespace>/<name>"; nullptr: none
    std::vector<std::string> notes;  // "<object index> <reason>"
    const char* why_contains;        // kDeselected and kInvalid only
  };
  using enum NodeAgentState;
  // The objects of the rows.
  const json catch_all = CatchAll("default");
  const json edge = V2("edge", Selecting("pool", "edge"));
  const json zone_in_ab = V2(
      "edge", {{"nodeSelector",
                {{"matchExpressions",
                  json::array({{{"key", "zone"}, {"operator", "In"}, {"values", {"a", "b"}}}})}}},
               {"local", kLocal}});
  const json edge_no_local = V2("edge", {{"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}}});
  const json bad_selector =
      V2("bad", {{"nodeSelector",
                  {{"matchExpressions", json::array({{{"key", "zone"}, {"operator", "Near"}}})}}},
                 {"local", kLocal}});
  const json edge_v1_field = V2("edge", {{"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}},
                                         {"local", {{"sendgarp", true}}}});
  const std::map<std::string, std::string> pool_edge = {{"pool", "edge"}};
  const std::map<std::string, std::string> pool_core = {{"pool", "core"}};
  // clang-format off
  const Row rows[] = {
      {"no LBNodeAgent: defaults", {}, {}, kDefault, nullptr, {}, ""},
      {"one catch-all", {catch_all}, {}, kConfigured, "purelb-system/default", {}, ""},
      {"v1 objects: \"default\" first, the others ignored", {V1("aaa"), V1("default")}, {}, kConfigured, "purelb-system/default", {"0 ConfigIgnored"}, ""},
      {"a matching selector beats the catch-all", {catch_all, edge}, pool_edge, kConfigured, "purelb-system/edge", {"0 ConfigIgnored"}, ""},
      {"a selector that does not match: the catch-all governs", {catch_all, edge}, pool_core, kConfigured, "purelb-system/default", {}, ""},
      {"only selective objects, none matches: deselected", {edge}, pool_core, kDeselected, nullptr, {}, "the nodeSelector of LBNodeAgent purelb-system/edge does not match its labels"},
      {"matchExpressions", {zone_in_ab}, {{"zone", "b"}}, kConfigured, "purelb-system/edge", {}, ""},
      {"a matching object without spec.local is skipped", {catch_all, edge_no_local}, pool_edge, kConfigured, "purelb-system/default", {"1 ConfigIgnored"}, ""},
      {"only an object without spec.local: deselected", {edge_no_local}, pool_edge, kDeselected, nullptr, {"0 ConfigIgnored"}, "have no spec.local"},
      {"an invalid selector selects nothing", {bad_selector, catch_all}, {{"zone", "a"}}, kConfigured, "purelb-system/default", {"0 InvalidNodeSelector"}, ""},
      {"an object that does not parse is skipped: the next valid one governs", {Broken("aaa"), catch_all}, {}, kConfigured, "purelb-system/default", {"0 ConfigError"}, ""},
      {"a selective object that does not parse is skipped: the catch-all governs", {edge_v1_field, catch_all}, pool_edge, kConfigured, "purelb-system/default", {"0 ConfigError"}, ""},
      {"no object parses: invalid (the flags apply)", {Broken("broken"), Broken("other", "team-a")}, {}, kInvalid, nullptr, {"0 ConfigError", "1 ConfigError"}, "LBNodeAgent purelb-system/broken: spec.local.localint"},
      {"a broken object and a valid one that does not select the node: deselected", {Broken("broken"), edge}, pool_core, kDeselected, nullptr, {"0 ConfigError"}, "purelb-system/edge does not match"},
      // Every namespace is read. Within a class the install namespace comes first, then the
      // others by namespace, then by name ("default" first among catch-alls).
      {"an object of another namespace alone governs", {CatchAll("lbna", "team-a")}, {}, kConfigured, "team-a/lbna", {}, ""},
      {"same name in two namespaces: the install namespace's governs", {CatchAll("default", "aaa"), catch_all}, {}, kConfigured, "purelb-system/default", {"0 ConfigIgnored"}, ""},
      {"catch-alls: the install namespace's before another namespace's \"default\"", {CatchAll("default", "aaa"), CatchAll("zzz")}, {}, kConfigured, "purelb-system/zzz", {"0 ConfigIgnored"}, ""},
      {"other namespaces: by namespace, then \"default\" first, then by name", {CatchAll("aaa", "team-b"), CatchAll("default", "team-b"), CatchAll("bbb", "team-a")}, {}, kConfigured, "team-a/bbb", {"0 ConfigIgnored", "1 ConfigIgnored"}, ""},
      {"a matching selector of another namespace beats the install namespace's catch-all", {catch_all, V2("edge", Selecting("pool", "edge"), "team-a")}, pool_edge, kConfigured, "team-a/edge", {"0 ConfigIgnored"}, ""},
      {"matching selectors: the install namespace's first", {V2("aaa", Selecting("pool", "edge"), "aaa"), V2("zzz", Selecting("pool", "edge"))}, pool_edge, kConfigured, "purelb-system/zzz", {"0 ConfigIgnored"}, ""},
  };
  // clang-format on
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const json node = Node(row.labels);
    NodeAgentChoice c = ChooseNodeAgent(row.objects, &node, "node1", kInstallNs);
    EXPECT_EQ(c.state, row.state);
    if (row.governing == nullptr) {
      EXPECT_FALSE(c.config.has_value());
    } else {
      ASSERT_TRUE(c.config.has_value());
      EXPECT_EQ(c.config->meta.key.object().String(), row.governing);
    }
    std::vector<std::string> notes;
    for (const auto& n : c.notes) notes.push_back(std::to_string(n.object) + " " + n.reason);
    EXPECT_EQ(notes, row.notes);
    if (row.state == NodeAgentState::kDeselected) {
      EXPECT_NE(c.why.find(row.why_contains), std::string::npos) << c.why;
      EXPECT_NE(c.why.find("announces nothing"), std::string::npos) << c.why;
    }
    if (row.state == NodeAgentState::kInvalid) {
      EXPECT_NE(c.why.find(row.why_contains), std::string::npos) << c.why;
      EXPECT_NE(c.why.find("flags and defaults apply"), std::string::npos) << c.why;
    }
  }
}

// Without the Node object (not in the cache), the node has no labels.
TEST(ChooseNodeAgent, UnknownNodeHasNoLabels) {
  std::vector<json> objects = {V2("edge", Selecting("pool", "edge"))};
  EXPECT_EQ(ChooseNodeAgent(objects, nullptr, "node1", kInstallNs).state,
            NodeAgentState::kDeselected);
}

// Bad input never crashes: objects that are not objects, lack metadata or carry wrong types are
// each skipped with a ConfigError note; with nothing valid the verdict is kInvalid.
TEST(ChooseNodeAgent, GarbageIsSkippedAndReported) {
  std::vector<json> objects = {
      json(nullptr),
      json::array({1, 2}),
      json{{"apiVersion", "purelb.io/v2"}, {"kind", "LBNodeAgent"}},
      V2("types", {{"nodeSelector", "pool=edge"}}),
      V2("local", {{"local", {{"garpConfig", {{"count", "three"}}}}}}),
  };
  const json node = Node({});
  NodeAgentChoice c = ChooseNodeAgent(objects, &node, "node1", kInstallNs);
  EXPECT_EQ(c.state, NodeAgentState::kInvalid);
  ASSERT_EQ(c.notes.size(), objects.size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    EXPECT_EQ(c.notes[i].object, i);
    EXPECT_EQ(c.notes[i].reason, "ConfigError");
    EXPECT_FALSE(c.notes[i].message.empty());
  }
  EXPECT_NE(c.notes[3].message.find("purelb-system/types"), std::string::npos)
      << c.notes[3].message;
}

TEST(NodeAgentStateName, PureLbNames) {
  std::vector<std::string> names;
  for (auto st : kNodeAgentStates) names.emplace_back(NodeAgentStateName(st));
  EXPECT_EQ(names, (std::vector<std::string>{"default", "configured", "deselected", "invalid"}));
}

}  // namespace
}  // namespace pylon::agent
