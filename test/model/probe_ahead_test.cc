// The purelb.io/probe-ahead lease annotation: format, parse, and bad entries skipped and reported.
#include "model/probe_ahead.h"

#include <gtest/gtest.h>

#include "common/time.h"

namespace pylon::model {
namespace {

WallTime T(const char* text) { return *ParseWholeSecondsTime(text); }

TEST(ProbeAheadAnnotation, FormatsAndParsesBack) {
  const std::vector<ProbedAddress> entries = {
      {*net::IpAddress::Parse("192.0.2.226"), false, "", T("2025-01-02T03:04:05Z")},
      {*net::IpAddress::Parse("192.0.2.225"), true, "02:00:00:00:00:99", T("2025-01-02T03:04:00Z")},
      {*net::IpAddress::Parse("2001:db8:1:0:8000::5"), false, "", T("2025-01-02T03:04:06Z")},
  };
  const std::string text = FormatProbeAhead(entries);
  EXPECT_EQ(text,
            "192.0.2.226 free 2025-01-02T03:04:05Z,192.0.2.225 taken 02:00:00:00:00:99 "
            "2025-01-02T03:04:00Z,2001:db8:1:0:8000::5 free 2025-01-02T03:04:06Z");
  ProbeAheadParse p = ParseProbeAhead(text);
  EXPECT_TRUE(p.issues.empty());
  EXPECT_EQ(p.entries, entries);
  EXPECT_EQ(FormatProbeAhead({}), "");
  EXPECT_TRUE(ParseProbeAhead("").entries.empty());
  EXPECT_TRUE(ParseProbeAhead("").issues.empty());
}

TEST(ProbeAheadAnnotation, BadEntriesAreSkippedAndReported) {
  struct Case {
    const char* value;
    std::size_t entries;
    std::size_t issues;
  };
  const Case cases[] = {
      {" 192.0.2.1  free  2025-01-02T03:04:05Z , ", 1, 0},  // blanks tolerated
      {"192.0.2.1 free", 0, 1},                             // no time
      {"192.0.2.1 gone 2025-01-02T03:04:05Z", 0, 1},        // unknown verdict
      {"192.0.2.1 taken 2025-01-02T03:04:05Z", 0, 1},       // taken without a MAC
      {"192.0.2.1 taken zz:00:00:00:00:01 2025-01-02T03:04:05Z", 0, 1},
      {"192.0.2.999 free 2025-01-02T03:04:05Z", 0, 1},
      {"192.0.2.1 free yesterday,192.0.2.2 free 2025-01-02T03:04:05Z", 1, 1},
      {"192.0.2.1 free 2025-01-02T03:04:05Z extra", 0, 1},
  };
  for (const Case& c : cases) {
    ProbeAheadParse p = ParseProbeAhead(c.value);
    EXPECT_EQ(p.entries.size(), c.entries) << c.value;
    EXPECT_EQ(p.issues.size(), c.issues) << c.value;
  }
  ProbeAheadParse p = ParseProbeAhead("192.0.2.1 taken 02:AA:00:00:00:01 2025-01-02T03:04:05Z");
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].mac, "02:aa:00:00:00:01");
}

}  // namespace
}  // namespace pylon::model
