// Small text helpers shared by every parser of the project. Pure, no allocation.
#pragma once

#include <string_view>

namespace pylon {

// `s` without leading and trailing characters from `blanks` (by default space and tab, the
// "optional whitespace" of HTTP headers, annotations and comma-separated lists).
constexpr std::string_view Trim(std::string_view s, std::string_view blanks = " \t") {
  const auto first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

// `s` without leading characters from `front` and trailing ones from `back`: for line-based
// protocols where a trailing '\r' is a line end but a leading one is an error for the caller to
// see (an HTTP header value, RFC 9112 section 2.2).
constexpr std::string_view Trim(std::string_view s, std::string_view front, std::string_view back) {
  const auto first = s.find_first_not_of(front);
  if (first == std::string_view::npos) return {};
  s.remove_prefix(first);
  const auto last = s.find_last_not_of(back);
  return last == std::string_view::npos ? std::string_view{} : s.substr(0, last + 1);
}

}  // namespace pylon
