// The top level of `pylon` and `pylon-dev`: one command per argv[1]. Both binaries
// dispatch and print --help the same way; each command parses its own flags (common/cli.h).
#pragma once

#include <vector>

#include "common/command.h"

namespace pylon::main {

using cli::Command;

// Runs the command argv[1] names, with argv shifted by one. `binary` is the program's name in
// messages ("pylon"), `about` one line on what it is. Every binary also has "version" (and
// --version). --help / -h / help: the commands on stdout, exit 0. No command or an unknown one:
// one line on stderr, exit 2.
int Dispatch(const char* binary, const char* about, const std::vector<Command>& commands, int argc,
             char** argv);

}  // namespace pylon::main
