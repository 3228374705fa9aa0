#include "model/announcing.h"
#include "support/net.h"

#include <gtest/gtest.h>

namespace pylon::model {
namespace {

using test_support::Ip;

struct ParseCase {
  const char* value;
  std::vector<AnnouncingEntry> want;
};

TEST(ParseAnnouncing, BothFormsAndMalformedEntriesDropped) {
  const std::vector<ParseCase> cases = {
      {"", {}},
      {"node1,eth0", {{"node1", "eth0", {}}}},
      {"node1,eth0,192.0.2.10", {{"node1", "eth0", Ip("192.0.2.10")}}},
      {"  a,eth0,192.0.2.10\tb,eth1,192.0.2.11\n",
       {{"a", "eth0", Ip("192.0.2.10")}, {"b", "eth1", Ip("192.0.2.11")}}},
      // The interface is what lies between the first and the last comma.
      {"a,we,ird,2001:db8::1", {{"a", "we,ird", Ip("2001:db8::1")}}},
      {"a,eth0,not-an-ip", {}},
      {",eth0,192.0.2.1", {}},
      {"a,,192.0.2.1", {}},
      {"a,", {}},
      {"kube-lb0", {}},
      {"a,eth0,192.0.2.1 junk b,eth0", {{"a", "eth0", Ip("192.0.2.1")}, {"b", "eth0", {}}}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ParseAnnouncing(c.value), c.want) << '"' << c.value << '"';
  }
}

TEST(AnnouncerOf, V2EntryForTheAddressElseAV1Entry) {
  EXPECT_EQ(AnnouncerOf("a,eth0,192.0.2.1 b,eth0,192.0.2.2", Ip("192.0.2.2")), "b");
  EXPECT_EQ(AnnouncerOf("a,eth0,192.0.2.1", Ip("192.0.2.2")), std::nullopt);
  EXPECT_EQ(AnnouncerOf("a,eth0", Ip("192.0.2.2")), "a");
  EXPECT_EQ(AnnouncerOf("garbage", Ip("192.0.2.2")), std::nullopt);
  EXPECT_TRUE(AnnouncingNames("a,eth0,192.0.2.1 b,eth0,192.0.2.2", "b"));
  EXPECT_FALSE(AnnouncingNames("a,eth0,192.0.2.1", "b"));
  EXPECT_TRUE(AnnouncingNames("b,eth0", "b"));
}

struct ClaimCase {
  const char* current;
  const char* ip;
  std::vector<net::IpAddress> service;
  const char* want;
};

TEST(ClaimAnnouncingV2, ReplacesOwnEntryKeepsOthersDropsStale) {
  const auto a1 = Ip("192.0.2.1"), a2 = Ip("192.0.2.2");
  const std::vector<ClaimCase> cases = {
      {"", "192.0.2.1", {a1}, "me,eth0,192.0.2.1"},
      {"old,eth1,192.0.2.1", "192.0.2.1", {a1}, "me,eth0,192.0.2.1"},
      {"old,eth1", "192.0.2.1", {a1}, "me,eth0,192.0.2.1"},  // v1 form dropped
      // Sorted by address; another node's entry of a live address kept.
      {"z,eth0,192.0.2.2", "192.0.2.1", {a1, a2}, "me,eth0,192.0.2.1 z,eth0,192.0.2.2"},
      {"z,eth0,192.0.2.1", "192.0.2.2", {a1, a2}, "z,eth0,192.0.2.1 me,eth0,192.0.2.2"},
      // An address the Service lost: its entry goes.
      {"z,eth0,192.0.2.9", "192.0.2.1", {a1}, "me,eth0,192.0.2.1"},
      // Two entries for one address: the smaller (node, interface) stays.
      {"y,eth0,192.0.2.2 x,eth0,192.0.2.2",
       "192.0.2.1",
       {a1, a2},
       "me,eth0,192.0.2.1 x,eth0,192.0.2.2"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ClaimAnnouncingV2(c.current, "me", "eth0", Ip(c.ip), c.service), c.want)
        << '"' << c.current << '"';
  }
  // Byte-identical for identical sets: a claim of what is already there changes nothing.
  const std::string once = ClaimAnnouncingV2("z,eth0,192.0.2.2", "me", "eth0", a1, {a1, a2});
  EXPECT_EQ(ClaimAnnouncingV2(once, "me", "eth0", a1, {a1, a2}), once);
}

}  // namespace
}  // namespace pylon::model
