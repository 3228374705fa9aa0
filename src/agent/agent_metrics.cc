#include "agent/agent_metrics.h"

#include "agent/takeover.h"
#include "heartbeat/detector.h"
#include "net/ip.h"

namespace pylon::agent {

void DescribeAgentMetrics(metrics::Registry& r) {
  using metrics::LabelValues;
  using metrics::Start;
  using metrics::Type;
  const LabelValues family{"family",
                           {std::string(net::FamilyName(net::Family::kV4)),
                            std::string(net::FamilyName(net::Family::kV6))}};
  r.Describe(kMetricLeaseHealthy,
             "1 while this node renews its lease within the renew deadline, else 0", Type::kGauge);
  r.Describe(kMetricMemberCount, "Live nodes in the election (leases seen renewed)", Type::kGauge);
  r.Describe(kMetricWinnerChanges, "Elected addresses whose winner moved to another node",
             Type::kCounter);
  r.Describe(kMetricAffinityFallbacks,
             "Addresses of Services with purelb.io/node-affinity: service-endpoints elected "
             "without it because no live candidate hosts an endpoint (counted on entering)",
             Type::kCounter);
  r.Describe(kMetricAnnounced, "Addresses this node holds, by kind (local|virtual) and family",
             Type::kGauge, {{"kind", {"local", "virtual"}}, family});
  r.Describe(kMetricGarpSent, "Gratuitous ARP / unsolicited NA packets sent, by family",
             Type::kCounter, {family});
  r.Describe(kMetricGarpFailed, "Gratuitous ARP / unsolicited NA packets that failed, by family",
             Type::kCounter, {family});
  r.Describe(kMetricAddressOps, "Address adds and removals on this node, by op (add|remove)",
             Type::kCounter, {{"op", {"add", "remove"}}});
  std::vector<std::string> reasons;
  for (auto m : kMoveReasons) reasons.emplace_back(MoveReasonName(m));
  r.Describe(kMetricAddressMoves,
             "Local addresses this node took over from another node, by reason "
             "(crash|planned|kube-proxy|election), and those a restarted agent kept in place "
             "(restart-adopted)",
             Type::kCounter, {{"reason", reasons}});
  r.Describe(kMetricDrainForwards,
             "Addresses taken over in a planned move whose established TCP flows this node "
             "forwards to the previous holder now (the drain)",
             Type::kGauge);
  r.Describe(kMetricAddressConflicts,
             "Addresses in conflict now: held by someone else on this node (left untouched), "
             "withheld because a foreign MAC answered their probe, or claimed by a foreign MAC "
             "while announced (seen in the last 5 minutes)",
             Type::kGauge);
  r.Describe(kMetricConflictsDetected,
             "Address conflicts detected, by kind (probe: answered before first announcement; "
             "claim: a foreign MAC claimed an announced address)",
             Type::kCounter, {{"kind", {"probe", "claim"}}});
  r.Describe(kMetricHeartbeatDatagrams,
             "Heartbeat and report datagrams, by direction (sent|received); received counts "
             "every datagram read, dropped ones included",
             Type::kCounter, {{"direction", {"sent", "received"}}}, Start::kWhenSet);
  r.Describe(kMetricHeartbeatReports,
             "Ring reports, by event (made: this node's verdict on a neighbour or a refutation; "
             "sent: datagrams made or forwarded; received: new reports heard)",
             Type::kCounter, {{"event", {"made", "sent", "received"}}}, Start::kWhenSet);
  r.Describe(kMetricProbeAheadProbes,
             "Background duplicate-address probes this node started for addresses the allocator "
             "will hand out next (each sends --probe-count ARP probes or DAD NS)",
             Type::kCounter);
  r.Describe(kMetricProbeAheadFresh,
             "Pool addresses this node keeps proven free (probed free within the freshness window)",
             Type::kGauge);
  r.Describe(kMetricProbeAheadTaken,
             "Pool addresses this node found taken by a foreign host in the background (listed "
             "on its lease; the allocator skips them)",
             Type::kGauge);
  r.Describe(kMetricProbeAheadConflicts,
             "Pool addresses found taken by a foreign host in the background, before any Service",
             Type::kCounter);
  r.Describe(kMetricProbeAheadAnnounced,
             "First announcements made at once because the address was proven free ahead",
             Type::kCounter);
  r.Describe(kMetricLeaseRenewals, "Node lease renewal attempts, by result (success|failure)",
             Type::kCounter, {{"result", {"success", "failure"}}});
  r.Describe(kMetricLeaseQuiet,
             "1 while the node lease is quiet (heartbeats carry liveness: renewed every 10s, 40s "
             "long), 0 while loud (the PURELB_* timing)",
             Type::kGauge);
  r.Describe(kMetricKubeProxyHealthy,
             "1 while this node's kube-proxy passes its health check (or the check is off), "
             "else 0: the node is not eligible to announce local addresses",
             Type::kGauge);
  r.Describe(kMetricKubeProxyTransitions,
             "Changes of the kube-proxy health verdict, by new state (healthy|unhealthy)",
             Type::kCounter, {{"to", {"healthy", "unhealthy"}}});
  // The agent sets all four (node_agent_select.h: kNodeAgentStates) each time it reads the
  // LBNodeAgents: no series before, never all 0 after, as PureLB.
  r.Describe(kMetricSelectorState,
             "LBNodeAgent state of this node, 1 for the current one "
             "(default|configured|deselected|invalid)",
             Type::kGauge, {{"state", {}}}, Start::kWhenSet);
  // Set from the first check, once virtual addresses are in use (a 0 before would read as
  // "missing").
  r.Describe(kMetricStrictArpOk,
             "1 while strict ARP (arp_ignore>=1, arp_announce=2) is in force on the LAN "
             "interfaces, else 0: the node answers ARP for the virtual addresses it holds",
             Type::kGauge, {}, Start::kWhenSet);
  r.Describe(kMetricPromoteSecondariesOk,
             "1 while promote_secondaries is in force on the virtual interface, else 0",
             Type::kGauge, {}, Start::kWhenSet);
  // Heartbeats on only: set from the first pass when they are (a 0 without heartbeats would
  // read as "unfit to announce").
  std::vector<std::string> states;
  for (auto st : heartbeat::kPeerStates) {
    states.emplace_back(heartbeat::PeerStateName(st));
  }
  r.Describe(kMetricHeartbeatPeers,
             "Heartbeat peers by detector state (never_heard|alive|unhealthy|starting|silent|dead)",
             Type::kGauge, {{"state", states}}, Start::kWhenSet);
  r.Describe(kMetricHeartbeatHealthy,
             "1 while this node judges itself fit to announce (heartbeat policy), else 0",
             Type::kGauge, {}, Start::kWhenSet);
}

}  // namespace pylon::agent
