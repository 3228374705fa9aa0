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
      {"", " \t", ""},
      {" \t ", " \t", ""},
      {"a", " \t", "a"},
      {"  a b\t", " \t", "a b"},
      {"\ta\r", " \t", "a\r"},  // '\r' is not a blank unless asked for
      {"\ta\r", " \t\r", "a"},
      {"value\r\n", " \r\n", "value"},
      {"x  ", "", "x  "},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(Trim(r.in, r.blanks), r.out) << '"' << r.in << '"';
  }
  static_assert(Trim(" ab ") == "ab");
}

}  // namespace
}  // namespace pylon
