// Needs root: builds a real lab network and checks that hosts reach each other.
#include "lab/topology.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "lab/process.h"

namespace pylon::lab {
namespace {

class TopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
  }
  void TearDown() override {
    if (topo_) (void)topo_->Down();
  }
  std::unique_ptr<Topology> topo_;
};

TEST_F(TopologyTest, UpReachableDown) {
  std::string name = "t" + std::to_string(getpid() % 100000);
  topo_ = std::make_unique<Topology>(name, 2);
  auto up = topo_->Up();
  ASSERT_TRUE(up) << up.error().message();
  EXPECT_TRUE(topo_->Exists());
  // A second up of the same lab is refused and leaves the first intact.
  auto again = Topology(name, 2).Up();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_TRUE(topo_->Exists());

  for (const auto& n : topo_->nodes()) {
    for (const auto& addr : {n.ipv4, n.ipv6, n.ipv4_b, n.ipv6_b}) {
      std::string out;
      auto rc = RunCommand({"ping", "-c1", "-W2", addr}, &out, topo_->ClientNetns());
      ASSERT_TRUE(rc);
      EXPECT_EQ(*rc, 0) << "client cannot reach " << addr << ": " << out;
    }
  }
  // IPv6 node addresses are /128 with the /64 learned as a proto ra route (seed 000's shape).
  auto routes =
      RunCommandChecked({"ip", "-6", "route", "show", "proto", "ra"}, topo_->nodes()[0].netns);
  ASSERT_TRUE(routes);
  EXPECT_NE(routes->find("2001:db8:1::/64 dev eth0"), std::string::npos) << *routes;
  auto addrs =
      RunCommandChecked({"ip", "-6", "addr", "show", "dev", "eth0"}, topo_->nodes()[0].netns);
  ASSERT_TRUE(addrs);
  EXPECT_NE(addrs->find("2001:db8:1::11/128"), std::string::npos) << *addrs;

  auto labs = Topology::ExistingLabs();
  EXPECT_NE(std::find(labs.begin(), labs.end(), name), labs.end());
  ASSERT_TRUE(topo_->Down());
  EXPECT_FALSE(topo_->Exists());
  EXPECT_TRUE(topo_->Down());  // idempotent
}

TEST(LabName, Validated) {
  EXPECT_TRUE(ValidateLabName("demo"));
  EXPECT_TRUE(ValidateLabName("lab12"));
  EXPECT_FALSE(ValidateLabName(""));
  EXPECT_FALSE(ValidateLabName("Demo"));
  EXPECT_FALSE(ValidateLabName("a-b"));
  EXPECT_FALSE(ValidateLabName("thirteenchars"));
}

}  // namespace
}  // namespace pylon::lab
