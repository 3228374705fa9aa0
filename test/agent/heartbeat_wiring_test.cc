// The agent-side wiring of heartbeats and re-announcement: flags/environment, the split-brain
// yield hook of the Reconciler, the addresses reported as held, and periodic re-announcement.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/options.h"
#include "agent/reconciler.h"
#include "agent_world.h"
#include "common/cli.h"
#include "support/scoped_env.h"

namespace pylon::agent::testing {
namespace {

struct OptCase {
  std::string name;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  bool ok;
  std::string key_file;
  Duration interval;
  int miss_count;
  int port;
  Duration reannounce;
};

class AgentHeartbeatOptionsTest : public ::testing::TestWithParam<OptCase> {};

TEST_P(AgentHeartbeatOptionsTest, Parses) {
  const OptCase& c = GetParam();
  std::vector<std::string> args = {"--node-name", "node1"};
  args.insert(args.end(), c.args.begin(), c.args.end());
  const pylon::test_support::ScopedEnv env(c.env);
  auto o = ParseAgentOptions(args);
  ASSERT_EQ(o.has_value(), c.ok) << (o ? "parsed" : o.error().message());
  if (!c.ok) return;
  EXPECT_EQ(o->heartbeat.key_file, c.key_file);
  EXPECT_EQ(o->heartbeat.enabled(), !c.key_file.empty());
  EXPECT_EQ(o->heartbeat.interval, c.interval);
  EXPECT_EQ(o->heartbeat.miss_count, c.miss_count);
  EXPECT_EQ(o->heartbeat.port, c.port);
  EXPECT_EQ(o->reannounce_interval, c.reannounce);
}

INSTANTIATE_TEST_SUITE_P(
    Table, AgentHeartbeatOptionsTest,
    ::testing::Values(
        OptCase{"Defaults", {}, {}, true, "", milliseconds(100), 3, 7934, Duration(0)},
        OptCase{
            "Flags",
            {"--heartbeat-key-file", "/k", "--heartbeat-interval=50ms", "--heartbeat-miss-count",
             "4", "--heartbeat-port", "9000", "--reannounce-interval", "60s"},
            {},
            true,
            "/k",
            milliseconds(50),
            4,
            9000,
            seconds(60)},
        OptCase{"EnvThenFlagOverrides",
                {"--heartbeat-port", "9001"},
                {{"PYLON_HEARTBEAT_KEY_FILE", "/env"}, {"PYLON_HEARTBEAT_PORT", "9002"}},
                true,
                "/env",
                milliseconds(100),
                3,
                9001,
                Duration(0)},
        OptCase{"BadMissCount", {"--heartbeat-miss-count", "1"}, {}, false},
        OptCase{"UnknownHeartbeatFlag", {"--heartbeat-bogus", "1"}, {}, false},
        OptCase{"MissingValue", {"--heartbeat-port"}, {}, false},
        OptCase{"NegativeReannounce", {"--reannounce-interval", "-1s"}, {}, false},
        OptCase{"TooFrequentReannounce", {"--reannounce-interval", "10ms"}, {}, false}),
    [](const auto& p) { return p.param.name; });

// --heartbeat-interval takes Go's duration syntax (common/duration.h, as every other duration
// flag); the range check then refuses what makes no sense as a heartbeat period.
TEST(AgentHeartbeatOptionsTest, IntervalTable) {
  struct Row {
    const char* text;
    std::optional<Duration> want;
  };
  const Row rows[] = {
      {"100ms", milliseconds(100)},    {"1s", seconds(1)},          {"1.5s", milliseconds(1500)},
      {"1s500ms", milliseconds(1500)}, {"0.1s", milliseconds(100)}, {"10ms", milliseconds(10)},
      {"100", std::nullopt},           {"ms", std::nullopt},        {"1.2.3s", std::nullopt},
      {"-1s", std::nullopt},           {"1m", std::nullopt},        {"", std::nullopt},
      {"250us", std::nullopt},  // not whole milliseconds, and under 10ms
  };
  for (const auto& r : rows) {
    auto o = ParseAgentOptions({"--node-name=n1", std::string("--heartbeat-interval=") + r.text});
    EXPECT_EQ(o.has_value(), r.want.has_value()) << r.text;
    if (o && r.want) {
      EXPECT_EQ(o->heartbeat.interval, *r.want) << r.text;
    }
  }
}

// Each bad flag or variable is refused and named: the variable when the value came from it.
TEST(AgentHeartbeatOptionsTest, BadValuesAreNamed) {
  struct Row {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    const char* mentions;
  };
  const Row rows[] = {
      {{"--heartbeat-port=0"}, {}, "--heartbeat-port"},
      {{"--heartbeat-port=70000"}, {}, "--heartbeat-port"},
      {{"--heartbeat-interval=fast"}, {}, "--heartbeat-interval"},
      {{"--heartbeat-key-file="}, {}, "--heartbeat-key-file"},
      {{"--heartbeat-miss-count=21"}, {}, "--heartbeat-miss-count"},
      {{},
       {{"PYLON_HEARTBEAT_MISS_COUNT", "x"}},
       "PYLON_HEARTBEAT_MISS_COUNT (--heartbeat-miss-count)"},
      {{}, {{"PYLON_HEARTBEAT_INTERVAL", "1m"}}, "heartbeat interval must be 10ms..10s"},
      {{}, {{"PYLON_ON_SIGTERM", "never"}}, "PYLON_ON_SIGTERM (--on-sigterm)"},
  };
  for (const auto& r : rows) {
    const pylon::test_support::ScopedEnv env(r.env);
    std::vector<std::string> args = {"--node-name=n1"};
    args.insert(args.end(), r.args.begin(), r.args.end());
    auto o = ParseAgentOptions(args);
    ASSERT_FALSE(o) << r.mentions;
    EXPECT_NE(o.error().message().find(r.mentions), std::string::npos) << o.error().message();
  }
  // The variables, and a flag given too.
  const pylon::test_support::ScopedEnv env({{"PYLON_HEARTBEAT_INTERVAL", "50ms"},
                                            {"PYLON_HEARTBEAT_INTERFACE", "eth1"},
                                            {"PYLON_HEARTBEAT_MISS_COUNT", "4"}});
  auto o = ParseAgentOptions({"--node-name=n1", "--heartbeat-miss-count=5"});
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_EQ(o->heartbeat.interval, milliseconds(50));
  EXPECT_EQ(o->heartbeat.interface, "eth1");
  EXPECT_EQ(o->heartbeat.miss_count, 5);
}

TEST(AgentHeartbeatOptionsTest, UsageListsTheHeartbeatFlags) {
  AgentOptions o;
  const std::string usage = NewAgentCommand(&o)->help();
  EXPECT_NE(usage.find("--heartbeat-key-file"), std::string::npos);
  EXPECT_NE(usage.find("--reannounce-interval"), std::string::npos);
  EXPECT_NE(usage.find("Env:PYLON_HEARTBEAT_INTERVAL"), std::string::npos) << usage;
}

// --- Split-brain yield ---------------------------------------------------------------------

PassResult PassWith(AgentWorld& w, const YieldFn& yield) {
  PlanInputs in;
  in.network = &w.network_;
  in.config = &w.config_;
  in.services = &w.services_;
  in.l2advertisements = &w.l2advs_;
  in.healthy = true;
  in.excluded_nodes = &w.excluded_;
  return w.reconciler_->Run(in, w.membership_, yield);
}

TEST(ReconcilerYieldTest, YieldedAddressIsNotAddedAndNotReportedHeld) {
  const std::string ip = "192.0.2.100";
  const std::string winner = HashWinner(kNodes, Ip(ip));
  AgentWorld w(winner);
  w.services_.push_back(Svc("web", {.ips = {ip, "192.0.2.101"}}));
  std::vector<net::IpAddress> offered;
  PassWith(w, [&](std::span<const net::IpAddress> mine) {
    offered.assign(mine.begin(), mine.end());
    return std::vector<net::IpAddress>{Ip(ip)};
  });
  EXPECT_FALSE(w.KernelHas(w.eth0_, ip + "/24"));
  for (const auto& h : w.reconciler_->HeldLocal()) EXPECT_NE(h, Ip(ip));
  EXPECT_NE(std::find(offered.begin(), offered.end(), Ip(ip)), offered.end());

  // Once the peer's claim is gone (nothing to yield), the address is taken and reported held.
  PassWith(w, [](std::span<const net::IpAddress>) { return std::vector<net::IpAddress>{}; });
  EXPECT_TRUE(w.KernelHas(w.eth0_, ip + "/24"));
  auto held = w.reconciler_->HeldLocal();
  EXPECT_NE(std::find(held.begin(), held.end(), Ip(ip)), held.end());
}

TEST(ReconcilerYieldTest, HeldLocalIsEmptyOnLosersAndAfterWithdrawal) {
  const std::string ip = "192.0.2.100";
  const std::string winner = HashWinner(kNodes, Ip(ip));
  AgentWorld loser(SomeLoser(kNodes, winner));
  loser.services_.push_back(Svc("web", {.ips = {ip}}));
  loser.Pass();
  EXPECT_TRUE(loser.reconciler_->HeldLocal().empty());

  AgentWorld w(winner);
  w.services_.push_back(Svc("web", {.ips = {ip}}));
  w.Pass();
  EXPECT_EQ(w.reconciler_->HeldLocal(), std::vector<net::IpAddress>{Ip(ip)});
  w.healthy_ = false;
  w.Pass();
  EXPECT_TRUE(w.reconciler_->HeldLocal().empty());
}

// --- Re-announcement -------------------------------------------------------------------------

// Runs a pass every 100 ms for `d` (as the agent loop would, renewals included) and returns the
// announcements sent meanwhile.
std::size_t Idle(AgentWorld& w, Duration d) {
  const std::size_t before = w.announcer_.sent().size();
  for (Duration t{0}; t < d; t += milliseconds(100)) {
    w.Advance(milliseconds(100), kNodes);
    w.Pass();
  }
  return w.announcer_.sent().size() - before;
}

TEST(ReconcilerReannounceTest, HeldAddressesAreReannouncedEveryInterval) {
  const std::string ip = "192.0.2.100";
  const std::string winner = HashWinner(kNodes, Ip(ip));
  for (Duration interval : {Duration(0), Duration(seconds(20))}) {
    SCOPED_TRACE(interval.count());
    AgentWorld w(winner);
    ReconcilerDeps d{w.planner_.get(), w.sync_.get(), &w.garp_,    &w.announcer_,
                     &w.nl_,           &w.writer_,    &w.metrics_, &w.clock_};
    d.reannounce_interval = interval;
    w.reconciler_ = std::make_unique<Reconciler>(d);
    w.services_.push_back(Svc("web", {.ips = {ip}}));
    w.Pass();
    const std::size_t takeover = w.announcer_.sent().size() + Idle(w, seconds(5));
    EXPECT_GT(takeover, 0u);
    // Until the interval has passed since the first pass: nothing more.
    EXPECT_EQ(Idle(w, seconds(14)), 0u);
    // Within the next two seconds: exactly one burst when on, none when off.
    EXPECT_EQ(Idle(w, seconds(2)), interval == Duration(0) ? 0u : takeover);
    // And again one interval later.
    EXPECT_EQ(Idle(w, seconds(20)), interval == Duration(0) ? 0u : takeover);
  }
}

// The freeze case: this node held an address, was cut off (another node took the address over and
// announced it), and hears its peers again still holding it -- never "added" again, so only
// ReannounceHeld tells the neighbours to come back. One full burst for what is held, none for
// what is not.
TEST(ReconcilerReannounceTest, ReannounceHeldSendsABurstForEveryHeldAddress) {
  const std::string ip = "192.0.2.100";
  WinnerWorld w(ip);
  w.Serve("web", {ip});
  const std::size_t takeover = w.announcer_.sent().size() + Idle(w, seconds(5));
  ASSERT_GT(takeover, 0u);
  EXPECT_EQ(Idle(w, seconds(5)), 0u);  // held throughout: nothing more by itself
  const std::size_t before = w.announcer_.sent().size();
  w.reconciler_->ReannounceHeld();
  EXPECT_EQ(w.announcer_.sent().size() - before + Idle(w, seconds(5)), takeover);
  for (std::size_t i = before; i < w.announcer_.sent().size(); ++i) {
    EXPECT_EQ(w.announcer_.sent()[i].address, Ip(ip));
  }

  AgentWorld loser(SomeLoser(kNodes, w.self_));
  loser.Serve("web", {ip});
  loser.reconciler_->ReannounceHeld();
  EXPECT_EQ(Idle(loser, seconds(5)), 0u);
  EXPECT_TRUE(loser.announcer_.sent().empty());
}

}  // namespace
}  // namespace pylon::agent::testing
