// Flag parsing of `pylon allocator`.
#include "allocator/command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::allocator {
namespace {

Result<CommandOptions> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string cmd = "allocator";
  argv.push_back(cmd.data());
  for (auto& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(CommandTest, Defaults) {
  auto o = Parse({});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->ns, "purelb-system");
  EXPECT_EQ(o->metrics_addr, "0.0.0.0:7472");
  EXPECT_EQ(o->lease_name, "pylon-allocator");
  EXPECT_EQ(o->lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(o->renew_deadline, std::chrono::seconds(10));
  EXPECT_EQ(o->retry_period, std::chrono::seconds(2));
}

TEST(CommandTest, Flags) {
  auto o = Parse({"--kubeconfig", "/k", "--namespace=lb", "--metrics-addr", "127.0.0.1:0",
                  "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "0.25",
                  "--identity", "me", "--workers", "12"});
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->kubeconfig, "/k");
  EXPECT_EQ(o->ns, "lb");
  EXPECT_EQ(o->renew_deadline, std::chrono::milliseconds(1500));
  EXPECT_EQ(o->retry_period, std::chrono::milliseconds(250));
  EXPECT_EQ(o->identity, "me");
  EXPECT_EQ(o->workers, 12);
}

TEST(CommandTest, Errors) {
  for (auto args : std::vector<std::vector<std::string>>{{"--bogus"},
                                                         {"--lease-duration", "soon"},
                                                         {"--lease-duration", "-1s"},
                                                         {"--metrics-addr", "nope"},
                                                         {"--metrics-addr", "h:99999"},
                                                         {"--namespace", ""},
                                                         {"--workers", "0"},
                                                         {"--kubeconfig"}}) {
    EXPECT_FALSE(Parse(args).has_value()) << args[0];
  }
}

TEST(CommandTest, HostPort) {
  auto hp = ParseHostPort("[::1]:7472");
  ASSERT_TRUE(hp.has_value());
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 7472);
  hp = ParseHostPort(":9");
  ASSERT_TRUE(hp.has_value());
  EXPECT_EQ(hp->host, "0.0.0.0");
}

}  // namespace
}  // namespace pylon::allocator
