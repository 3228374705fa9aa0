// Shell quoting for tests that run commands through /bin/sh.
#pragma once

#include <string>

namespace pylon::test_support {

// `s` as one single-quoted sh word ('it'\''s').
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace pylon::test_support
