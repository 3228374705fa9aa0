// Which LBNodeAgent governs this node (PureLB 0.17's rule, docs/purelb-v2.md). Pure.
//
// The objects come from every namespace (as PureLB reads them). Every object is parsed; one that
// does not parse is skipped (reported ConfigError, naming it and the error) as if it did not
// exist, so the next valid one governs. An object whose purelb.io/v2 spec.nodeSelector is present
// and not `{}` is *selective*; the others (every v1 object) are catch-alls. Candidates: the
// selective objects whose selector matches the Node's labels, then the catch-alls. Within each
// class: the install namespace's objects first, then the other namespaces' by namespace; within a
// namespace by name, except that a catch-all named "default" comes first (Pylon's order before
// nodeSelector existed). So objects of the install namespace order exactly as when only that
// namespace was read, and of two objects with the same name the install namespace's wins. The
// first candidate that has spec.local (every v1 object counts) governs; the other matching ones
// are reported ConfigIgnored. A selector that is not a valid LabelSelector matches no node
// (reported InvalidNodeSelector).
//
// Outcome: kConfigured (an object governs); kDefault (no LBNodeAgent at all: the agent's flags and
// defaults, as before LBNodeAgents); kInvalid (LBNodeAgents exist but none parses: every one was
// skipped, so the flags and defaults apply as for kDefault -- PureLB's state name for "the
// configuration cannot be used", kept apart so that it can be alerted on); or kDeselected (valid
// LBNodeAgents exist but none governs this node: it announces nothing and advertises no subnets,
// as PureLB).
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

enum class NodeAgentState : std::uint8_t { kDefault, kConfigured, kDeselected, kInvalid };
inline constexpr NodeAgentState kNodeAgentStates[] = {
    NodeAgentState::kDefault, NodeAgentState::kConfigured, NodeAgentState::kDeselected,
    NodeAgentState::kInvalid};
// "default", "configured", "deselected", "invalid" (the values of the state label of
// purelb_lbnodeagent_selector_state, as PureLB names them).
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
  // kDeselected and kInvalid: why, for the log and the Node event.
  std::string why;
};

// `objects`: the LBNodeAgents of every namespace, in any order. `node`: this node's Node object
// (nullptr: not known; no labels). `install_ns`: the agent's namespace (its objects come first).
NodeAgentChoice ChooseNodeAgent(const std::vector<Json>& objects, const Json* node,
                                std::string_view node_name, std::string_view install_ns);

}  // namespace pylon::agent
