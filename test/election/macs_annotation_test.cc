// The purelb.io/macs lease annotation and its place in Membership (not part of the election).
#include "election/macs_annotation.h"

#include <gtest/gtest.h>

#include "election/membership.h"
#include "support/election.h"

namespace pylon::election {
namespace {

struct Case {
  std::string value;
  std::vector<std::string> macs;
  std::size_t issues;
};

class MacsAnnotationTest : public ::testing::TestWithParam<Case> {};

TEST_P(MacsAnnotationTest, Parses) {
  const Case& c = GetParam();
  auto p = ParseMacsAnnotation(c.value);
  EXPECT_EQ(p.macs, c.macs);
  EXPECT_EQ(p.issues.size(), c.issues) << ::testing::PrintToString(p.issues);
  EXPECT_EQ(ParseMacsAnnotation(FormatMacsAnnotation(p.macs)).macs, p.macs);
}

INSTANTIATE_TEST_SUITE_P(
    Values, MacsAnnotationTest,
    ::testing::Values(Case{"", {}, 0}, Case{"02:00:00:00:00:01", {"02:00:00:00:00:01"}, 0},
                      Case{" 02:00:00:00:00:0B ,02:00:00:00:00:0a,02:00:00:00:00:0b,",
                           {"02:00:00:00:00:0a", "02:00:00:00:00:0b"},
                           0},
                      Case{"02:00:00:00:00,zz:00:00:00:00:01,02-00-00-00-00-01,02:00:00:00:00:01",
                           {"02:00:00:00:00:01"},
                           3}));

TEST(MacsAnnotationTest, FormatIsCanonical) {
  std::vector<std::string> in = {"02:00:00:00:00:0B", "bad", "02:00:00:00:00:01"};
  EXPECT_EQ(FormatMacsAnnotation(in), "02:00:00:00:00:01,02:00:00:00:00:0b");
}

TEST(MacsAnnotationTest, MembershipKeepsTheMacsOfEachMemberWithoutChangingTheElection) {
  Membership m;
  LeaseObservation o = test_support::HeldLease("node1", "1", "192.0.2.0/24");
  o.macs_annotation = "02:00:00:00:00:01";
  const SteadyTime t0{std::chrono::seconds(100)};
  m.Observe(o, t0);
  const auto gen = m.generation();
  ASSERT_NE(m.Find(NodeName("node1")), nullptr);
  EXPECT_EQ(m.Find(NodeName("node1"))->macs, std::vector<std::string>{"02:00:00:00:00:01"});
  o.macs_annotation = "02:00:00:00:00:02,bad";
  auto out = m.Observe(o, t0);
  EXPECT_EQ(m.Find(NodeName("node1"))->macs, std::vector<std::string>{"02:00:00:00:00:02"});
  EXPECT_EQ(out.issues.size(), 1u);
  EXPECT_FALSE(out.renewed);
  EXPECT_FALSE(out.membership_changed());
  EXPECT_EQ(m.generation(), gen);
}

}  // namespace
}  // namespace pylon::election
