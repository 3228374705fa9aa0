// Entry points of the subcommands, one per component module. Each takes argv with argv[0] set to
// the command name, parses its own flags, and returns the process exit code.
#pragma once

namespace pylon {
int RunAllocator(int argc, char** argv);  // src/allocator/command.cc
}  // namespace pylon
