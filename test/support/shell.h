// Running shell commands from tests: quoting, and the one popen of the test tree.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

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

struct ShellResult {
  int code = -1;    // the exit status; -1 when it could not run or did not exit normally
  std::string out;  // stdout, and stderr when merged
};

// Where a command's stderr goes: with stdout, nowhere (output that must parse, e.g. JSON), or to
// the test's own stderr (a build's progress).
enum class Stderr { kMerge, kDrop, kPass };

// Runs `cmd` in sh and waits for it.
inline ShellResult Shell(const std::string& cmd, Stderr err) {
  ShellResult r;
  const char* redirect = err == Stderr::kMerge  ? " 2>&1"
                         : err == Stderr::kDrop ? " 2>/dev/null"
                                                : "";
  FILE* f = ::popen((cmd + redirect).c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int status = ::pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
inline ShellResult Shell(const std::string& cmd, bool merge_stderr = true) {
  return Shell(cmd, merge_stderr ? Stderr::kMerge : Stderr::kDrop);
}

// `argv` quoted word by word, then Shell.
inline ShellResult ShellArgv(const std::vector<std::string>& argv, Stderr err = Stderr::kMerge) {
  std::string cmd;
  for (const auto& a : argv) cmd += ShellQuote(a) + " ";
  return Shell(cmd, err);
}

}  // namespace pylon::test_support
