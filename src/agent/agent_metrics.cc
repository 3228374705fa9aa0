#include "agent/agent_metrics.h"

namespace pylon::agent {

void DescribeAgentMetrics(metrics::Registry& r) {
  using metrics::Type;
  r.Describe(kMetricLeaseHealthy,
             "1 while this node renews its lease within the renew deadline, else 0", Type::kGauge);
  r.Describe(kMetricMemberCount, "Live nodes in the election (leases seen renewed)", Type::kGauge);
  r.Describe(kMetricWinnerChanges, "Elected addresses whose winner moved to another node",
             Type::kCounter);
  r.Describe(kMetricAnnounced, "Addresses this node holds, by kind (local|virtual) and family",
             Type::kGauge);
  r.Describe(kMetricGarpSent, "Gratuitous ARP / unsolicited NA packets sent, by family",
             Type::kCounter);
  r.Describe(kMetricGarpFailed, "Gratuitous ARP / unsolicited NA packets that failed, by family",
             Type::kCounter);
  r.Describe(kMetricAddressOps, "Address adds and removals on this node, by op and result",
             Type::kCounter);
  r.Describe(kMetricAddressConflicts,
             "Addresses in conflict now: held by someone else on this node (left untouched), "
             "withheld because a foreign MAC answered their probe, or claimed by a foreign MAC "
             "while announced (seen in the last 5 minutes)",
             Type::kGauge);
  r.Describe(kMetricConflictsDetected,
             "Address conflicts detected, by kind (probe: answered before first announcement; "
             "claim: a foreign MAC claimed an announced address)",
             Type::kCounter);
  r.Describe(kMetricLeaseRenewals, "Node lease renewal attempts, by result", Type::kCounter);
  r.Describe(kMetricHeartbeatPeers,
             "Heartbeat peers by detector state (never_heard|alive|unhealthy|silent|dead)",
             Type::kGauge);
  r.Describe(kMetricHeartbeatHealthy,
             "1 while this node judges itself fit to announce (heartbeat policy), else 0",
             Type::kGauge);
}

}  // namespace pylon::agent
