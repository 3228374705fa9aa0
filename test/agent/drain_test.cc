// The drain of a planned move (agent/drain.h): the forwards' life (scenario rows), the holder's
// address picked on the subnet, and the nft ruleset text.
#include "agent/drain.h"
#include "support/net.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::agent {
namespace {

using std::chrono::seconds;

using test_support::Ip;
using test_support::Pfx;
const SteadyTime kT0{std::chrono::hours(1)};

DrainForward Fwd(const std::string& address, const std::string& via,
                 const std::string& interface = "eth0", const std::string& from = "node1") {
  return DrainForward{Ip(address), Ip(via), interface, NodeName(from), {}};
}

TEST(DrainTest, ViaIsTheHoldersAddressOfTheFamilyOnTheSubnet) {
  const std::vector<net::IpAddress> holder = {Ip("198.51.100.11"), Ip("192.0.2.11"),
                                              Ip("2001:db8:1::11")};
  EXPECT_EQ(DrainVia(Pfx("192.0.2.0/24"), holder), Ip("192.0.2.11"));
  EXPECT_EQ(DrainVia(Pfx("198.51.100.0/24"), holder), Ip("198.51.100.11"));
  EXPECT_EQ(DrainVia(Pfx("2001:db8:1::/64"), holder), Ip("2001:db8:1::11"));
  EXPECT_EQ(DrainVia(Pfx("203.0.113.0/24"), holder), std::nullopt);  // not on the segment
  EXPECT_EQ(DrainVia(Pfx("192.0.2.0/24"), {}), std::nullopt);        // no heartbeat endpoints
}

// Scenario rows over one book (timeout 60 s): what each step leaves forwarding, and whether the
// ruleset must be applied again.
TEST(DrainTest, ForwardsLiveForTheTimeoutWhileTheAddressIsHeld) {
  DrainBook book(seconds(60));
  struct Step {
    const char* what;
    int at_s;
    std::vector<DrainForward> start;
    std::vector<std::string> held;
    std::vector<std::string> want;  // forwarding after the step
    bool changed;
  };
  const std::vector<Step> steps = {
      {"a planned move of .200 from node1",
       0,
       {Fwd("192.0.2.200", "192.0.2.11")},
       {"192.0.2.200"},
       {"192.0.2.200"},
       true},
      {"the next pass sees the same move: nothing new",
       1,
       {Fwd("192.0.2.200", "192.0.2.11")},
       {"192.0.2.200"},
       {"192.0.2.200"},
       false},
      {"a second address, IPv6",
       5,
       {Fwd("2001:db8:1::200", "2001:db8:1::11")},
       {"192.0.2.200", "2001:db8:1::200"},
       {"192.0.2.200", "2001:db8:1::200"},
       true},
      {"this node lost the IPv6 address: its forward ends",
       10,
       {},
       {"192.0.2.200"},
       {"192.0.2.200"},
       true},
      {"59 s after the start: still forwarding", 59, {}, {"192.0.2.200"}, {"192.0.2.200"}, false},
      {"60 s: the timeout ends it", 60, {}, {"192.0.2.200"}, {}, true},
      {"nothing left: nothing to apply", 61, {}, {"192.0.2.200"}, {}, false},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.what);
    const SteadyTime now = kT0 + seconds(s.at_s);
    for (const auto& f : s.start) book.Start(f, now);
    std::set<net::IpAddress> held;
    for (const auto& h : s.held) held.insert(Ip(h));
    book.Retain(held, now);
    std::vector<std::string> got;
    for (const auto& f : book.Forwards()) got.push_back(f.address.ToString());
    EXPECT_EQ(got, s.want);
    EXPECT_EQ(book.TakeChanged(), s.changed);
  }
}

TEST(DrainTest, AMoveFromAnotherHolderRestartsTheForward) {
  DrainBook book(seconds(60));
  book.Start(Fwd("192.0.2.200", "192.0.2.11", "eth0", "node1"), kT0);
  EXPECT_EQ(book.NextExpiry(), kT0 + seconds(60));
  // The address came back to node1's successor from node2 later: forward to node2 from then.
  book.Start(Fwd("192.0.2.200", "192.0.2.12", "eth0", "node2"), kT0 + seconds(30));
  ASSERT_EQ(book.Forwards().size(), 1u);
  EXPECT_EQ(book.Forwards()[0].via, Ip("192.0.2.12"));
  EXPECT_EQ(book.NextExpiry(), kT0 + seconds(90));
}

TEST(DrainTest, RulesetReplacesBothTablesWhole) {
  const std::string none = RenderDrainRuleset({});
  EXPECT_EQ(none,
            "table ip pylon-drain\ndelete table ip pylon-drain\n"
            "table ip6 pylon-drain\ndelete table ip6 pylon-drain\n");
  const std::string text = RenderDrainRuleset(
      {Fwd("192.0.2.200", "192.0.2.11"), Fwd("2001:db8:1::200", "2001:db8:1::11", "eth1")});
  EXPECT_EQ(
      text,
      "table ip pylon-drain\ndelete table ip pylon-drain\n"
      "table ip pylon-drain {\n  chain prerouting {\n"
      "    type filter hook prerouting priority -150; policy accept;\n"
      "    ip daddr 192.0.2.200 tcp flags & (syn | ack) != syn ct state { new, invalid } "
      "dup to 192.0.2.11 device \"eth0\" drop\n  }\n}\n"
      "table ip6 pylon-drain\ndelete table ip6 pylon-drain\n"
      "table ip6 pylon-drain {\n  chain prerouting {\n"
      "    type filter hook prerouting priority -150; policy accept;\n"
      "    ip6 daddr 2001:db8:1::200 tcp flags & (syn | ack) != syn ct state { new, invalid } "
      "dup to 2001:db8:1::11 device \"eth1\" drop\n  }\n}\n");
}

TEST(DrainTest, RulesetLeavesOutWhatNftCouldMisread) {
  for (const std::string bad : {"", "eth0\" drop", "a b", "averyveryverylongname"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(RenderDrainRuleset({Fwd("192.0.2.200", "192.0.2.11", bad)}), RenderDrainRuleset({}));
  }
  // A holder address of the other family is no path.
  EXPECT_EQ(RenderDrainRuleset({Fwd("192.0.2.200", "2001:db8:1::11")}), RenderDrainRuleset({}));
}

}  // namespace
}  // namespace pylon::agent
