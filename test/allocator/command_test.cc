// Flag parsing of `pylon allocator`.
#include "allocator/command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::allocator {
namespace {

Result<CommandOptions> Parse(const std::vector<std::string>& args) {
  CommandOptions o;
  auto app = NewAllocatorCommand(&o);
  auto parsed = cli::ParseArgs(*app, args);
  if (!parsed) return Fail(parsed.error());
  return o;
}

TEST(CommandTest, Defaults) {
  auto o = Parse({});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->ns, "purelb-system");
  EXPECT_EQ(o->metrics_addr.host, "0.0.0.0");
  EXPECT_EQ(o->metrics_addr.port, 7472);
  EXPECT_EQ(o->lease_name, "pylon-allocator");
  EXPECT_EQ(o->lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(o->renew_deadline, std::chrono::seconds(10));
  EXPECT_EQ(o->retry_period, std::chrono::seconds(2));
  EXPECT_EQ(o->workers, 8);
  EXPECT_EQ(o->log_level, log::Level::kInfo);
}

TEST(CommandTest, Flags) {
  auto o = Parse({"--kubeconfig", "/k", "--namespace=lb", "--metrics-addr", "[::1]:0",
                  "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "250ms",
                  "--identity", "me", "--workers", "12", "--log-level=debug"});
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->kubeconfig, "/k");
  EXPECT_EQ(o->ns, "lb");
  EXPECT_EQ(o->metrics_addr.host, "::1");
  EXPECT_EQ(o->metrics_addr.port, 0);
  EXPECT_EQ(o->lease_duration, std::chrono::seconds(2));
  EXPECT_EQ(o->renew_deadline, std::chrono::milliseconds(1500));
  EXPECT_EQ(o->retry_period, std::chrono::milliseconds(250));
  EXPECT_EQ(o->identity, "me");
  EXPECT_EQ(o->workers, 12);
  EXPECT_EQ(o->log_level, log::Level::kDebug);
  // ":PORT" listens on every interface.
  o = Parse({"--metrics-addr", ":9"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->metrics_addr.host, "0.0.0.0");
  EXPECT_EQ(o->metrics_addr.port, 9);
}

TEST(CommandTest, Errors) {
  struct Case {
    std::vector<std::string> args;
    const char* mentions;
  };
  const Case cases[] = {
      {{"--bogus"}, "--bogus"},
      {{"--lease-duration", "soon"}, "--lease-duration"},
      {{"--lease-duration", "-1s"}, "--lease-duration"},
      {{"--metrics-addr", "nope"}, "--metrics-addr"},
      {{"--metrics-addr", "h:99999"}, "--metrics-addr"},
      {{"--namespace", ""}, "--namespace"},
      {{"--workers", "0"}, "--workers"},
      {{"--workers", "65"}, "--workers"},
      {{"--log-level", "loud"}, "loud"},
      {{"--kubeconfig"}, "--kubeconfig"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args[0]);
    auto o = Parse(c.args);
    ASSERT_FALSE(o.has_value());
    EXPECT_NE(o.error().message().find(c.mentions), std::string::npos) << o.error().message();
  }
}

TEST(CommandTest, HelpNamesEveryFlag) {
  CommandOptions o;
  std::string help = NewAllocatorCommand(&o)->help();
  EXPECT_EQ(help.rfind("usage: pylon allocator [flags]\n", 0), 0u) << help;
  for (const char* flag :
       {"--kubeconfig", "--namespace", "--metrics-addr", "--lease-name", "--identity",
        "--lease-duration", "--renew-deadline", "--retry-period", "--workers", "--log-level"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace pylon::allocator
