#include "common/duration.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace pylon {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

struct Good {
  const char* text;
  Duration want;
};

TEST(GoDurationTest, Accepts) {
  const Good cases[] = {
      {"10s", seconds(10)},
      {"500ms", milliseconds(500)},
      {"0", Duration(0)},
      {"1m30s", seconds(90)},
      {"1s500ms", milliseconds(1500)},
      {"0.1s", milliseconds(100)},
      {"1.1s", milliseconds(1100)},
      {"1.5h", minutes(90)},
      {"2h45m", minutes(165)},
      {"300us", std::chrono::microseconds(300)},
      {"250us", std::chrono::microseconds(250)},
      {"300\xc2\xb5s", std::chrono::microseconds(300)},
      {"7ns", nanoseconds(7)},
      {"+2s", seconds(2)},
      {"-1.5s", -milliseconds(1500)},
      {".5s", milliseconds(500)},
      {"1.s", seconds(1)},
  };
  for (const auto& c : cases) {
    auto d = ParseGoDuration(c.text);
    ASSERT_TRUE(d.has_value()) << c.text << ": " << d.error().message();
    EXPECT_EQ(*d, c.want) << c.text;
  }
}

TEST(GoDurationTest, Rejects) {
  for (const char* bad : {"", "10", "s", "ms", "1x", "1.2.3s", "ten seconds", "1 s", "-", ".s",
                          "1s500", "99999999999h"}) {
    auto d = ParseGoDuration(bad);
    ASSERT_FALSE(d.has_value()) << bad;
    EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(d.error().message().find("duration"), std::string::npos) << d.error().message();
  }
}

}  // namespace
}  // namespace pylon
