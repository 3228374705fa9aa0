#include <gtest/gtest.h>

#include <map>

#include "heartbeat/config.h"
#include "heartbeat/endpoints.h"

namespace pylon::heartbeat {
namespace {

// A purelb.io/heartbeat annotation value, its canonical form, and how many issues parsing it
// reports.
struct EndpointsCase {
  const char* value;
  const char* canonical;
  std::size_t issues;
};

TEST(Endpoints, ParseTable) {
  const EndpointsCase rows[] = {
      {"192.0.2.11:7934,[2001:db8:1::11]:7934", "192.0.2.11:7934,[2001:db8:1::11]:7934", 0},
      {" [2001:DB8:1:0::11]:7934 , 192.0.2.11:7934 ,", "192.0.2.11:7934,[2001:db8:1::11]:7934", 0},
      {"192.0.2.11:7934,192.0.2.11:7934", "192.0.2.11:7934", 0},
      {"", "", 0},
      {"192.0.2.11", "", 1},           // no port
      {"192.0.2.11:0", "", 1},         // port 0
      {"192.0.2.11:65536", "", 1},     // port too big
      {"192.0.2.11:+5", "", 1},        // sign
      {"2001:db8::1:7934", "", 1},     // IPv6 without brackets
      {"[192.0.2.11]:7934", "", 1},    // IPv4 in brackets
      {"[2001:db8::1:7934", "", 1},    // missing ]
      {"[2001:db8::1]7934", "", 1},    // missing colon
      {"[fe80::1%eth0]:7934", "", 1},  // zone
      {"node1:7934", "", 1},           // names are not resolved
      {"bad,192.0.2.12:1", "192.0.2.12:1", 1},
  };
  for (const auto& r : rows) {
    ParsedEndpoints p = ParseEndpoints(r.value);
    EXPECT_EQ(FormatEndpoints(p.endpoints), r.canonical) << r.value;
    EXPECT_EQ(p.issues.size(), r.issues) << r.value;
  }
  auto p = ParseEndpoints("x:1");
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_EQ(p.issues[0], "entry 1 \"x:1\": not an IPv4 address");
}

TEST(Endpoints, LimitReported) {
  std::string v;
  for (int i = 1; i <= 20; ++i) v += "192.0.2." + std::to_string(i) + ":7934,";
  ParsedEndpoints p = ParseEndpoints(v);
  EXPECT_EQ(p.endpoints.size(), kMaxEndpoints);
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_NE(p.issues[0].find("4 endpoints beyond"), std::string::npos);
}

// The interval takes Go's duration syntax (common/duration.h, as every other duration flag);
// the range check then refuses what makes no sense as a heartbeat period.
TEST(Config, IntervalTable) {
  struct Row {
    const char* text;
    std::optional<Duration> want;
  };
  using namespace std::chrono;
  const Row rows[] = {
      {"100ms", milliseconds(100)},    {"1s", seconds(1)},          {"1.5s", milliseconds(1500)},
      {"1s500ms", milliseconds(1500)}, {"0.1s", milliseconds(100)}, {"10ms", milliseconds(10)},
      {"100", std::nullopt},           {"ms", std::nullopt},        {"1.2.3s", std::nullopt},
      {"-1s", std::nullopt},           {"1m", std::nullopt},        {"", std::nullopt},
      {"250us", std::nullopt},  // not whole milliseconds, and under 10ms
  };
  for (const auto& r : rows) {
    HeartbeatConfig c;
    auto applied = ApplyHeartbeatFlag("heartbeat-interval", r.text, c);
    const bool ok = applied && *applied && ValidateHeartbeatConfig(c).has_value();
    EXPECT_EQ(ok, r.want.has_value()) << r.text;
    if (ok && r.want) {
      EXPECT_EQ(c.interval, *r.want) << r.text;
    }
  }
}

TEST(Config, FlagsEnvAndValidation) {
  HeartbeatConfig c;
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.bound(), std::chrono::milliseconds(300));
  EXPECT_TRUE(ValidateHeartbeatConfig(c));

  std::map<std::string, std::string> env = {{"PYLON_HEARTBEAT_KEY_FILE", "/etc/pylon/key"},
                                            {"PYLON_HEARTBEAT_INTERVAL", "50ms"},
                                            {"PYLON_HEARTBEAT_PORT", "9000"}};
  auto envfn = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  ASSERT_TRUE(ApplyHeartbeatEnv(envfn, c));
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.interval, std::chrono::milliseconds(50));
  EXPECT_EQ(c.port, 9000);
  // Flags applied after the environment win.
  EXPECT_EQ(ApplyHeartbeatFlag("heartbeat-miss-count", "5", c).value(), true);
  EXPECT_EQ(ApplyHeartbeatFlag("heartbeat-interface", "eth1", c).value(), true);
  EXPECT_EQ(ApplyHeartbeatFlag("node-name", "x", c).value(), false);
  EXPECT_EQ(c.miss_count, 5);
  EXPECT_EQ(c.interface, "eth1");
  EXPECT_EQ(c.bound(), std::chrono::milliseconds(250));
  EXPECT_TRUE(ValidateHeartbeatConfig(c));

  EXPECT_FALSE(ApplyHeartbeatFlag("heartbeat-port", "0", c));
  EXPECT_FALSE(ApplyHeartbeatFlag("heartbeat-port", "70000", c));
  EXPECT_FALSE(ApplyHeartbeatFlag("heartbeat-interval", "fast", c));
  EXPECT_FALSE(ApplyHeartbeatFlag("heartbeat-key-file", "", c));
  env["PYLON_HEARTBEAT_MISS_COUNT"] = "x";
  auto bad = ApplyHeartbeatEnv(envfn, c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("PYLON_HEARTBEAT_MISS_COUNT"), std::string::npos);

  struct Row {
    const char* what;
    HeartbeatConfig c;
  };
  HeartbeatConfig fast, slow, frac, once, many;
  fast.interval = std::chrono::milliseconds(5);
  slow.interval = std::chrono::seconds(11);
  frac.interval = std::chrono::microseconds(10500);
  once.miss_count = 1;
  many.miss_count = 21;
  for (const auto& r : {Row{"5ms", fast}, Row{"11s", slow}, Row{"10.5ms", frac},
                        Row{"miss 1", once}, Row{"miss 21", many}}) {
    EXPECT_FALSE(ValidateHeartbeatConfig(r.c)) << r.what;
  }
}

}  // namespace
}  // namespace pylon::heartbeat
