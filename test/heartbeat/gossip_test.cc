// Gossip: reports about a ring member this node does not monitor, and the verdict drawn from them.
#include "heartbeat/gossip.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace pylon::heartbeat {
namespace {

using election::NodeName;

struct Step {
  const char* reporter;
  std::uint64_t reporter_boot;
  std::uint64_t id;
  std::uint64_t subject_boot;
  std::uint64_t subject_sequence;
  ReportKind kind;
  bool expect_new;
  std::optional<PeerState> expect;  // Verdict of subject "x" after the step
};

struct Scenario {
  const char* name;
  std::vector<const char*> monitors;
  std::vector<Step> steps;
};

constexpr auto kAlive = ReportKind::kAlive;
constexpr auto kDead = ReportKind::kDead;
constexpr auto kUnhealthy = ReportKind::kUnhealthy;
constexpr auto kLeaving = ReportKind::kLeaving;
const std::optional<PeerState> kNone;
const std::optional<PeerState> kIsDead = PeerState::kDead;
const std::optional<PeerState> kIsUnhealthy = PeerState::kUnhealthy;

// Report `id` of `reporter` (at its boot `reporter_boot`) about subject "x" at its boot `boot`,
// sequence `seq`.
Report About(const char* reporter, std::uint64_t reporter_boot, std::uint64_t id,
             std::uint64_t boot, std::uint64_t seq, ReportKind kind) {
  return Report{NodeName(reporter), reporter_boot, id, NodeName("x"), boot, seq, kind};
}

TEST(Gossip, Scenarios) {
  // clang-format off
  const std::vector<Scenario> scenarios = {
      {"one monitor's dead report is not enough; the second condemns", {"m1", "m2", "m3", "m4"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m2", 1, 10, 7, 101, kDead, true, kIsDead}}},
      {"the same report flooded twice counts once", {"m1", "m2", "m3", "m4"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m1", 1, 10, 7, 100, kDead, false, kNone}}},
      {"a dead report from a node that does not monitor the subject is ignored", {"m1", "m2"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"far", 1, 3, 7, 100, kDead, true, kNone}}},
      {"a lone monitor (two-node ring) condemns by itself", {"m1"}, {{"m1", 1, 10, 7, 100, kDead, true, kIsDead}}},
      {"an alive report with a later sequence clears the dead reports (a false suspicion)", {"m1", "m2", "m3", "m4"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m2", 1, 10, 7, 100, kDead, true, kIsDead}, {"m1", 1, 11, 7, 101, kAlive, true, kNone}, {"m3", 1, 4, 7, 99, kDead, true, kNone}}},
      {"an alive report no later than a dead one does not clear it", {"m1", "m2"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m2", 1, 10, 7, 100, kAlive, true, kNone}, {"m2", 1, 11, 7, 100, kDead, true, kIsDead}}},
      {"the subject refutes a report about itself with its current sequence", {"m1", "m2"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m2", 1, 10, 7, 100, kDead, true, kIsDead}, {"x", 7, 140, 7, 140, kAlive, true, kNone}}},
      {"unhealthy from one monitor is enough (the subject said so), cleared when eligible again", {"m1", "m2"}, {{"m1", 1, 10, 7, 100, kUnhealthy, true, kIsUnhealthy}, {"m2", 1, 10, 7, 120, kAlive, true, kNone}}},
      {"leaving is dead at once", {"m1", "m2"}, {{"m2", 1, 10, 7, 100, kLeaving, true, kIsDead}}},
      {"a new boot id starts afresh: the old boot's reports are gone", {"m1", "m2"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m2", 1, 10, 8, 1, kAlive, true, kNone}, {"m2", 1, 11, 8, 5, kDead, true, kNone}, {"m1", 1, 11, 8, 5, kDead, true, kIsDead}}},
      {"a reporter's restart (new boot) with a reused id is a new report", {"m1", "m2"}, {{"m1", 1, 10, 7, 100, kDead, true, kNone}, {"m1", 2, 10, 7, 100, kDead, true, kNone}}},
  };
  // clang-format on
  for (const auto& sc : scenarios) {
    SCOPED_TRACE(sc.name);
    Gossip g;
    std::vector<NodeName> monitors(sc.monitors.begin(), sc.monitors.end());
    int i = 0;
    for (const auto& st : sc.steps) {
      SCOPED_TRACE("step " + std::to_string(i++));
      const Report r = About(st.reporter, st.reporter_boot, st.id, st.subject_boot,
                             st.subject_sequence, st.kind);
      EXPECT_EQ(g.Accept(r), st.expect_new);
      EXPECT_EQ(g.Verdict(NodeName("x"), monitors), st.expect);
      // Engine::Sync looks for verdicts among the suspects only.
      if (st.expect) {
        EXPECT_EQ(g.suspects().count(NodeName("x")), 1u);
      }
    }
  }
}

TEST(Gossip, StandingDeadAndForget) {
  Gossip g;
  EXPECT_EQ(g.StandingDead(NodeName("x")), std::nullopt);
  g.Accept(About("m1", 1, 1, 7, 90, kDead));
  g.Accept(About("m2", 1, 1, 7, 95, kDead));
  EXPECT_EQ(g.StandingDead(NodeName("x")), 95u);
  g.Forget(NodeName("x"));
  EXPECT_EQ(g.subjects(), 0u);
  EXPECT_EQ(g.StandingDead(NodeName("x")), std::nullopt);
}

// A subject is a suspect while a bad report about it stands, whoever made it: Engine::Sync
// visits the suspects only, so none it could condemn may be missing.
TEST(Gossip, SuspectsAreTheSubjectsWithABadReportStanding) {
  const NodeName x("x");
  struct Row {
    const char* what;
    Report report;
    bool suspect = true;  // after the report
  };
  const std::vector<Row> rows = {
      {"an alive report only", About("m1", 1, 1, 7, 50, kAlive), false},
      {"one dead report (no verdict yet)", About("m1", 1, 2, 7, 60, kDead)},
      {"from a non-monitor too", About("far", 1, 1, 7, 60, kDead)},
      {"an older alive report leaves them", About("m2", 1, 1, 7, 55, kAlive)},
      {"a later alive report clears them", About("m2", 1, 2, 7, 61, kAlive), false},
      {"unhealthy", About("m2", 1, 3, 7, 70, kUnhealthy)},
      {"a new boot starts afresh", About("m2", 1, 4, 8, 1, kAlive), false},
      {"leaving", About("m1", 1, 3, 8, 2, kLeaving)},
  };
  Gossip g;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_TRUE(g.Accept(row.report));
    EXPECT_EQ(g.suspects().count(x) == 1, row.suspect);
  }
  g.Forget(x);
  EXPECT_TRUE(g.suspects().empty());
}

// What is forwarded: a report that would change this book's verdict or clear a standing report.
TEST(Gossip, IsNews) {
  const std::vector<NodeName> monitors = {NodeName("m1"), NodeName("m2"), NodeName("m3"),
                                          NodeName("m4")};
  struct Row {
    const char* what;
    Report report;
    bool news = false;  // to be forwarded
  };
  const Row rows[] = {
      {"the first dead report", About("m1", 1, 1, 7, 100, kDead), true},
      {"the second: it forms the verdict", About("m2", 1, 1, 7, 100, kDead), true},
      {"a third once condemned", About("m3", 1, 1, 7, 100, kDead)},
      {"leaving once condemned", About("m4", 1, 1, 7, 100, kLeaving)},
      {"the subject's new boot", About("m1", 1, 2, 8, 1, kAlive), true},
      {"a second alive report of that boot", About("m2", 1, 2, 8, 2, kAlive)},
      {"a stale dead report (before the alive one)", About("m3", 1, 2, 8, 1, kDead)},
      {"a fresh dead report", About("m3", 1, 3, 8, 9, kDead), true},
      {"an alive report that clears it", About("x", 8, 10, 8, 10, kAlive), true},
      {"unhealthy", About("m1", 1, 3, 8, 11, kUnhealthy), true},
      {"unhealthy again from another monitor", About("m2", 1, 3, 8, 11, kUnhealthy)},
      {"leaving while unhealthy (turns it dead)", About("m2", 1, 4, 8, 12, kLeaving), true},
      {"a report from an older boot (starts afresh)", About("m4", 1, 2, 7, 200, kAlive), true},
  };
  Gossip g;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_EQ(g.IsNews(row.report, monitors), row.news);
    EXPECT_TRUE(g.Accept(row.report));
  }
}

TEST(Gossip, RemembersABoundedNumberOfReports) {
  Gossip g;
  for (std::uint64_t id = 1; id <= kRememberedReports + 1; ++id) {
    ASSERT_TRUE(g.Accept(About("m1", 1, id, 7, id, kAlive)));
  }
  // The oldest was forgotten, the newest is still known.
  EXPECT_TRUE(g.Accept(About("m1", 1, 1, 7, 1, kAlive)));
  EXPECT_FALSE(g.Accept(About("m1", 1, kRememberedReports + 1, 7, 1, kAlive)));
}

}  // namespace
}  // namespace pylon::heartbeat
