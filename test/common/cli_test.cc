#include "common/cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/scoped_env.h"

namespace pylon::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Flags {
  std::string kubeconfig;
  Duration lease = seconds(15);
  log::Level level = log::Level::kInfo;
  bool verbose = false;
};

std::unique_ptr<App> Make(Flags* f) {
  auto app = NewCommand("pylon test", "a command for the test");
  app->add_option("--kubeconfig", f->kubeconfig, "kubeconfig file");
  AddDuration(*app, "--lease-duration", &f->lease, "lease duration");
  AddLogLevel(*app, &f->level);
  app->add_flag("--verbose", f->verbose, "more output");
  return app;
}

std::optional<int> ParseLine(App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.reserve(args.size() + 1);
  argv.push_back("test");
  for (const auto& a : args) argv.push_back(a.c_str());
  return Parse(app, static_cast<int>(argv.size()), argv.data());
}

struct Case {
  const char* name;
  std::vector<std::string> args;
  std::optional<int> want;  // nullopt: parsed, the command goes on
  const char* stderr_has;   // one line naming the problem ("" when it parses)
};

TEST(CliTest, ParseOutcomes) {
  const Case cases[] = {
      {"nothing", {}, std::nullopt, ""},
      {"separate value", {"--kubeconfig", "/k"}, std::nullopt, ""},
      {"joined value", {"--kubeconfig=/k", "--lease-duration=1m30s"}, std::nullopt, ""},
      {"help", {"--help"}, kExitOk, ""},
      {"short help", {"-h"}, kExitOk, ""},
      {"unknown flag", {"--nope"}, kExitUsage, "--nope"},
      {"missing value", {"--kubeconfig"}, kExitUsage, "--kubeconfig"},
      {"bad duration", {"--lease-duration", "soon"}, kExitUsage, "--lease-duration"},
      {"zero duration", {"--lease-duration", "0"}, kExitUsage, "must be positive"},
      {"bad level", {"--log-level", "loud"}, kExitUsage, "loud"},
      {"positional", {"extra"}, kExitUsage, "extra"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Flags f;
    auto app = Make(&f);
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    auto got = ParseLine(*app, c.args);
    std::string out = testing::internal::GetCapturedStdout();
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(got, c.want);
    if (c.want == kExitUsage) {
      EXPECT_EQ(err.rfind("pylon test: ", 0), 0u) << err;
      EXPECT_NE(err.find(c.stderr_has), std::string::npos) << err;
      EXPECT_NE(err.find("; see --help\n"), std::string::npos) << err;
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    } else {
      EXPECT_EQ(err, "");
    }
    if (c.want == kExitOk) {
      EXPECT_EQ(out.rfind("usage: pylon test [flags]\n", 0), 0u) << out;
    }
  }
}

TEST(CliTest, ValuesLand) {
  Flags f;
  auto app = Make(&f);
  ASSERT_EQ(ParseLine(*app, {"--kubeconfig=/k", "--lease-duration", "500ms", "--log-level", "debug",
                             "--verbose"}),
            std::nullopt);
  EXPECT_EQ(f.kubeconfig, "/k");
  EXPECT_EQ(f.lease, milliseconds(500));
  EXPECT_EQ(f.level, log::Level::kDebug);
  EXPECT_TRUE(f.verbose);
}

TEST(CliTest, HelpShowsDefaults) {
  Flags f;
  auto app = Make(&f);
  std::string help = app->help();
  EXPECT_NE(help.find("a command for the test"), std::string::npos) << help;
  EXPECT_NE(help.find("--lease-duration"), std::string::npos) << help;
  EXPECT_NE(help.find("15s"), std::string::npos) << help;
  EXPECT_NE(help.find("info"), std::string::npos) << help;
}

TEST(CliTest, ParseArgsIsSilent) {
  Flags f;
  auto app = Make(&f);
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  auto ok = ParseArgs(*app, {"--kubeconfig", "/k"});
  auto help = ParseArgs(*app, {"--help"});
  auto bad = ParseArgs(*app, {"--nope"});
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(*ok);
  ASSERT_TRUE(help);
  EXPECT_FALSE(*help);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("--nope"), std::string::npos);
}

TEST(CliTest, UsageErrorIsOneLine) {
  Flags f;
  auto app = Make(&f);
  testing::internal::CaptureStderr();
  EXPECT_EQ(UsageError(*app, "--node-name is required"), kExitUsage);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "pylon test: --node-name is required; see --help\n");
}

TEST(CliTest, HostPort) {
  struct HostPortCase {
    const char* text;
    bool ok;
    const char* host;
    int port;
  };
  const HostPortCase cases[] = {
      {"127.0.0.1:7472", true, "127.0.0.1", 7472},
      {"[::1]:9000", true, "::1", 9000},
      {":9", true, "", 9},
      {"h:0", true, "h", 0},
      {"nowhere", false, "", 0},
      {"h:99999", false, "", 0},
      {"h:", false, "", 0},
      {"h:x", false, "", 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto hp = ParseHostPort(c.text);
    ASSERT_EQ(hp.has_value(), c.ok);
    if (!c.ok) continue;
    EXPECT_EQ(hp->host, c.host);
    EXPECT_EQ(hp->port, c.port);
  }
}

// One meaning for ":port" in every component's --metrics-addr: every IPv4 address.
TEST(CliTest, ListenAddress) {
  auto any = ParseListenAddress(":7473");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 7473);
  auto v6 = ParseListenAddress("[::]:7473");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::");
  auto lo = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(lo);
  EXPECT_EQ(lo->host, "127.0.0.1");
  EXPECT_FALSE(ParseListenAddress("7473"));
}

// AddInteger checks its range; a flag with an environment variable takes it as its default, and a
// bad value from the variable is reported under the variable's name.
TEST(CliTest, IntegerFlagAndItsVariable) {
  struct Row {
    std::vector<std::string> args;
    const char* env;  // PYLON_CLI_TEST_COUNT, nullptr: unset
    std::optional<int> want;
    const char* error_has;
  };
  const Row rows[] = {
      {{}, nullptr, 3, ""},
      {{"--count=7"}, nullptr, 7, ""},
      {{}, "5", 5, ""},
      {{"--count", "9"}, "5", 9, ""},  // the flag wins
      {{}, "", 3, ""},                 // empty is unset
      {{"--count=11"}, nullptr, std::nullopt, "--count: \"11\": want an integer in 1..10"},
      {{"--count=x"}, "5", std::nullopt, "--count: \"x\""},
      {{}, "0", std::nullopt, "PYLON_CLI_TEST_COUNT (--count): \"0\": want an integer in 1..10"},
  };
  for (const auto& r : rows) {
    std::map<std::string, std::string> vars;
    if (r.env) vars["PYLON_CLI_TEST_COUNT"] = r.env;
    const test_support::ScopedEnv env(vars);
    int count = 3;
    auto app = NewCommand("pylon test", "integers");
    AddInteger(*app, "--count", &count, 1, 10, "how many")->envname("PYLON_CLI_TEST_COUNT");
    auto parsed = ParseArgs(*app, r.args);
    SCOPED_TRACE(::testing::PrintToString(r.args) + (r.env ? r.env : "(unset)"));
    ASSERT_EQ(parsed.has_value(), r.want.has_value()) << (parsed ? "" : parsed.error().message());
    if (parsed) {
      EXPECT_EQ(count, *r.want);
    } else {
      EXPECT_NE(parsed.error().message().find(r.error_has), std::string::npos)
          << parsed.error().message();
    }
  }
}

}  // namespace
}  // namespace pylon::cli
