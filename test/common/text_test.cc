#include "common/text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace pylon {
namespace {

TEST(Text, TrimTable) {
  struct Row {
    std::string_view in;
    std::string_view blanks;
    std::string_view out;
  };
  const Row rows[] = {
      {"", " \t", ""},         {" \t ", " \t", ""},
      {"a", " \t", "a"},       {"  a b\t", " \t", "a b"},
      {"\ta\r", " \t", "a\r"},  // '\r' is not a blank unless asked for
      {"\ta\r", " \t\r", "a"}, {"value\r\n", " \r\n", "value"},
      {"x  ", "", "x  "},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(Trim(r.in, r.blanks), r.out) << '"' << r.in << '"';
  }
  static_assert(Trim(" ab ") == "ab");
  // Separate sets for each side: a leading '\r' stays (the caller refuses it), a trailing one goes.
  EXPECT_EQ(Trim(" \rchunked\r", " \t", " \t\r"), "\rchunked");
  EXPECT_EQ(Trim("\t5 \r", " \t", " \t\r"), "5");
  EXPECT_EQ(Trim(" \t\r", " \t", " \t\r"), "");
  EXPECT_EQ(Trim("", " \t", " \t\r"), "");
}

TEST(ParseInteger, Table) {
  struct Row {
    const char* in;
    long lo, hi;
    std::optional<long> want;
  };
  const Row rows[] = {
      {"0", 0, 10, 0},
      {"10", 0, 10, 10},
      {"11", 0, 10, std::nullopt},
      {"-1", -5, 5, -1},
      {"-1", 0, 5, std::nullopt},
      {"", 0, 10, std::nullopt},  // empty
      {" 1", 0, 10, std::nullopt},
      {"1 ", 0, 10, std::nullopt},  // no blanks
      {"+1", 0, 10, std::nullopt},
      {"0x1", 0, 10, std::nullopt},
      {"1s", 0, 10, std::nullopt},
      {"99999999999999999999999", 0, 10, std::nullopt},  // out of range of the type
      {"007", 0, 10, 7},  // leading zeros: the caller's to refuse where a form forbids them
  };
  for (const auto& r : rows) {
    EXPECT_EQ(ParseInteger<long>(r.in, r.lo, r.hi), r.want) << '"' << r.in << '"';
  }
  EXPECT_EQ(ParseInteger<int>("42"), 42);
  EXPECT_EQ(ParseInteger<std::uint8_t>("256"), std::nullopt);
  EXPECT_EQ(ParsePort("65535"), 65535);
  EXPECT_EQ(ParsePort("0"), std::nullopt);
  EXPECT_EQ(ParsePort("65536"), std::nullopt);
}

}  // namespace
}  // namespace pylon
