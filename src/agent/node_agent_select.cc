#include "agent/node_agent_select.h"

#include <algorithm>
#include <tuple>

#include "bgp/config.h"

namespace pylon::agent {

std::string_view NodeAgentStateName(NodeAgentState state) {
  switch (state) {
    case NodeAgentState::kDefault:
      return "default";
    case NodeAgentState::kConfigured:
      return "configured";
    case NodeAgentState::kDeselected:
      return "deselected";
  }
  return "default";
}

NodeAgentChoice ChooseNodeAgent(const std::vector<Json>& objects, const Json* node,
                                std::string_view node_name) {
  NodeAgentChoice out;
  const Json no_node = Json::object();
  const Json& node_obj = node != nullptr ? *node : no_node;
  const std::string on_node = "node " + std::string(node_name);

  struct Candidate {
    bool selective;
    std::size_t index;
    config::NodeAgentConfig config;
  };
  std::vector<Candidate> candidates;
  std::size_t parsed_count = 0;
  std::vector<std::string> not_matching;  // selective objects that do not select this node
  for (std::size_t i = 0; i < objects.size(); ++i) {
    auto parsed = config::ParseNodeAgent(objects[i]);
    if (!parsed) {
      out.notes.push_back({i, "ConfigError", parsed.error().message() + "; ignored"});
      continue;
    }
    ++parsed_count;
    const std::string key = parsed->meta.key.ToString();
    if (parsed->node_selector) {
      auto sel = bgp::ParseLabelSelector(*parsed->node_selector, "spec.nodeSelector");
      if (!sel) {
        out.notes.push_back({i, "InvalidNodeSelector",
                             key + ": " + sel.error().message() + "; it selects no node"});
        not_matching.push_back(key);
        continue;
      }
      if (!bgp::NodeMatches({*sel}, node_obj)) {
        not_matching.push_back(key);
        continue;
      }
    }
    candidates.push_back({parsed->node_selector.has_value(), i, std::move(*parsed)});
  }
  std::stable_sort(
      candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        auto rank = [](const Candidate& c) {
          return std::make_tuple(!c.selective, !c.selective && c.config.meta.key.name != "default",
                                 c.config.meta.key.namespace_, c.config.meta.key.name);
        };
        return rank(a) < rank(b);
      });
  const Candidate* governing = nullptr;
  for (const Candidate& c : candidates) {
    if (c.config.has_local || c.config.version == config::PurelbVersion::kV1) {
      governing = &c;
      break;
    }
  }
  for (const Candidate& c : candidates) {
    if (&c == governing) continue;
    out.notes.push_back({c.index, "ConfigIgnored",
                         governing != nullptr ? governing->config.meta.key.ToString() +
                                                    " takes precedence on " + on_node
                                              : c.config.meta.key.ToString() +
                                                    " has no spec.local; it "
                                                    "configures nothing on " +
                                                    on_node});
  }
  std::sort(out.notes.begin(), out.notes.end(),
            [](const NodeAgentNote& a, const NodeAgentNote& b) { return a.object < b.object; });
  if (governing != nullptr) {
    out.state = NodeAgentState::kConfigured;
    out.config = governing->config;
    return out;
  }
  if (parsed_count == 0) return out;  // kDefault
  out.state = NodeAgentState::kDeselected;
  std::string list;
  for (const auto& k : not_matching) list += (list.empty() ? "" : ", ") + k;
  out.why = "no LBNodeAgent governs " + on_node +
            (list.empty() ? std::string(" (the ones that select it have no spec.local)")
                          : " (the nodeSelector of " + list + " does not match its labels)") +
            ": it announces nothing and advertises no subnets";
  return out;
}

}  // namespace pylon::agent
