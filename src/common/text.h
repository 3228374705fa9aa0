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

}  // namespace pylon
