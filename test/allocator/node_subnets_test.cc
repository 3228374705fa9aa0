// Which node subnets multi-pool sees: live leases only (renewTime + leaseDurationSeconds after
// now, holder set), bad annotation entries skipped and reported, never fatal.
#include "allocator/node_subnets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::allocator {
namespace {

const WallTime kNow = WallTime{} + std::chrono::hours(24 * 365 * 50);

std::string Join(const NodeSubnets& s) {
  std::string out;
  for (const auto& p : s.live) out += (out.empty() ? "" : ",") + p.ToString();
  return out;
}

TEST(NodeSubnetsTest, LiveLeasesOnly) {
  using std::chrono::seconds;
  std::vector<NodeLease> leases = {
      ReadNodeLease("a", "a", 10, kNow - seconds(3), "192.0.2.0/24,2001:db8::/64"),
      ReadNodeLease("b", "b", 10, kNow - seconds(10), "198.51.100.0/24"),  // expired just now
      ReadNodeLease("c", "", 10, kNow, "203.0.113.0/24"),                  // released
      ReadNodeLease("d", "d", std::nullopt, kNow, "203.0.113.0/24"),       // cannot be judged
      ReadNodeLease("e", "e", 10, kNow - seconds(1), "192.0.2.7/24,junk,10.0.0.0/33,"),
  };
  NodeSubnets s = LiveNodeSubnets(leases, kNow);
  EXPECT_EQ(Join(s), "192.0.2.0/24,2001:db8::/64");
  EXPECT_EQ(s.live_nodes, (std::vector<std::string>{"a", "e"}));
  ASSERT_TRUE(s.next_expiry.has_value());
  EXPECT_EQ(*s.next_expiry, kNow + seconds(7));
  EXPECT_TRUE(s.Has(*net::Prefix::Parse("192.0.2.99/24")));
  EXPECT_FALSE(s.Has(*net::Prefix::Parse("192.0.2.0/25")));
  EXPECT_TRUE(leases[0].issues.empty());
  EXPECT_EQ(leases[3].issues.size(), 1u);
  ASSERT_EQ(leases[4].issues.size(), 2u);
  EXPECT_NE(leases[4].issues[0].find("lease of node e: purelb.io/subnets"), std::string::npos);
  // Later, a's lease has expired as well.
  EXPECT_EQ(Join(LiveNodeSubnets(leases, kNow + seconds(7))), "192.0.2.0/24");
  EXPECT_EQ(Join(LiveNodeSubnets({}, kNow)), "");
}

}  // namespace
}  // namespace pylon::allocator
