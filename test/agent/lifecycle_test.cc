// DecideStop (src/agent/lifecycle.h): restart or leave on SIGTERM, one row per signal, from
// Node / Pod / DaemonSet objects as the API server returns them.
#include "agent/lifecycle.h"

#include <gtest/gtest.h>

namespace pylon::agent {
namespace {

Json Node(const std::string& extra_metadata = "{}", const std::string& spec = "{}",
          const std::string& status = "{}") {
  Json n = Json::parse(R"({"metadata":{"name":"node1"}})");
  n["metadata"].update(Json::parse(extra_metadata));
  n["spec"] = Json::parse(spec);
  n["status"] = Json::parse(status);
  return n;
}

Json Pod(bool deleting, const std::string& generation = "3", const std::string& status = "{}") {
  Json p = Json::parse(R"({"metadata":{"name":"agent-x","labels":{},
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"agent"}]}})");
  if (!generation.empty()) p["metadata"]["labels"]["pod-template-generation"] = generation;
  if (deleting) p["metadata"]["deletionTimestamp"] = "2026-11-27T03:00:00Z";
  p["status"] = Json::parse(status);
  return p;
}

Json DaemonSet(long long generation, bool deleting = false) {
  Json d = Json::parse(R"({"metadata":{"name":"agent"}})");
  d["metadata"]["generation"] = generation;
  if (deleting) d["metadata"]["deletionTimestamp"] = "2026-11-27T03:00:00Z";
  return d;
}

TEST(ParseFacts, NodeSignals) {
  EXPECT_FALSE(ParseNodeFacts(nullptr).found);
  const Json excluded =
      Node(R"({"labels":{"node.kubernetes.io/exclude-from-external-load-balancers":""}})");
  EXPECT_TRUE(ParseNodeFacts(&excluded).exclude_label);
  const Json tainted = Node("{}", R"({"taints":[{"key":"node.kubernetes.io/out-of-service",
      "effect":"NoExecute"},{"key":"ToBeDeletedByClusterAutoscaler","effect":"NoSchedule"}]})");
  EXPECT_TRUE(ParseNodeFacts(&tainted).out_of_service);
  EXPECT_TRUE(ParseNodeFacts(&tainted).to_be_deleted);
  const Json shutting = Node("{}", "{}", R"({"conditions":[{"type":"Ready","status":"False",
      "reason":"KubeletNotReady","message":"node is shutting down"}]})");
  EXPECT_TRUE(ParseNodeFacts(&shutting).shutting_down);
  const Json cordoned = Node("{}", R"({"unschedulable":true})");
  EXPECT_TRUE(ParseNodeFacts(&cordoned).unschedulable);
  const Json deleting = Node(R"({"deletionTimestamp":"2026-11-27T03:00:00Z"})");
  EXPECT_TRUE(ParseNodeFacts(&deleting).deleting);
  const Json plain = Node();
  const NodeFacts f = ParseNodeFacts(&plain);
  EXPECT_TRUE(f.found);
  EXPECT_FALSE(f.deleting || f.exclude_label || f.out_of_service || f.to_be_deleted ||
               f.shutting_down || f.unschedulable);
}

// Which nodes may win no address while their agents run (PlanInputs::excluded_nodes).
TEST(LeavingLoadBalancing, Table) {
  struct Row {
    const char* what;
    Json node;
    bool leaving;
  };
  const std::vector<Row> rows = {
      {"plain", Node(), false},
      {"cordoned", Node("{}", R"({"unschedulable":true})"), false},
      {"exclude label",
       Node(R"({"labels":{"node.kubernetes.io/exclude-from-external-load-balancers":"true"}})"),
       true},
      {"out-of-service taint",
       Node("{}",
            R"({"taints":[{"key":"node.kubernetes.io/out-of-service","effect":"NoExecute"}]})"),
       true},
      {"autoscaler taint",
       Node("{}", R"({"taints":[{"key":"ToBeDeletedByClusterAutoscaler","effect":"NoSchedule"}]})"),
       true},
      {"being deleted", Node(R"({"deletionTimestamp":"2026-11-27T03:00:00Z"})"), true},
      {"shutting down", Node("{}", "{}", R"({"conditions":[{"type":"Ready","status":"False",
          "message":"node is shutting down"}]})"),
       true},
      {"another label", Node(R"({"labels":{"node.kubernetes.io/exclude-disruption":"true"}})"),
       false},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(LeavingLoadBalancing(ParseNodeFacts(&r.node)), r.leaving) << r.what;
  }
  EXPECT_FALSE(LeavingLoadBalancing(ParseNodeFacts(nullptr))) << "a Node not seen";
}

TEST(ParseFacts, PodAndDaemonSet) {
  const Json p = Pod(true, "7");
  const PodFacts f = ParsePodFacts(&p);
  EXPECT_TRUE(f.found && f.deleting);
  EXPECT_EQ(f.template_generation, 7);
  EXPECT_EQ(f.daemonset, "agent");
  const Json bad = Pod(false, "x7");
  EXPECT_FALSE(ParsePodFacts(&bad).template_generation.has_value());
  const Json disrupted =
      Pod(false, "1", R"({"conditions":[{"type":"DisruptionTarget","status":"True"}]})");
  EXPECT_TRUE(ParsePodFacts(&disrupted).disruption_target);
  const Json shutdown = Pod(false, "1", R"({"reason":"Terminated"})");
  EXPECT_TRUE(ParsePodFacts(&shutdown).node_shutdown);
  const Json d = DaemonSet(9, true);
  EXPECT_EQ(ParseDaemonSetFacts(&d).generation, 9);
  EXPECT_TRUE(ParseDaemonSetFacts(&d).deleting);
  EXPECT_FALSE(ParseDaemonSetFacts(nullptr).found);
}

