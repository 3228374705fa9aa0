// Temporary directories of tests (control planes' data, components' logs, rendered files), and
// the one switch that keeps them: with PYLON_KEEP_TEST_DIR set (to anything), no test removes its
// directory, so its logs can be read afterwards (docs/lab.md).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace pylon::test_support {

inline bool KeepTestDirs() { return std::getenv("PYLON_KEEP_TEST_DIR") != nullptr; }

// A fresh /tmp/pylon-<tag>-XXXXXX; "" (and errno set) when it cannot be made.
inline std::string MakeTestDir(const std::string& tag) {
  std::string templ = "/tmp/pylon-" + tag + "-XXXXXX";
  return ::mkdtemp(templ.data()) != nullptr ? templ : std::string();
}

// Removes `dir` and what it holds, unless PYLON_KEEP_TEST_DIR is set.
inline void RemoveTestDir(const std::string& dir) {
  if (dir.empty() || KeepTestDirs()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace pylon::test_support
