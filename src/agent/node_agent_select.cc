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
    case NodeAgentState::kInvalid:
      return "invalid";
  }
  return "default";
}

NodeAgentChoice ChooseNodeAgent(const std::vector<Json>& objects, const Json* node,
                                std::string_view node_name, std::string_view install_ns) {
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
  std::vector<std::string> unparsed;      // the errors of the objects that do not parse
  for (std::size_t i = 0; i < objects.size(); ++i) {
    auto parsed = config::ParseNodeAgent(objects[i]);
    if (!parsed) {
      out.notes.push_back({i, "ConfigError", parsed.error().message() + "; ignored"});
      unparsed.push_back(parsed.error().message());
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
      candidates.begin(), candidates.end(), [install_ns](const Candidate& a, const Candidate& b) {
        auto rank = [install_ns](const Candidate& c) {
          const auto& key = c.config.meta.key;
          return std::make_tuple(!c.selective, key.namespace_ != install_ns,
                                 std::string_view(key.namespace_),
                                 !c.selective && key.name != "default", std::string_view(key.name));
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
  if (parsed_count == 0) {
    if (unparsed.empty()) return out;  // kDefault
    out.state = NodeAgentState::kInvalid;
    std::string list;
    for (const auto& e : unparsed) list += (list.empty() ? "" : "; ") + e;
    out.why = "no LBNodeAgent can be used on " + on_node + " (" + list +
              "): the agent's flags and defaults apply until one is fixed";
    return out;
  }
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