TEST(DecideStop, Table) {
  struct Case {
    const char* name;
    SigtermMode mode = SigtermMode::kAuto;
    bool in_pod = true;
    bool lookup_failed = false;
    std::optional<Json> node = Node();
    std::optional<Json> pod = Pod(false);
    std::optional<Json> ds = DaemonSet(3);
    bool restart = false;
  };
  const Json exclude =
      Node(R"({"labels":{"node.kubernetes.io/exclude-from-external-load-balancers":"true"}})");
  const Json oos = Node("{}", R"({"taints":[{"key":"node.kubernetes.io/out-of-service"}]})");
  const Json ca = Node("{}", R"({"taints":[{"key":"ToBeDeletedByClusterAutoscaler"}]})");
  const Json cordon = Node("{}", R"({"unschedulable":true,
      "taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"}]})");
  const Json node_deleting = Node(R"({"deletionTimestamp":"2026-11-27T03:00:00Z"})");
  const Json shutting = Node("{}", "{}", R"({"conditions":[{"type":"Ready","status":"False",
      "message":"node is shutting down"}]})");
  const Json disrupted =
      Pod(false, "3", R"({"conditions":[{"type":"DisruptionTarget","status":"True"}]})");
  const Json terminated = Pod(false, "3", R"({"reason":"Terminated"})");
  const std::vector<Case> cases = {
      {.name = "container restart (pod stays, node stays)", .restart = true},
      {.name = "DaemonSet rollout", .pod = Pod(true, "3"), .ds = DaemonSet(4), .restart = true},
      {.name = "kubectl delete pod, no rollout",
       .pod = Pod(true, "3"),
       .ds = DaemonSet(3),
       .restart = true},
      {.name = "cordon alone changes nothing", .node = cordon, .restart = true},
      {.name = "cordon during a rollout",
       .node = cordon,
       .pod = Pod(true, "3"),
       .ds = DaemonSet(4),
       .restart = true},
      {.name = "uninstall: DaemonSet gone", .pod = Pod(true, "3"), .ds = std::nullopt},
      {.name = "uninstall: DaemonSet being deleted",
       .pod = Pod(true, "3"),
       .ds = DaemonSet(3, true)},
      {.name = "exclude label", .node = exclude},
      {.name = "exclude label during a rollout",
       .node = exclude,
       .pod = Pod(true, "3"),
       .ds = DaemonSet(4)},
      {.name = "out-of-service taint", .node = oos},
      {.name = "cluster autoscaler scale-down", .node = ca},
      {.name = "node being deleted", .node = node_deleting},
      {.name = "node gone", .node = std::nullopt},
      {.name = "graceful node shutdown (node condition)", .node = shutting},
      {.name = "graceful node shutdown (pod reason)", .pod = terminated},
      {.name = "eviction (DisruptionTarget)", .pod = disrupted},
      {.name = "pod gone", .pod = std::nullopt},
      {.name = "pod deleted without a DaemonSet owner",
       .pod =
           Json::parse(R"({"metadata":{"name":"a","deletionTimestamp":"2026-11-27T03:00:00Z"}})")},
      {.name = "a lookup failed: unsure", .lookup_failed = true},
      {.name = "not in a pod: unsure", .in_pod = false},
      {.name = "forced restart, even if the node leaves",
       .mode = SigtermMode::kRestart,
       .in_pod = false,
       .lookup_failed = true,
       .node = node_deleting,
       .pod = std::nullopt,
       .ds = std::nullopt,
       .restart = true},
      {.name = "forced leave", .mode = SigtermMode::kLeave},
  };
  for (const auto& c : cases) {
    StopFacts f;
    f.mode = c.mode;
    f.in_pod = c.in_pod;
    f.lookup_failed = c.lookup_failed;
    f.lookup_error = "pod agent-x: connection refused";
    f.node = ParseNodeFacts(c.node ? &*c.node : nullptr);
    f.pod = ParsePodFacts(c.pod ? &*c.pod : nullptr);
    f.daemonset = ParseDaemonSetFacts(c.ds ? &*c.ds : nullptr);
    const StopDecision d = DecideStop(f);
    EXPECT_EQ(d.restart, c.restart) << c.name << ": " << d.why;
    EXPECT_FALSE(d.why.empty()) << c.name;
  }
}

TEST(SigtermMode, Parse) {
  for (auto m : {SigtermMode::kAuto, SigtermMode::kRestart, SigtermMode::kLeave}) {
    EXPECT_EQ(ParseSigtermMode(SigtermModeName(m)), m);
  }
  EXPECT_FALSE(ParseSigtermMode("sometimes").has_value());
}

}  // namespace
}  // namespace pylon::agent
