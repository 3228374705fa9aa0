// `pylon-dev lab`'s command line (command.h, measure.h) without building a lab: the outcomes of
// help and bad command lines, the flags landing where the subcommands read them, and the pure
// pieces of the measurements.
#include "lab/command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "lab/lab.h"
#include "lab/measure.h"
#include "lab/process.h"

namespace pylon::lab {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Outcome {
  int code = -1;
  std::string out, err;
};

// LabCommand on "lab" + args; only for command lines that stop before running anything.
Outcome RunLab(const std::vector<std::string>& args) {
  std::vector<std::string> storage = {"lab"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Outcome o;
  o.code = LabCommand(static_cast<int>(argv.size()), argv.data());
  o.out = testing::internal::GetCapturedStdout();
  o.err = testing::internal::GetCapturedStderr();
  return o;
}

TEST(LabCommandTest, HelpListsTheSubcommands) {
  auto o = RunLab({"--help"});
  EXPECT_EQ(o.code, cli::kExitOk);
  EXPECT_EQ(o.err, "");
  EXPECT_EQ(o.out.rfind("usage: pylon-dev lab <command> [flags]\n", 0), 0u) << o.out;
  for (const char* sub : {"up", "down", "status", "demo", "failover", "timing", "serve"}) {
    EXPECT_NE(o.out.find("\n  " + std::string(sub) + " "), std::string::npos) << sub << o.out;
  }
}

TEST(LabCommandTest, SubcommandHelp) {
  const struct {
    const char* sub;
    std::vector<const char*> flags;
  } cases[] = {
      {"up",
       {"--name", "--nodes", "--pylon", "--k8s-bin-dir", "--kube-proxy", "--proxy-mode", "--bgp"}},
      {"down", {"--name", "--all"}},
      {"status", {}},
      {"demo", {"--name", "--nodes", "--pylon", "--kube-proxy", "--bgp"}},
      {"failover",
       {"--name", "--runs", "--pylon", "--address-lifetime", "--cases", "--kube-proxy"}},
      {"timing", {"--name", "--runs", "--pylon", "--k8s-bin-dir"}},
      {"serve", {"--port", "--text", "--report-peer"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sub);
    auto o = RunLab({c.sub, "--help"});
    EXPECT_EQ(o.code, cli::kExitOk);
    EXPECT_EQ(o.err, "");
    EXPECT_EQ(o.out.rfind("usage: pylon-dev lab " + std::string(c.sub) + " [flags]\n", 0), 0u)
        << o.out;
    for (const char* flag : c.flags) EXPECT_NE(o.out.find(flag), std::string::npos) << flag;
  }
}

TEST(LabCommandTest, BadCommandLinesSayOneLine) {
  const struct {
    std::vector<std::string> args;
    const char* names;  // what the line must mention
  } cases[] = {
      {{}, "subcommand"},
      {{"nope"}, "nope"},
      {{"up", "--nope"}, "--nope"},
      {{"up", "--nodes", "40"}, "--nodes"},
      {{"demo", "--nodes", "1"}, "--nodes"},
      {{"up", "--name"}, "--name"},
      {{"down", "--all", "--name", "x"}, "--all"},
      {{"status", "extra"}, "extra"},
      {{"failover", "--runs", "0"}, "--runs"},
      {{"failover", "--address-lifetime", "soon"}, "--address-lifetime"},
      {{"failover", "--address-lifetime", "0"}, "must be positive"},
      {{"timing", "--kube-proxy"}, "--kube-proxy"},
      {{"serve", "--port", "70000"}, "--port"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.args));
    auto o = RunLab(c.args);
    EXPECT_EQ(o.code, cli::kExitUsage);
    EXPECT_EQ(o.out, "");
    EXPECT_EQ(o.err.rfind("pylon-dev lab", 0), 0u) << o.err;
    EXPECT_NE(o.err.find(c.names), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    EXPECT_NE(o.err.find("; see --help\n"), std::string::npos) << o.err;
  }
}

// The responders' command lines the lab spawns (lab.cc, pods) parse.
TEST(LabCommandTest, ServeTakesTheLabsCommandLines) {
  for (const std::vector<const char*>& args :
       {std::vector<const char*>{"lab", "serve", "--port", "80", "--text", "node1"},
        std::vector<const char*>{"lab", "serve", "--port", "8080", "--text", "pod=a node=node1",
                                 "--report-peer=true"},
        std::vector<const char*>{"lab", "serve", "--report-peer"}}) {
    auto app = cli::NewCommand("pylon-dev lab", "");
    auto serve = AddServe(*app);
    EXPECT_EQ(cli::Parse(*app, static_cast<int>(args.size()), args.data()), std::nullopt);
    EXPECT_TRUE(serve.app->parsed());
    EXPECT_FALSE(serve.needs_root);
  }
}

std::optional<int> ParseInto(cli::App& app, const std::vector<const char*>& args) {
  std::vector<const char*> argv = {"test"};
  for (const char* a : args) argv.push_back(a);
  return cli::Parse(app, static_cast<int>(argv.size()), argv.data());
}

TEST(MeasureTest, FlagsLand) {
  MeasureFlags f;
  auto lab = cli::NewCommand("pylon-dev lab", "");
  AddMeasureCommand(*lab, "failover", "", /*runs=*/3, &f);
  EXPECT_EQ(f.build.name, "failover");
  EXPECT_EQ(f.runs, 3);
  ASSERT_EQ(ParseInto(*lab, {"failover", "--name", "fo", "--binary", "/opt/pylon", "--k8s-bin-dir",
                             "/k8s", "--runs", "7"}),
            std::nullopt);
  EXPECT_EQ(f.build.name, "fo");
  EXPECT_EQ(f.build.pylon, "/opt/pylon");
  EXPECT_EQ(f.build.k8s_bin_dir, "/k8s");
  EXPECT_EQ(f.runs, 7);

  MeasureFlags g;
  auto lab2 = cli::NewCommand("pylon-dev lab", "");
  AddMeasureCommand(*lab2, "timing", "", /*runs=*/5, &g);
  ASSERT_EQ(ParseInto(*lab2, {"timing", "--pylon=/p"}), std::nullopt);
  EXPECT_EQ(g.build.pylon, "/p");
  EXPECT_EQ(g.build.name, "timing");
  EXPECT_EQ(g.runs, 5);
}

TEST(MeasureTest, LabConfig) {
  const struct {
    const char* name;
    bool kube_proxy;
    Duration lifetime;
    std::vector<std::string> agent_args;
    Duration want_lifetime;
  } cases[] = {
      {"defaults", false, Duration::zero(), {}, seconds(3)},
      {"lifetime", false, milliseconds(2500), {"--address-lifetime", "2500ms"}, milliseconds(2500)},
      {"kube-proxy", true, Duration::zero(), {"--etp-local=elect"}, seconds(3)},
      {"both", true, seconds(5), {"--address-lifetime", "5s", "--etp-local=elect"}, seconds(5)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    MeasureFlags f;
    f.build = {.name = "fo", .pylon = "/opt/pylon", .k8s_bin_dir = "/k8s"};
    f.kube_proxy.enabled = c.kube_proxy;
    f.kube_proxy.mode = "iptables";
    f.address_lifetime = c.lifetime;
    LabConfig cfg = MeasureLabConfig(f);
    EXPECT_EQ(cfg.name, "fo");
    EXPECT_EQ(cfg.nodes, 3);
    EXPECT_EQ(cfg.binary, "/opt/pylon");
    EXPECT_EQ(cfg.dev_binary, SelfExe());
    EXPECT_EQ(cfg.k8s_bin_dir, "/k8s");
    EXPECT_EQ(cfg.kube_proxy, c.kube_proxy);
    EXPECT_EQ(cfg.proxy_mode, "iptables");
    EXPECT_EQ(cfg.agent_args, c.agent_args);
    EXPECT_EQ(AddressLifetime(f, cfg), c.want_lifetime);
  }
}

TEST(MeasureTest, DurationText) {
  EXPECT_EQ(DurationText(seconds(3)), "3s");
  EXPECT_EQ(DurationText(milliseconds(2500)), "2500ms");
  EXPECT_EQ(DurationText(std::chrono::minutes(1)), "60s");
}

TEST(MeasureTest, StatsRows) {
  const struct {
    std::vector<double> v;
    int runs;
    const char* want;
  } cases[] = {
      {{300, 100, 200}, 3, "     100      200      300"},
      {{100, 400}, 2, "     100      250      400"},
      {{-1, 100}, 2, "     100      100      100   1 of 2 runs: gone within 10 s"},
      {{100}, 3, "     100      100      100   (1 of 3 runs done)"},
      {{-1}, 1, "       -        -        -   1 of 1 runs: gone within 10 s"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Stats(c.v, c.runs, 10, "gone"), c.want);
  }
}

// The product binary runs allocator and agent; the responders run pylon-dev (its own `lab
// serve`), else the product binary when no pylon-dev is beside it.
TEST(LabConfigTest, BinaryDefaults) {
  LabConfig plain;
  plain.name = "ut";
  Lab lab(plain);
  lab.Detach();
  const auto self_dir = std::filesystem::path(SelfExe()).parent_path();
  EXPECT_EQ(lab.config().binary, (self_dir / "pylon").string());

  const auto dir = std::filesystem::path(testing::TempDir()) / "lab_binaries";
  std::filesystem::create_directories(dir);
  LabConfig alone;
  alone.name = "ut";
  alone.binary = (dir / "pylon").string();
  std::filesystem::remove(dir / "pylon-dev");
  Lab without_dev(alone);
  without_dev.Detach();
  EXPECT_EQ(without_dev.config().dev_binary, alone.binary);

  std::ofstream(dir / "pylon-dev") << "";
  Lab with_dev(alone);
  with_dev.Detach();
  EXPECT_EQ(with_dev.config().dev_binary, (dir / "pylon-dev").string());

  LabConfig set = alone;
  set.dev_binary = "/bin/pylon-dev";
  Lab explicit_dev(set);
  explicit_dev.Detach();
  EXPECT_EQ(explicit_dev.config().dev_binary, "/bin/pylon-dev");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pylon::lab
