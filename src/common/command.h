// One command of a binary (`pylon agent`, `pylon-dev lab`): what main/dispatch.h runs for argv[1].
// Each module defines its own next to its entry point, as kubectl's commands carry their Use and
// Short.
#pragma once

namespace pylon::cli {

struct Command {
  const char* name;
  const char* summary;                // one line for the binary's --help
  int (*run)(int argc, char** argv);  // argv[0] is the command name; returns the exit code
};

}  // namespace pylon::cli
