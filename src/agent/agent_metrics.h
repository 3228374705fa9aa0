// The agent's Prometheus families, registered on the component's own Registry.
#pragma once

#include <string>

#include "metrics/registry.h"

namespace pylon::agent {

inline constexpr char kMetricLeaseHealthy[] = "purelb_election_lease_healthy";
inline constexpr char kMetricMemberCount[] = "purelb_election_member_count";
inline constexpr char kMetricWinnerChanges[] = "purelb_election_winner_changes_total";
inline constexpr char kMetricAffinityFallbacks[] = "purelb_election_affinity_fallback_total";
inline constexpr char kMetricAnnounced[] = "purelb_announced_addresses";
inline constexpr char kMetricGarpSent[] = "purelb_garp_sent_total";
inline constexpr char kMetricGarpFailed[] = "purelb_garp_failed_total";
inline constexpr char kMetricAddressOps[] = "purelb_address_operations_total";
// Local addresses taken over from another node, by reason (takeover.h MoveReason), and
// restart-adopted: addresses a restarted agent kept in place.
inline constexpr char kMetricAddressMoves[] = "purelb_address_moves_total";
// Addresses this node took over in a planned move whose established TCP flows it forwards to the
// previous holder now (drain.h).
inline constexpr char kMetricDrainForwards[] = "purelb_drain_forwards";
inline constexpr char kMetricAddressConflicts[] = "purelb_address_conflicts";
inline constexpr char kMetricConflictsDetected[] = "purelb_address_conflicts_detected_total";
// Successful and failed renewals of this node's lease (result = success|failure).
inline constexpr char kMetricLeaseRenewals[] = "purelb_election_lease_renewals_total";
// 1 while this node's lease is quiet (lease_pacing.h: renewed every 10 s, 40 s long), 0 while
// loud (the PURELB_* timing).
inline constexpr char kMetricLeaseQuiet[] = "purelb_election_lease_quiet";
// This node's kube-proxy health check (kube_proxy_health.h; docs/agent.md "kube-proxy health").
inline constexpr char kMetricKubeProxyHealthy[] = "purelb_kube_proxy_healthy";
inline constexpr char kMetricKubeProxyTransitions[] = "purelb_kube_proxy_transitions_total";
// Which LBNodeAgent state this node is in (node_agent_select.h), PureLB 0.17's name: state =
// default|configured|deselected|invalid, the current one 1, the others 0.
inline constexpr char kMetricSelectorState[] = "purelb_lbnodeagent_selector_state";
// The node sysctls virtual addresses need (node_sysctls.h), from the first time virtual addresses
// are in use: 1 while in force, else 0.
inline constexpr char kMetricStrictArpOk[] = "purelb_strict_arp_ok";
inline constexpr char kMetricPromoteSecondariesOk[] = "purelb_promote_secondaries_ok";
// Probe ahead (docs/agent.md "Probe ahead").
inline constexpr char kMetricProbeAheadProbes[] = "purelb_probe_ahead_probes_total";
inline constexpr char kMetricProbeAheadFresh[] = "purelb_probe_ahead_fresh_addresses";
inline constexpr char kMetricProbeAheadTaken[] = "purelb_probe_ahead_taken_addresses";
inline constexpr char kMetricProbeAheadConflicts[] = "purelb_probe_ahead_conflicts_total";
inline constexpr char kMetricProbeAheadAnnounced[] = "purelb_probe_ahead_announced_total";
// Heartbeats on only (docs/failover.md).
inline constexpr char kMetricHeartbeatPeers[] = "purelb_heartbeat_peers";
inline constexpr char kMetricHeartbeatHealthy[] = "purelb_heartbeat_self_healthy";
inline constexpr char kMetricHeartbeatDatagrams[] = "purelb_heartbeat_datagrams_total";
inline constexpr char kMetricHeartbeatReports[] = "purelb_heartbeat_reports_total";

// Declares every family above (idempotent: a second call keeps every value). Each series known up
// front exists at 0 from then on (metrics/registry.h); the heartbeat families appear on the first
// pass with heartbeats on, the selector state once the LBNodeAgents were first read, the sysctl
// gauges once virtual addresses were first in use.
void DescribeAgentMetrics(metrics::Registry& r);

}  // namespace pylon::agent
