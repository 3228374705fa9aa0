// What the agent does on SIGTERM (docs/agent.md "Stopping: restart or leave"): RESTART, keep the
// addresses on the NIC (their valid lifetime bounds them), keep the node lease, tell the peers
// (lease annotation purelb.io/restarting) and let the next agent on the node adopt them; or LEAVE,
// withdraw everything, say "leaving" in the heartbeats and delete the lease so peers take over at
// once (what every stop did before).
//
// DecideStop is the pure decision, from the Node object (the agent's cache), this agent's Pod and
// its DaemonSet (read at SIGTERM). Leave when the node is going away or out of load balancing, the
// DaemonSet is being uninstalled, or anything needed could not be read; restart otherwise:
//
// | signal                                                                  | verdict |
// | --- | --- |
// | --on-sigterm=leave / restart                                            | that    |
// | not in a pod ($POD_NAME unset), or a lookup failed                      | leave   |
// | Node gone, or being deleted (deletionTimestamp)                         | leave   |
// | Node label node.kubernetes.io/exclude-from-external-load-balancers      | leave   |
// | Node taint node.kubernetes.io/out-of-service or ToBeDeletedByClusterAutoscaler | leave |
// | Node Ready condition says the node is shutting down (graceful shutdown) | leave   |
// | Pod condition DisruptionTarget True (eviction, preemption, node shutdown) | leave |
// | Pod status reason Terminated (kubelet's graceful node shutdown)          | leave   |
// | Pod being deleted, its DaemonSet gone or being deleted (uninstall)      | leave   |
// | Pod being deleted, DaemonSet generation newer than the pod's (rollout)  | restart |
// | Pod being deleted, same generation (`kubectl delete pod`)               | restart |
// | Pod not being deleted (container restart: liveness, crictl, kubelet)    | restart |
// | Node cordoned (spec.unschedulable) alone                                | no effect |
//
// `kubectl delete pod` with no rollout counts as a restart: the DaemonSet controller recreates
// the pod on the node at once. If no agent comes back, the peers' wire check (takeover.h) takes
// the addresses over once the node stops answering for them (their lifetime): one move, no two
// nodes answering, the node serving meanwhile. Leaving wrongly would cost a move anyway.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/json.h"

namespace pylon::agent {

// The lease annotation a restarting agent writes (value: its pod UID, or "restarting").
inline constexpr std::string_view kRestartingAnnotation = "purelb.io/restarting";

enum class SigtermMode { kAuto, kRestart, kLeave };  // --on-sigterm auto|restart|leave
std::optional<SigtermMode> ParseSigtermMode(std::string_view text);
std::string_view SigtermModeName(SigtermMode m);

struct NodeFacts {
  bool found = false;
  bool deleting = false;
  bool exclude_label = false;
  bool out_of_service = false;
  bool to_be_deleted = false;  // ToBeDeletedByClusterAutoscaler
  bool shutting_down = false;  // Ready condition message "... shutting down"
  bool unschedulable = false;  // cordoned: no effect (reported for tests and logs)
};
NodeFacts ParseNodeFacts(const Json* node);  // null: not found
// Whether a node is leaving load balancing, so that it may win no address (PlanInputs::
// excluded_nodes) and its holder's addresses are taken without a wire check: being deleted, the
// label node.kubernetes.io/exclude-from-external-load-balancers, the taints out-of-service and
// ToBeDeletedByClusterAutoscaler, or shutting down. Cordon (unschedulable) alone is not.
bool LeavingLoadBalancing(const NodeFacts& f);

struct PodFacts {
  bool found = false;
  bool deleting = false;
  bool disruption_target = false;                // condition DisruptionTarget True
  bool node_shutdown = false;                    // status.reason Terminated
  std::optional<long long> template_generation;  // label pod-template-generation
  std::string daemonset;                         // the owning DaemonSet's name ("" = none)
};
PodFacts ParsePodFacts(const Json* pod);

struct DaemonSetFacts {
  bool found = false;
  bool deleting = false;
  long long generation = 0;
};
DaemonSetFacts ParseDaemonSetFacts(const Json* ds);

struct StopFacts {
  SigtermMode mode = SigtermMode::kAuto;
  bool in_pod = false;  // $POD_NAME set
  bool lookup_failed = false;
  std::string lookup_error;
  NodeFacts node;
  PodFacts pod;
  DaemonSetFacts daemonset;
};

struct StopDecision {
  bool restart = false;
  std::string why;  // for the log line
};
StopDecision DecideStop(const StopFacts& facts);

}  // namespace pylon::agent
