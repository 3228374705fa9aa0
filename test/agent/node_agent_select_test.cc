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
  const Row rows[] = {
      {"no LBNodeAgent: defaults", {}, {}, NodeAgentState::kDefault, nullptr, {}, ""},
      {"one catch-all",
       {V2("default", {{"local", kLocal}})},
       {},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {},
       ""},
      {"v1 objects: \"default\" first, the others ignored",
       {V1("aaa"), V1("default")},
       {},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {"0 ConfigIgnored"},
       ""},
      {"a matching selector beats the catch-all",
       {V2("default", {{"local", kLocal}}), V2("edge", Selecting("pool", "edge"))},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "purelb-system/edge",
       {"0 ConfigIgnored"},
       ""},
      {"a selector that does not match: the catch-all governs",
       {V2("default", {{"local", kLocal}}), V2("edge", Selecting("pool", "edge"))},
       {{"pool", "core"}},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {},
       ""},
      {"only selective objects, none matches: deselected",
       {V2("edge", Selecting("pool", "edge"))},
       {{"pool", "core"}},
       NodeAgentState::kDeselected,
       nullptr,
       {},
       "the nodeSelector of LBNodeAgent purelb-system/edge does not match its labels"},
      {"matchExpressions",
       {V2("edge",
           {{"nodeSelector",
             {{"matchExpressions",
               json::array({{{"key", "zone"}, {"operator", "In"}, {"values", {"a", "b"}}}})}}},
            {"local", kLocal}})},
       {{"zone", "b"}},
       NodeAgentState::kConfigured,
       "purelb-system/edge",
       {},
       ""},
      {"a matching object without spec.local is skipped",
       {V2("default", {{"local", kLocal}}),
        V2("edge", {{"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}}})},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {"1 ConfigIgnored"},
       ""},
      {"only an object without spec.local: deselected",
       {V2("edge", {{"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}}})},
       {{"pool", "edge"}},
       NodeAgentState::kDeselected,
       nullptr,
       {"0 ConfigIgnored"},
       "have no spec.local"},
      {"an invalid selector selects nothing",
       {V2("bad", {{"nodeSelector",
                    {{"matchExpressions", json::array({{{"key", "zone"}, {"operator", "Near"}}})}}},
                   {"local", kLocal}}),
        V2("default", {{"local", kLocal}})},
       {{"zone", "a"}},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {"0 InvalidNodeSelector"},
       ""},
      {"an object that does not parse is skipped: the next valid one governs",
       {Broken("aaa"), V2("default", {{"local", kLocal}})},
       {},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {"0 ConfigError"},
       ""},
      {"a selective object that does not parse is skipped: the catch-all governs",
       {V2("edge", {{"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}},
                    {"local", {{"sendgarp", true}}}}),
        V2("default", {{"local", kLocal}})},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {"0 ConfigError"},
       ""},
      {"no object parses: invalid (the flags apply)",
       {Broken("broken"), Broken("other", "team-a")},
       {},
       NodeAgentState::kInvalid,
       nullptr,
       {"0 ConfigError", "1 ConfigError"},
       "LBNodeAgent purelb-system/broken: spec.local.localint"},
      {"a broken object and a valid one that does not select the node: deselected",
       {Broken("broken"), V2("edge", Selecting("pool", "edge"))},
       {{"pool", "core"}},
       NodeAgentState::kDeselected,
       nullptr,
       {"0 ConfigError"},
       "purelb-system/edge does not match"},
      // Every namespace is read. Within a class the install namespace comes first, then the
      // others by namespace, then by name ("default" first among catch-alls).
      {"an object of another namespace alone governs",
       {V2("lbna", {{"local", kLocal}}, "team-a")},
       {},
       NodeAgentState::kConfigured,
       "team-a/lbna",
       {},
       ""},
      {"same name in two namespaces: the install namespace's governs",
       {V2("default", {{"local", kLocal}}, "aaa"), V2("default", {{"local", kLocal}})},
       {},
       NodeAgentState::kConfigured,
       "purelb-system/default",
       {"0 ConfigIgnored"},
       ""},
      {"catch-alls: the install namespace's before another namespace's \"default\"",
       {V2("default", {{"local", kLocal}}, "aaa"), V2("zzz", {{"local", kLocal}})},
       {},
       NodeAgentState::kConfigured,
       "purelb-system/zzz",
       {"0 ConfigIgnored"},
       ""},
      {"other namespaces: by namespace, then \"default\" first, then by name",
       {V2("aaa", {{"local", kLocal}}, "team-b"), V2("default", {{"local", kLocal}}, "team-b"),
        V2("bbb", {{"local", kLocal}}, "team-a")},
       {},
       NodeAgentState::kConfigured,
       "team-a/bbb",
       {"0 ConfigIgnored", "1 ConfigIgnored"},
       ""},
      {"a matching selector of another namespace beats the install namespace's catch-all",
       {V2("default", {{"local", kLocal}}), V2("edge", Selecting("pool", "edge"), "team-a")},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "team-a/edge",
       {"0 ConfigIgnored"},
       ""},
      {"matching selectors: the install namespace's first",
       {V2("aaa", Selecting("pool", "edge"), "aaa"), V2("zzz", Selecting("pool", "edge"))},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "purelb-system/zzz",
       {"0 ConfigIgnored"},
       ""},
  };
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
