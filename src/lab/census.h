// What a running lab costs in steady state, for the scale tables (docs/failover.md, "A big lab"):
// per agent, heartbeat datagrams per second (its /metrics) and CPU and RSS (/proc); per API user,
// requests per second (the control plane's audit log). Read by `pylon-dev lab failover` before its
// cases.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "lab/lab.h"
#include "lab/topology.h"

namespace pylon::lab {

// A value of the agent's /metrics in `node` (e.g. `purelb_heartbeat_peers{state="alive"}`, labels
// written as the agent renders them); -1 when the agent does not answer or lacks the metric.
double AgentMetric(const LabNode& node, const std::string& series);

// Requests per user and verb/resource, from the audit log lines (JSON, one event per line) that
// completed (stage ResponseComplete). Pure.
struct AuditCounts {
  std::map<std::string, double> by_user;                                 // user -> requests
  std::map<std::string, std::map<std::string, double>> by_user_request;  // user -> "verb resource"
};
AuditCounts CountAudit(const std::string& lines);

// Watches the lab for `window` and returns the table's lines.
std::vector<std::string> Census(const Lab& lab, Duration window);

}  // namespace pylon::lab
