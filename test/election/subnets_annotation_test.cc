#include "election/subnets_annotation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::election {
namespace {

std::vector<std::string> Texts(const std::vector<net::Prefix>& v) {
  std::vector<std::string> out;
  for (const auto& p : v) out.push_back(p.ToString());
  return out;
}

TEST(SubnetsAnnotation, ParsesDefensively) {
  struct Row {
    const char* label;
    std::string in;
    std::vector<std::string> subnets;  // canonical, sorted
    std::size_t issues;
  };
  const Row rows[] = {
      {"empty value", "", {}, 0},
      {"one v4", "192.0.2.0/24", {"192.0.2.0/24"}, 0},
      {"PureLB's written form", "192.168.1.0/24,10.0.0.0/24", {"10.0.0.0/24", "192.168.1.0/24"}, 0},
      {"dual stack, v6 first", "2001:db8::/64,192.0.2.0/24", {"192.0.2.0/24", "2001:db8::/64"}, 0},
      {"spaces and tabs", " 192.0.2.0/24 ,\t2001:db8::/64 ", {"192.0.2.0/24", "2001:db8::/64"}, 0},
      {"host bits cleared", "192.0.2.77/24,2001:db8::5/64", {"192.0.2.0/24", "2001:db8::/64"}, 0},
      {"duplicates collapse", "192.0.2.0/24,192.0.2.9/24", {"192.0.2.0/24"}, 0},
      {"empty entries ignored", ",192.0.2.0/24,,", {"192.0.2.0/24"}, 0},
      {"bad entry skipped",
       "192.0.2.0/24,not-a-cidr,198.51.100.0/24",
       {"192.0.2.0/24", "198.51.100.0/24"},
       1},
      {"no length", "192.0.2.0", {}, 1},
      {"length too long v4", "192.0.2.0/33", {}, 1},
      {"length too long v6", "2001:db8::/129", {}, 1},
      {"zone", "fe80::1%eth0/64", {}, 1},
      {"default route rejected", "0.0.0.0/0,::/0,192.0.2.0/24", {"192.0.2.0/24"}, 2},
      {"semicolon is not a separator", "192.0.2.0/24;198.51.100.0/24", {}, 1},
      {"only garbage", "\x01\x02,\xff", {}, 2},
  };
  for (const auto& r : rows) {
    const auto got = ParseSubnetsAnnotation(r.in);
    EXPECT_EQ(Texts(got.subnets), r.subnets) << r.label;
    EXPECT_EQ(got.issues.size(), r.issues) << r.label;
  }
}

TEST(SubnetsAnnotation, IssueNamesTheEntry) {
  const auto got = ParseSubnetsAnnotation("192.0.2.0/24, 10.0.0.0/40");
  ASSERT_EQ(got.issues.size(), 1u);
  EXPECT_NE(got.issues[0].find("entry 2"), std::string::npos) << got.issues[0];
  EXPECT_NE(got.issues[0].find("10.0.0.0/40"), std::string::npos) << got.issues[0];
}

TEST(SubnetsAnnotation, HugeGarbageEntryIsEchoedShort) {
  const std::string junk(100000, 'x');
  const auto got = ParseSubnetsAnnotation(junk);
  ASSERT_EQ(got.issues.size(), 1u);
  EXPECT_LT(got.issues[0].size(), 400u);
}

TEST(SubnetsAnnotation, CapsTheNumberOfEntries) {
  std::string value;
  for (int i = 0; i < 300; ++i) {
    if (!value.empty()) value += ',';
    value += "10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24";
  }
  const auto got = ParseSubnetsAnnotation(value);
  EXPECT_EQ(got.subnets.size(), kMaxAnnotationSubnets);
  ASSERT_EQ(got.issues.size(), 1u);
  EXPECT_NE(got.issues[0].find("44 entries"), std::string::npos) << got.issues[0];
}

TEST(SubnetsAnnotation, FormatIsCanonicalAndRoundTrips) {
  const std::vector<net::Prefix> in = {
      *net::Prefix::Parse("2001:db8::7/64"), *net::Prefix::Parse("198.51.100.0/24"),
      *net::Prefix::Parse("192.0.2.3/24"), *net::Prefix::Parse("192.0.2.0/24")};
  const std::string text = FormatSubnetsAnnotation(in);
  EXPECT_EQ(text, "192.0.2.0/24,198.51.100.0/24,2001:db8::/64");
  const auto back = ParseSubnetsAnnotation(text);
  EXPECT_TRUE(back.issues.empty());
  EXPECT_EQ(FormatSubnetsAnnotation(back.subnets), text);
  EXPECT_EQ(FormatSubnetsAnnotation({}), "");
}

}  // namespace
}  // namespace pylon::election
