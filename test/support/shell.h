// Running commands from tests: quoting, and Shell, which runs a command line in sh through
// lab::RunCommand (fork + exec of /bin/sh -c; no popen). Targets that include this link
// pylon_test_support_shell.
#pragma once

#include <string>
#include <vector>

#include "lab/process.h"

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

// Runs `argv` (no shell) and waits for it.
inline ShellResult Run(const std::vector<std::string>& argv, Stderr err = Stderr::kMerge) {
  if (err == Stderr::kDrop) {
    std::string cmd = "exec";
    for (const auto& a : argv) cmd += " " + ShellQuote(a);
    std::vector<std::string> sh = {"/bin/sh", "-c", cmd + " 2>/dev/null"};
    return Run(sh, Stderr::kPass);
  }
  ShellResult r;
  auto rc = lab::RunCommand(argv, &r.out, "", err == Stderr::kMerge);
  r.code = rc ? *rc : -1;
  return r;
}

// Runs the command line `cmd` in sh and waits for it.
inline ShellResult Shell(const std::string& cmd, Stderr err) {
  return Run({"/bin/sh", "-c", cmd}, err);
}
inline ShellResult Shell(const std::string& cmd, bool merge_stderr = true) {
  return Shell(cmd, merge_stderr ? Stderr::kMerge : Stderr::kDrop);
}

}  // namespace pylon::test_support
