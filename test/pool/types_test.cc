#include "pool/types.h"

#include <gtest/gtest.h>

namespace pylon::pool {
namespace {

TEST(ServiceKey, ParsesNamespaceSlashName) {
  auto k = ServiceKey::Parse("purelb-system/web");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->ns(), "purelb-system");
  EXPECT_EQ(k->name(), "web");
  EXPECT_EQ(k->ToString(), "purelb-system/web");
  for (const char* bad : {"", "web", "/web", "ns/", "a/b/c"}) {
    auto r = ServiceKey::Parse(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_LT(*ServiceKey::Parse("a/z"), *ServiceKey::Parse("b/a"));
}

TEST(PortKey, ParsesAndFindsOverlap) {
  struct Row {
    const char* in;
    const char* out;  // "" = error
  };
  const Row rows[] = {{"TCP/80", "TCP/80"}, {"udp/53", "UDP/53"}, {"SCTP/65535", "SCTP/65535"},
                      {"/80", "TCP/80"},    {"TCP/0", ""},        {"TCP/65536", ""},
                      {"ICMP/1", ""},       {"TCP", ""},          {"TCP/8x", ""}};
  for (const auto& r : rows) {
    auto p = ParsePortKey(r.in);
    if (*r.out == '\0') {
      EXPECT_FALSE(p) << r.in;
    } else {
      ASSERT_TRUE(p) << r.in << ": " << p.error().message();
      EXPECT_EQ(p->ToString(), r.out);
    }
  }
  auto a = NormalizePorts({{Protocol::kUDP, 53}, {Protocol::kTCP, 80}, {Protocol::kTCP, 80}});
  ASSERT_EQ(a.size(), 2u);
  auto b = NormalizePorts({{Protocol::kTCP, 53}, {Protocol::kUDP, 53}});
  const PortKey* common = FirstCommonPort(a, b);
  ASSERT_NE(common, nullptr);
  EXPECT_EQ(common->ToString(), "UDP/53");
  EXPECT_EQ(FirstCommonPort(a, NormalizePorts({{Protocol::kTCP, 53}})), nullptr);
}

}  // namespace
}  // namespace pylon::pool
