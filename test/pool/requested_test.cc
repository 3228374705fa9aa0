#include "pool/requested.h"

#include <gtest/gtest.h>

#include <string>

namespace pylon::pool {
namespace {

using net::Family;

TEST(ParseRequestedAddresses, Table) {
  struct Row {
    const char* in;
    const char* v4;  // "" = none
    const char* v6;
    const char* error_has;  // non-empty: an error is expected
  };
  const Row rows[] = {
      {"198.51.100.7,2001:db8:f00d::7", "198.51.100.7", "2001:db8:f00d::7", ""},
      {"2001:db8:f00d::7,198.51.100.7", "198.51.100.7", "2001:db8:f00d::7", ""},
      {" 198.51.100.7 ,\t2001:DB8:F00D::7 ", "198.51.100.7", "2001:db8:f00d::7", ""},
      {"198.51.100.7", "198.51.100.7", "", ""},
      {"2001:db8::1", "", "2001:db8::1", ""},
      {"", "", "", ""},
      {"   ", "", "", ""},
      {"198.51.100.7,", "", "", "item 2 is empty"},
      {",198.51.100.7", "", "", "item 1 is empty"},
      {"198.51.100.7,,2001:db8::1", "", "", "item 2 is empty"},
      {"198.51.100.7, ", "", "", "item 2 is empty"},
      {"198.51.100.300", "", "", "\"198.51.100.300\" is not an IP address"},
      {"198.51.100.7/32", "", "", "is not an IP address"},
      {"198.51.100.7,198.51.100.8", "", "", "two IPv4 addresses (198.51.100.7 and 198.51.100.8)"},
      {"2001:db8::1,2001:db8::2", "", "", "two IPv6 addresses"},
      {"198.51.100.7 2001:db8::1", "", "", "is not an IP address"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string("\"") + r.in + "\"");
    auto got = ParseRequestedAddresses(r.in);
    if (*r.error_has != '\0') {
      ASSERT_FALSE(got);
      EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(got.error().message().find(r.error_has), std::string::npos)
          << got.error().message();
      continue;
    }
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(got->v4 ? got->v4->ToString() : "", r.v4);
    EXPECT_EQ(got->v6 ? got->v6->ToString() : "", r.v6);
    EXPECT_EQ(got->empty(), *r.v4 == '\0' && *r.v6 == '\0');
  }
}

TEST(CheckRequestedFamilies, Table) {
  struct Row {
    const char* requested;
    std::vector<Family> selected;
    const char* error_has;
  };
  const Row rows[] = {
      {"198.51.100.7", {Family::kV4}, ""},
      {"198.51.100.7", {Family::kV6, Family::kV4}, ""},
      {"198.51.100.7,2001:db8::7", {Family::kV4, Family::kV6}, ""},
      {"", {Family::kV4}, ""},
      {"2001:db8::7",
       {Family::kV4},
       "requested IPv6 address 2001:db8::7 but the Service gets IPv4 only"},
      {"198.51.100.7,2001:db8::7", {Family::kV6}, "requested IPv4 address 198.51.100.7"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.requested);
    auto req = ParseRequestedAddresses(r.requested);
    ASSERT_TRUE(req);
    auto ok = CheckRequestedFamilies(*req, r.selected);
    if (*r.error_has == '\0') {
      EXPECT_TRUE(ok) << ok.error().message();
    } else {
      ASSERT_FALSE(ok);
      EXPECT_EQ(ok.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(ok.error().message().find(r.error_has), std::string::npos) << ok.error().message();
    }
  }
}

}  // namespace
}  // namespace pylon::pool
