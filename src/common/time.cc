#include "common/time.h"

#include <cstdio>
#include <ctime>

namespace pylon {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::seconds;

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

std::string FormatSeconds(int64_t secs) {
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

// Splits a wall time into whole seconds (floor) and microseconds in [0, 1e6).
void Split(WallTime t, int64_t* secs, int64_t* micros) {
  int64_t us = duration_cast<microseconds>(t.time_since_epoch()).count();
  int64_t s = us / 1000000;
  int64_t rem = us % 1000000;
  if (rem < 0) {
    rem += 1000000;
    s -= 1;
  }
  *secs = s;
  *micros = rem;
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

Result<WallTime> Bad(std::string_view text, const char* why) {
  return Fail(ErrorCode::kInvalidArgument,
              "bad RFC 3339 time \"" + std::string(text) + "\": " + why);
}

}  // namespace

std::string FormatTime(WallTime t) {
  int64_t s, us;
  Split(t, &s, &us);
  return FormatSeconds(s) + "Z";
}

std::string FormatMicroTime(WallTime t) {
  int64_t s, us;
  Split(t, &s, &us);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(us));
  return FormatSeconds(s) + frac + "Z";
}

Result<WallTime> ParseTime(std::string_view text) {
  int y, mo, d, h, mi, se;
  if (!Digits(text, 0, 4, &y) || text.size() < 19 || text[4] != '-' || !Digits(text, 5, 2, &mo) ||
      text[7] != '-' || !Digits(text, 8, 2, &d) || (text[10] != 'T' && text[10] != 't') ||
      !Digits(text, 11, 2, &h) || text[13] != ':' || !Digits(text, 14, 2, &mi) || text[16] != ':' ||
      !Digits(text, 17, 2, &se)) {
    return Bad(text, "expected YYYY-MM-DDTHH:MM:SS");
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || se > 60) {
    return Bad(text, "field out of range");
  }
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    size_t n = pos - start;
    if (n == 0 || n > 9) return Bad(text, "expected 1 to 9 fractional digits");
    for (size_t i = 0; i < 6; ++i) {
      micros = micros * 10 + (i < n ? text[start + i] - '0' : 0);
    }
  }
  int64_t offset_secs = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!Digits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !Digits(text, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return Bad(text, "bad zone offset");
    }
    offset_secs = (oh * 3600 + om * 60) * (text[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return Bad(text, "missing zone (Z or ±HH:MM)");
  }
  if (pos != text.size()) return Bad(text, "trailing characters");
  int64_t secs = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                 h * 3600 + mi * 60 + se - offset_secs;
  // WallTime counts nanoseconds in 64 bits: about 1677-09-22 to 2262-04-11. Anything outside
  // (a year 4048 creationTimestamp, say) is an error, never a wrapped-around time.
  constexpr int64_t kMaxSecs = duration_cast<seconds>(WallTime::duration::max()).count() - 1;
  constexpr int64_t kMinSecs = duration_cast<seconds>(WallTime::duration::min()).count() + 1;
  if (secs > kMaxSecs || secs < kMinSecs) {
    return Bad(text, "outside the representable range (years 1678 to 2261)");
  }
  return WallTime(duration_cast<WallTime::duration>(seconds(secs) + microseconds(micros)));
}

Result<WallTime> ParseMicroTime(std::string_view text) {
  if (text.size() != 27 || text[19] != '.' || text[26] != 'Z') {
    return Fail(ErrorCode::kInvalidArgument,
                "bad MicroTime \"" + std::string(text) +
                    "\": expected YYYY-MM-DDTHH:MM:SS.ffffffZ (exactly 6 fractional digits)");
  }
  return ParseTime(text);
}

Result<WallTime> ParseWholeSecondsTime(std::string_view text) {
  if (text.size() != 20 || text[19] != 'Z' || text[10] != 'T') {
    return Fail(ErrorCode::kInvalidArgument,
                "time \"" + std::string(text) + "\": not YYYY-MM-DDTHH:MM:SSZ");
  }
  return ParseTime(text);
}

}  // namespace pylon
