// The agent's metric families before anything happened: every series known up front exists at
// 0, so a dashboard or an alert sees it from the start (docs/operate.md, Metrics).
#include "agent/agent_metrics.h"

#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "agent_world.h"

namespace pylon::agent {
namespace {

// The sample lines of an exposition, by family: name → {"{labels} value", ...}.
std::map<std::string, std::set<std::string>> Samples(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto end = line.find_first_of("{ ");
    out[line.substr(0, end)].insert(line.substr(end));
  }
  return out;
}

struct Family {
  const char* name;
  const char* type;                // as in "# TYPE"
  std::set<std::string> at_start;  // "{labels} 0" lines; empty: no series yet
};

// Every family the agent exports, and its series before the first pass.
const Family kFamilies[] = {
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
  const auto samples = Samples(text);
  std::set<std::string> names;
  for (const Family& f : kFamilies) {
    SCOPED_TRACE(f.name);
    names.insert(f.name);
    EXPECT_NE(text.find(std::string("# TYPE ") + f.name + " " + f.type + "\n"), std::string::npos)
        << text;
    auto it = samples.find(f.name);
    EXPECT_EQ(it == samples.end() ? std::set<std::string>{} : it->second, f.at_start) << text;
  }
  for (const auto& [name, lines] : samples) EXPECT_TRUE(names.count(name)) << "unlisted " << name;
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
