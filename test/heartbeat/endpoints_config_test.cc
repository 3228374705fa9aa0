#include <gtest/gtest.h>

#include <chrono>

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
  // Entries are numbered as written, empty pieces included, like the other annotation lists.
  p = ParseEndpoints(" ,192.0.2.12:1,,x:1");
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_EQ(p.issues[0], "entry 4 \"x:1\": not an IPv4 address");
}

TEST(Endpoints, LimitReported) {
  std::string v;
  for (int i = 1; i <= 20; ++i) v += "192.0.2." + std::to_string(i) + ":7934,";
  ParsedEndpoints p = ParseEndpoints(v);
  EXPECT_EQ(p.endpoints.size(), kMaxEndpoints);
  ASSERT_EQ(p.issues.size(), 1u);
  EXPECT_NE(p.issues[0].find("4 endpoints beyond"), std::string::npos);
}

// The settings' range checks (their flags and variables: test/agent/heartbeat_wiring_test.cc).
TEST(Config, Validation) {
  HeartbeatConfig c;
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.bound(), std::chrono::milliseconds(300));
  EXPECT_TRUE(ValidateHeartbeatConfig(c));
  c.key_file = "/etc/pylon/key";
  c.miss_count = 5;
  c.interval = std::chrono::milliseconds(50);
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.bound(), std::chrono::milliseconds(250));
  EXPECT_TRUE(ValidateHeartbeatConfig(c));

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
