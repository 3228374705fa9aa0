// Which LBNodeAgent governs this node (PureLB 0.17's rule, docs/purelb-v2.md). Pure.
//
// Every object is parsed (one that does not parse is skipped, reported). An object whose
// purelb.io/v2 spec.nodeSelector is present and not `{}` is *selective*; the others (every v1
// object) are catch-alls. Candidates: the selective objects whose selector matches the Node's
// labels, by name, then the catch-alls ("default" first, then by name -- Pylon's order before
// nodeSelector existed). The first candidate that has spec.local (every v1 object counts) governs;
// the other matching ones are reported ConfigIgnored. A selector that is not a valid
// LabelSelector matches no node (reported InvalidNodeSelector).
//
// Outcome: kConfigured (an object governs), kDefault (no LBNodeAgent parses: the agent's flags
// and defaults, as before LBNodeAgents), or kDeselected (LBNodeAgents exist but none governs this
// node: it announces nothing and advertises no subnets, as PureLB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/parse.h"
#include "k8s/object.h"

namespace pylon::agent {

enum class NodeAgentState : std::uint8_t { kDefault, kConfigured, kDeselected };
// "default", "configured", "deselected" (the selector_state metric's labels).
std::string_view NodeAgentStateName(NodeAgentState state);

// Something to tell about one LBNodeAgent (an Event on it, and a log line).
struct NodeAgentNote {
  std::size_t object = 0;  // index into the objects given to ChooseNodeAgent
  std::string reason;      // ConfigError, InvalidNodeSelector, ConfigIgnored
  std::string message;
  friend bool operator==(const NodeAgentNote&, const NodeAgentNote&) = default;
};

struct NodeAgentChoice {
  NodeAgentState state = NodeAgentState::kDefault;
  std::optional<config::NodeAgentConfig> config;  // kConfigured only
  std::vector<NodeAgentNote> notes;               // warnings, in object order
  // kDeselected: why, for the log and the Node event.
  std::string why;
};

// `objects`: the LBNodeAgents. `node`: this node's Node object (nullptr: not known; no labels).
NodeAgentChoice ChooseNodeAgent(const std::vector<Json>& objects, const Json* node,
                                std::string_view node_name);

}  // namespace pylon::agent
