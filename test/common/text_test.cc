#include "common/text.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pylon
