#include "net/mac.h"

#include <gtest/gtest.h>

#include <vector>

namespace pylon::net {
namespace {

TEST(Mac, ParseAndPrint) {
  EXPECT_EQ(MacAddress::Parse("02:AB:cd:00:00:01")->ToString(), "02:ab:cd:00:00:01");
  for (const char* bad : {"", "02:ab:cd:00:00", "02-ab-cd-00-00-01", "0g:ab:cd:00:00:01",
                          "02:ab:cd:00:00:01:", "02:ab:cd:00:00:1", " 02:ab:cd:00:00:01"}) {
    EXPECT_FALSE(MacAddress::Parse(bad).has_value()) << bad;
  }
  EXPECT_TRUE(MacAddress().is_zero());
  EXPECT_TRUE(MacAddress::Broadcast().is_multicast());
  EXPECT_FALSE(MacAddress::Parse("02:00:00:00:00:01")->is_multicast());
  EXPECT_EQ(*MacAddress::FromBytes(std::vector<std::uint8_t>{2, 0, 0, 0, 0, 1}),
            *MacAddress::Parse("02:00:00:00:00:01"));
  EXPECT_FALSE(MacAddress::FromBytes(std::vector<std::uint8_t>{1, 2, 3}).has_value());
}

}  // namespace
}  // namespace pylon::net
