#include "pool/families.h"

#include <gtest/gtest.h>

#include <string>

namespace pylon::pool {
namespace {

using net::Family;

std::vector<Family> F(std::string_view s) {
  std::vector<Family> out;
  for (char c : s) out.push_back(c == '4' ? Family::kV4 : Family::kV6);
  return out;
}

std::string S(const std::vector<Family>& fs) {
  std::string out;
  for (Family f : fs) out += f == Family::kV4 ? '4' : '6';
  return out;
}

TEST(SelectFamilies, Table) {
  struct Row {
    const char* service;  // ipFamilies
    const char* policy;
    const char* offered;
    const char* primary;
    const char* want;  // families, or "" when an error is expected
    const char* error_has;
  };
  const Row rows[] = {
      // SingleStack (also the empty policy).
      {"4", "SingleStack", "46", "4", "4", ""},
      {"6", "SingleStack", "46", "4", "6", ""},
      {"", "", "46", "4", "4", ""},
      {"", "", "46", "6", "6", ""},
      {"", "SingleStack", "6", "4", "", "SingleStack IPv4 but ServiceGroup g has IPv6 pools only"},
      {"6", "SingleStack", "4", "4", "", "SingleStack IPv6 but ServiceGroup g has IPv4 pools only"},
      {"4", "SingleStack", "", "4", "", "has no pools"},
      // PreferDualStack: every offered family among the Service's, at least one.
      {"46", "PreferDualStack", "46", "4", "46", ""},
      {"64", "PreferDualStack", "46", "4", "64", ""},
      {"46", "PreferDualStack", "4", "4", "4", ""},
      {"46", "PreferDualStack", "6", "4", "6", ""},
      {"4", "PreferDualStack", "46", "4", "4", ""},
      {"", "PreferDualStack", "46", "4", "46", ""},
      {"", "PreferDualStack", "46", "6", "64", ""},
      {"", "PreferDualStack", "4", "6", "4", ""},
      {"6", "PreferDualStack", "4", "4", "", "PreferDualStack IPv6 but ServiceGroup g has IPv4"},
      // RequireDualStack: both or an error.
      {"46", "RequireDualStack", "46", "4", "46", ""},
      {"64", "RequireDualStack", "46", "4", "64", ""},
      {"", "RequireDualStack", "46", "6", "64", ""},
      {"6", "RequireDualStack", "46", "4", "64", ""},
      {"46", "RequireDualStack", "4", "4", "",
       "RequireDualStack but ServiceGroup g has no IPv6 pool"},
      {"", "RequireDualStack", "6", "4", "",
       "RequireDualStack but ServiceGroup g has no IPv4 pool"},
      // Malformed ipFamilies.
      {"44", "PreferDualStack", "46", "4", "", "IPv4 twice"},
      {"464", "PreferDualStack", "46", "4", "", "more than two"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(r.service) + " " + r.policy + " offered " + r.offered);
    auto policy = ParseIpFamilyPolicy(r.policy);
    ASSERT_TRUE(policy);
    FamilySelection in{F(r.service), *policy, F(r.offered), "ServiceGroup g", F(r.primary).front()};
    auto got = SelectFamilies(in);
    if (*r.want != '\0') {
      ASSERT_TRUE(got) << got.error().message();
      EXPECT_EQ(S(*got), r.want);
    } else {
      ASSERT_FALSE(got) << "got " << S(*got);
      EXPECT_NE(got.error().message().find(r.error_has), std::string::npos)
          << got.error().message();
    }
  }
}

TEST(SelectFamilies, ParsesPolicies) {
  EXPECT_EQ(*ParseIpFamilyPolicy(""), IpFamilyPolicy::kSingleStack);
  EXPECT_EQ(*ParseIpFamilyPolicy("RequireDualStack"), IpFamilyPolicy::kRequireDualStack);
  auto bad = ParseIpFamilyPolicy("requiredualstack");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(IpFamilyPolicyName(IpFamilyPolicy::kPreferDualStack), "PreferDualStack");
}

}  // namespace
}  // namespace pylon::pool
