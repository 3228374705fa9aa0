// The agent's metric families before anything happened: every series known up front exists at
// 0, so a dashboard or an alert sees it from the start (docs/operate.md, Metrics).
#include "agent/agent_metrics.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent_world.h"
#include "support/metrics.h"

namespace pylon::agent {
namespace {

using test_support::MetricFamily;

// Every family the agent exports, and its series before the first pass.
const std::vector<MetricFamily> kFamilies = {
    {kMetricLeaseHealthy, "gauge", {" 0"}},
    {kMetricMemberCount, "gauge", {" 0"}},
    {kMetricWinnerChanges, "counter", {" 0"}},
    {kMetricAffinityFallbacks, "counter", {" 0"}},
    {kMetricAnnounced,
     "gauge",
     {"{family=\"IPv4\",kind=\"local\"} 0", "{family=\"IPv6\",kind=\"local\"} 0",
      "{family=\"IPv4\",kind=\"virtual\"} 0", "{family=\"IPv6\",kind=\"virtual\"} 0"}},
    {kMetricGarpSent, "counter", {"{family=\"IPv4\"} 0", "{family=\"IPv6\"} 0"}},
    {kMetricGarpFailed, "counter", {"{family=\"IPv4\"} 0", "{family=\"IPv6\"} 0"}},
    {kMetricAddressOps, "counter", {"{op=\"add\"} 0", "{op=\"remove\"} 0"}},
    {kMetricAddressMoves,
     "counter",
     {"{reason=\"crash\"} 0", "{reason=\"election\"} 0", "{reason=\"kube-proxy\"} 0",
      "{reason=\"planned\"} 0", "{reason=\"restart-adopted\"} 0"}},
    {kMetricDrainForwards, "gauge", {" 0"}},
    {kMetricAddressConflicts, "gauge", {" 0"}},
    {kMetricConflictsDetected, "counter", {"{kind=\"claim\"} 0", "{kind=\"probe\"} 0"}},
    {kMetricKubeProxyHealthy, "gauge", {" 0"}},
    {kMetricKubeProxyTransitions, "counter", {"{to=\"healthy\"} 0", "{to=\"unhealthy\"} 0"}},
    {kMetricProbeAheadProbes, "counter", {" 0"}},
    {kMetricProbeAheadFresh, "gauge", {" 0"}},
    {kMetricProbeAheadTaken, "gauge", {" 0"}},
    {kMetricProbeAheadConflicts, "counter", {" 0"}},
    {kMetricProbeAheadAnnounced, "counter", {" 0"}},
    {kMetricLeaseRenewals, "counter", {"{result=\"failure\"} 0", "{result=\"success\"} 0"}},
    {kMetricLeaseQuiet, "gauge", {" 0"}},
    // Set by the agent when it reads the LBNodeAgents (all four states).
    {kMetricSelectorState, "gauge", {}},
    // Heartbeats on only: set by the first pass that runs them.
    {kMetricHeartbeatPeers, "gauge", {}},
    {kMetricHeartbeatHealthy, "gauge", {}},
};

void ExpectAtStart(const std::string& text) {
  test_support::ExpectFamiliesAtStart(text, kFamilies);
}

TEST(AgentMetrics, EverySeriesKnownUpFrontStartsAtZero) {
  metrics::Registry r;
  DescribeAgentMetrics(r);
  ExpectAtStart(r.Render());
}

// The reconciler declares the families as it is built (the Agent declares them again): a winner
// change counter exists before the first pass.
TEST(AgentMetrics, ReconcilerExportsThemBeforeItsFirstPass) {
  testing::AgentWorld w("node1");
  ExpectAtStart(w.metrics_.Render());
}

// Declaring again (Agent after Reconciler) keeps what was counted.
TEST(AgentMetrics, DeclaringAgainKeepsCounts) {
  metrics::Registry r;
  DescribeAgentMetrics(r);
  r.Add(kMetricWinnerChanges, {}, 2);
  r.Add(kMetricGarpSent, {{"family", "IPv6"}});
  DescribeAgentMetrics(r);
  EXPECT_EQ(r.Get(kMetricWinnerChanges, {}), 2);
  EXPECT_EQ(r.Get(kMetricGarpSent, {{"family", "IPv6"}}), 1);
  EXPECT_NE(r.Render().find("purelb_garp_sent_total{family=\"IPv4\"} 0\n"), std::string::npos);
}

}  // namespace
}  // namespace pylon::agent
