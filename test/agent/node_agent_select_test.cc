// Which LBNodeAgent governs a node: nodeSelector precedence, catch-alls, objects without
// spec.local, invalid selectors and objects, and the deselected verdict.
#include "agent/node_agent_select.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace pylon::agent {
namespace {

using nlohmann::json;

json V2(const std::string& name, json spec) {
  return {{"apiVersion", "purelb.io/v2"},
          {"kind", "LBNodeAgent"},
          {"metadata", {{"name", name}, {"namespace", "purelb-system"}}},
          {"spec", std::move(spec)}};
}

json V1(const std::string& name) {
  return {{"apiVersion", "purelb.io/v1"},
          {"kind", "LBNodeAgent"},
          {"metadata", {{"name", name}, {"namespace", "purelb-system"}}},
          {"spec", {{"local", {{"localint", "default"}}}}}};
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
    const char* governing;           // nullptr: none
    std::vector<std::string> notes;  // "<object index> <reason>"
    const char* why_contains;        // kDeselected only
  };
  const Row rows[] = {
      {"no LBNodeAgent: defaults", {}, {}, NodeAgentState::kDefault, nullptr, {}, ""},
      {"one catch-all",
       {V2("default", {{"local", kLocal}})},
       {},
       NodeAgentState::kConfigured,
       "default",
       {},
       ""},
      {"v1 objects: \"default\" first, the others ignored",
       {V1("aaa"), V1("default")},
       {},
       NodeAgentState::kConfigured,
       "default",
       {"0 ConfigIgnored"},
       ""},
      {"a matching selector beats the catch-all",
       {V2("default", {{"local", kLocal}}), V2("edge", Selecting("pool", "edge"))},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "edge",
       {"0 ConfigIgnored"},
       ""},
      {"a selector that does not match: the catch-all governs",
       {V2("default", {{"local", kLocal}}), V2("edge", Selecting("pool", "edge"))},
       {{"pool", "core"}},
       NodeAgentState::kConfigured,
       "default",
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
       "edge",
       {},
       ""},
      {"a matching object without spec.local is skipped",
       {V2("default", {{"local", kLocal}}),
        V2("edge", {{"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}}})},
       {{"pool", "edge"}},
       NodeAgentState::kConfigured,
       "default",
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
       "default",
       {"0 InvalidNodeSelector"},
       ""},
      {"an object that does not parse is skipped; none left: defaults",
       {V2("broken", {{"local", {{"localint", "eth0"}}}})},
       {},
       NodeAgentState::kDefault,
       nullptr,
       {"0 ConfigError"},
       ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const json node = Node(row.labels);
    NodeAgentChoice c = ChooseNodeAgent(row.objects, &node, "node1");
    EXPECT_EQ(c.state, row.state);
    if (row.governing == nullptr) {
      EXPECT_FALSE(c.config.has_value());
    } else {
      ASSERT_TRUE(c.config.has_value());
      EXPECT_EQ(c.config->meta.key.name, row.governing);
    }
    std::vector<std::string> notes;
    for (const auto& n : c.notes) notes.push_back(std::to_string(n.object) + " " + n.reason);
    EXPECT_EQ(notes, row.notes);
    if (row.state == NodeAgentState::kDeselected) {
      EXPECT_NE(c.why.find(row.why_contains), std::string::npos) << c.why;
      EXPECT_NE(c.why.find("announces nothing"), std::string::npos) << c.why;
    }
  }
}

// Without the Node object (not in the cache), the node has no labels.
TEST(ChooseNodeAgent, UnknownNodeHasNoLabels) {
  std::vector<json> objects = {V2("edge", Selecting("pool", "edge"))};
  EXPECT_EQ(ChooseNodeAgent(objects, nullptr, "node1").state, NodeAgentState::kDeselected);
}

}  // namespace
}  // namespace pylon::agent
