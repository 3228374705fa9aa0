#include "common/duration.h"

#include <cstdint>
#include <string>

namespace pylon {

namespace {

// Nanoseconds per unit, or 0 when `unit` is not one.
std::int64_t UnitNanos(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xc2\xb5s" || unit == "\xce\xbcs") return 1000;
  if (unit == "ms") return 1000 * 1000;
  if (unit == "s") return 1000 * 1000 * 1000;
  if (unit == "m") return 60LL * 1000 * 1000 * 1000;
  if (unit == "h") return 3600LL * 1000 * 1000 * 1000;
  return 0;
}

}  // namespace

Result<Duration> ParseGoDuration(std::string_view text) {
  const std::string quoted = "invalid duration \"" + std::string(text) + "\"";
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration(0);
  if (s.empty()) return Fail(ErrorCode::kInvalidArgument, quoted);
  // Accumulated in long double nanoseconds; bounded to int64 at the end.
  long double total = 0;
  while (!s.empty()) {
    std::size_t i = 0;
    long double value = 0;
    bool digits = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      value = value * 10 + (s[i] - '0');
      ++i;
      digits = true;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        value += (s[i] - '0') * scale;
        scale /= 10;
        ++i;
        digits = true;
      }
    }
    if (!digits) return Fail(ErrorCode::kInvalidArgument, quoted);
    std::size_t j = i;
    while (j < s.size() && !(s[j] >= '0' && s[j] <= '9') && s[j] != '.') ++j;
    std::string_view unit = s.substr(i, j - i);
    if (unit.empty())
      return Fail(ErrorCode::kInvalidArgument,
                  "missing unit in duration \"" + std::string(text) + "\"");
    std::int64_t nanos = UnitNanos(unit);
    if (nanos == 0) {
      return Fail(ErrorCode::kInvalidArgument, "unknown unit \"" + std::string(unit) +
                                                   "\" in duration \"" + std::string(text) + "\"");
    }
    total += value * static_cast<long double>(nanos);
    if (total > 9.2e18L) return Fail(ErrorCode::kInvalidArgument, quoted + ": out of range");
    s.remove_prefix(j);
  }
  auto n = static_cast<std::int64_t>(total);
  return Duration(negative ? -n : n);
}

}  // namespace pylon
