// The RFC 3339 codec: Kubernetes Time/MicroTime, config creationTimestamps and Pylon's own
// whole-second annotation times.
#include "common/time.h"

#include <gtest/gtest.h>

namespace pylon {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

TEST(Time, FormatsTimeAndMicroTime) {
  WallTime t = WallTime(std::chrono::duration_cast<WallTime::duration>(
      seconds(1735787045) + microseconds(123456)));  // 2025-01-02T03:04:05.123456Z
  EXPECT_EQ(FormatTime(t), "2025-01-02T03:04:05Z");
  EXPECT_EQ(FormatMicroTime(t), "2025-01-02T03:04:05.123456Z");
  WallTime whole = WallTime(std::chrono::duration_cast<WallTime::duration>(seconds(1735787045)));
  EXPECT_EQ(FormatMicroTime(whole), "2025-01-02T03:04:05.000000Z");
}

TEST(Time, ParseTable) {
  struct Row {
    const char* text;
    bool ok;
    const char* micro;  // FormatMicroTime of the result
  };
  const Row rows[] = {
      {"2025-01-02T03:04:05Z", true, "2025-01-02T03:04:05.000000Z"},
      {"2025-01-02T03:04:05.123456Z", true, "2025-01-02T03:04:05.123456Z"},
      {"2025-01-02T03:04:05.1Z", true, "2025-01-02T03:04:05.100000Z"},
      {"2025-01-02T03:04:05.123456789Z", true, "2025-01-02T03:04:05.123456Z"},
      {"2025-01-02T05:04:05+02:00", true, "2025-01-02T03:04:05.000000Z"},
      {"2025-01-02T01:04:05-02:00", true, "2025-01-02T03:04:05.000000Z"},
      {"1970-01-01T00:00:00Z", true, "1970-01-01T00:00:00.000000Z"},
      // WallTime holds 64-bit nanoseconds: years 1678 to 2261 are in range, beyond is an error.
      {"2261-12-31T23:59:59Z", true, "2261-12-31T23:59:59.000000Z"},
      {"1678-01-01T00:00:00Z", true, "1678-01-01T00:00:00.000000Z"},
      {"4048-01-02T00:00:00Z", false, ""},
      {"9999-12-31T23:59:59Z", false, ""},
      {"0001-01-01T00:00:00Z", false, ""},
      {"2025-01-02 03:04:05Z", false, ""},
      {"2025-01-02T03:04:05", false, ""},
      {"2025-13-02T03:04:05Z", false, ""},
      {"2025-01-02T03:04:05.Z", false, ""},
      {"2025-01-02T03:04:05Zjunk", false, ""},
      {"", false, ""},
      {"garbage", false, ""},
  };
  for (const auto& r : rows) {
    auto t = ParseTime(r.text);
    EXPECT_EQ(t.has_value(), r.ok) << r.text;
    if (t && r.ok) {
      EXPECT_EQ(FormatMicroTime(*t), r.micro) << r.text;
    }
  }
}

TEST(Time, MicroTimeIsStrict) {
  EXPECT_TRUE(ParseMicroTime("2025-01-02T03:04:05.123456Z"));
  EXPECT_FALSE(ParseMicroTime("2025-01-02T03:04:05.12345Z"));
  EXPECT_FALSE(ParseMicroTime("2025-01-02T03:04:05Z"));
  EXPECT_FALSE(ParseMicroTime("2025-01-02T03:04:05.1234567Z"));
}

TEST(Time, ParsesOffsetsAndLowerCaseAndChecksTheCalendar) {
  struct Row {
    const char* text;
    int64_t seconds, micros;
  };
  const Row ok[] = {
      {"1970-01-01T00:00:00Z", 0, 0},
      {"2022-01-10T15:57:45Z", 1641830265, 0},
      {"2025-01-02T03:04:05.123456Z", 1735787045, 123456},
      {"2024-02-29T00:00:00+01:00", 1709161200, 0},
      {"2024-02-29t00:00:00-00:30", 1709166600, 0},
  };
  for (const auto& r : ok) {
    SCOPED_TRACE(r.text);
    auto t = ParseTime(r.text);
    ASSERT_TRUE(t) << t.error().message();
    EXPECT_EQ(t->time_since_epoch(), seconds(r.seconds) + microseconds(r.micros));
  }
  for (const char* bad :
       {"", "2022-01-10", "2022-01-10T15:57:45", "2022-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
        "2022-04-31T00:00:00Z", "2022-01-10T24:00:00Z", "2022-01-10T15:57:45.Z",
        "2022-01-10 15:57:45Z", "2022-01-10T15:57:45+0100", "2024-02-29T00:00:00-00:30z",
        "2025-01-02T03:04:05.1234567890Z"}) {
    EXPECT_FALSE(ParseTime(bad)) << bad;
  }
}

TEST(Time, WholeSecondsTimeIsStrict) {
  const WallTime t = ParseWholeSecondsTime("2025-01-02T03:04:05Z").value();
  EXPECT_EQ(FormatTime(t), "2025-01-02T03:04:05Z");
  for (const char* bad : {"2025-01-02 03:04:05Z", "2025-01-02T03:04:05.5Z", "2025-01-02T03:04:05z",
                          "2025-01-02T03:04:05+00:00", "2025-01-02t03:04:05Z"}) {
    EXPECT_FALSE(ParseWholeSecondsTime(bad)) << bad;
  }
}

}  // namespace
}  // namespace pylon
