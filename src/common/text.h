// Small text helpers shared by every parser and formatter of the project. Pure.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The one integer parser: `text` whole as a decimal integer in [lo, hi], else nullopt. No sign
// but a leading '-' (signed types), no blanks, no base prefix, no trailing text; leading zeros are
// the caller's to refuse where a form forbids them (a prefix length).
template <std::integral T>
inline std::optional<T> ParseInteger(std::string_view text, T lo = std::numeric_limits<T>::min(),
                                     T hi = std::numeric_limits<T>::max()) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

// A TCP/UDP port: 1..65535.
inline std::optional<std::uint16_t> ParsePort(std::string_view text) {
  return ParseInteger<std::uint16_t>(text, 1, 65535);
}

// The pieces of `s` between the `sep`s, untrimmed and empty ones included ("a,,b" gives three;
// "" gives one, empty): each list parser numbers, trims and skips entries as its format says.
inline std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto pos = s.find(sep);
    out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return out;
    s.remove_prefix(pos + 1);
  }
}

// One piece of a comma-separated annotation list: its 1-based place among all the pieces (empty
// ones counted) and its text, trimmed. Each parser skips empty ones, or refuses them, as its
// format says.
struct ListEntry {
  std::size_t number = 0;
  std::string_view text;
};
inline std::vector<ListEntry> ListEntries(std::string_view value) {
  std::vector<ListEntry> out;
  for (std::string_view raw : Split(value, ',')) out.push_back({out.size() + 1, Trim(raw)});
  return out;
}

// The ToString() of each item, separated by `sep` (the annotations' comma-separated lists).
template <typename Range>
std::string JoinToString(const Range& items, char sep = ',') {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item.ToString();
  }
  return out;
}

}  // namespace pylon
