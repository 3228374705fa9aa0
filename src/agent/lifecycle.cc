#include "agent/lifecycle.h"

#include "common/text.h"

namespace pylon::agent {

namespace {

bool HasDeletionTimestamp(const Json& obj) {
  const Json* ts = Find(obj, {"metadata", "deletionTimestamp"});
  return ts != nullptr && !ts->is_null();
}

}  // namespace

std::optional<SigtermMode> ParseSigtermMode(std::string_view text) {
  if (text == "auto") return SigtermMode::kAuto;
  if (text == "restart") return SigtermMode::kRestart;
  if (text == "leave") return SigtermMode::kLeave;
  return std::nullopt;
}

std::string_view SigtermModeName(SigtermMode m) {
  switch (m) {
    case SigtermMode::kAuto:
      return "auto";
    case SigtermMode::kRestart:
      return "restart";
    case SigtermMode::kLeave:
      return "leave";
  }
  return "auto";
}

NodeFacts ParseNodeFacts(const Json* node) {
  NodeFacts f;
  if (node == nullptr || !node->is_object()) return f;
  f.found = true;
  f.deleting = HasDeletionTimestamp(*node);
  if (const Json* labels = Find(*node, {"metadata", "labels"}); labels && labels->is_object()) {
    f.exclude_label = labels->contains("node.kubernetes.io/exclude-from-external-load-balancers");
  }
  if (const Json* u = Find(*node, {"spec", "unschedulable"}); u && u->is_boolean()) {
    f.unschedulable = u->get<bool>();
  }
  if (const Json* taints = Find(*node, {"spec", "taints"}); taints && taints->is_array()) {
    for (const auto& t : *taints) {
      if (!t.is_object()) continue;
      const std::string key = FindString(t, {"key"}).value_or("");
      if (key == "node.kubernetes.io/out-of-service") f.out_of_service = true;
      if (key == "ToBeDeletedByClusterAutoscaler") f.to_be_deleted = true;
    }
  }
  if (const Json* conds = Find(*node, {"status", "conditions"}); conds && conds->is_array()) {
    for (const auto& c : *conds) {
      if (!c.is_object() || FindString(c, {"type"}).value_or("") != "Ready") continue;
      // kubelet's graceful node shutdown: Ready False, "node is shutting down".
      const std::string msg = FindString(c, {"message"}).value_or("");
      if (msg.find("shutting down") != std::string::npos) f.shutting_down = true;
    }
  }
  return f;
}

bool LeavingLoadBalancing(const NodeFacts& f) {
  return f.found &&
         (f.deleting || f.exclude_label || f.out_of_service || f.to_be_deleted || f.shutting_down);
}

PodFacts ParsePodFacts(const Json* pod) {
  PodFacts f;
  if (pod == nullptr || !pod->is_object()) return f;
  f.found = true;
  f.deleting = HasDeletionTimestamp(*pod);
  if (auto gen = FindString(*pod, {"metadata", "labels", "pod-template-generation"})) {
    if (auto v = ParseInteger<long long>(*gen)) f.template_generation = *v;
  }
  if (const Json* owners = Find(*pod, {"metadata", "ownerReferences"});
      owners && owners->is_array()) {
    for (const auto& o : *owners) {
      if (o.is_object() && FindString(o, {"kind"}).value_or("") == "DaemonSet") {
        f.daemonset = FindString(o, {"name"}).value_or("");
      }
    }
  }
  if (const Json* conds = Find(*pod, {"status", "conditions"}); conds && conds->is_array()) {
    for (const auto& c : *conds) {
      if (c.is_object() && FindString(c, {"type"}).value_or("") == "DisruptionTarget" &&
          FindString(c, {"status"}).value_or("") == "True") {
        f.disruption_target = true;
      }
    }
  }
  f.node_shutdown = FindString(*pod, {"status", "reason"}).value_or("") == "Terminated";
  return f;
}

DaemonSetFacts ParseDaemonSetFacts(const Json* ds) {
  DaemonSetFacts f;
  if (ds == nullptr || !ds->is_object()) return f;
  f.found = true;
  f.deleting = HasDeletionTimestamp(*ds);
  f.generation = FindInt(*ds, {"metadata", "generation"}).value_or(0);
  return f;
}

StopDecision DecideStop(const StopFacts& f) {
  if (f.mode == SigtermMode::kRestart) return {true, "--on-sigterm=restart"};
  if (f.mode == SigtermMode::kLeave) return {false, "--on-sigterm=leave"};
  if (!f.in_pod) return {false, "not running in a pod ($POD_NAME unset): cannot tell"};
  if (f.lookup_failed) return {false, "unsure: " + f.lookup_error};
  const NodeFacts& n = f.node;
  if (!n.found) return {false, "the Node object is gone"};
  if (n.deleting) return {false, "the Node is being deleted"};
  if (n.exclude_label) {
    return {false, "the Node is labelled node.kubernetes.io/exclude-from-external-load-balancers"};
  }
  if (n.out_of_service) return {false, "the Node is tainted node.kubernetes.io/out-of-service"};
  if (n.to_be_deleted) return {false, "the Node is tainted ToBeDeletedByClusterAutoscaler"};
  if (n.shutting_down) return {false, "the Node is shutting down"};
  const PodFacts& p = f.pod;
  if (!p.found) return {false, "this agent's Pod is gone"};
  if (p.disruption_target) return {false, "the Pod is a disruption target (eviction, shutdown)"};
  if (p.node_shutdown) return {false, "the Pod was terminated for a node shutdown"};
  if (!p.deleting) return {true, "container restart: the Pod is not being deleted"};
  if (p.daemonset.empty()) return {false, "the Pod is being deleted and has no DaemonSet"};
  const DaemonSetFacts& d = f.daemonset;
  if (!d.found || d.deleting) return {false, "the DaemonSet is being removed (uninstall)"};
  if (p.template_generation && d.generation > *p.template_generation) {
    return {true, "DaemonSet rollout: generation " + std::to_string(d.generation) +
                      " replaces the Pod's " + std::to_string(*p.template_generation)};
  }
  return {true, "the Pod is being deleted with no rollout: the DaemonSet recreates it"};
}

}  // namespace pylon::agent
