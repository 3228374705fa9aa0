#include "main/dispatch.h"

#include <cstdio>
#include <string_view>

#include "common/cli.h"

namespace pylon::main {

namespace {

void PrintHelp(const char* binary, const char* about, const std::vector<Command>& commands) {
  std::printf("usage: %s <command> [flags]\n\n%s %s: %s\n\ncommands:\n", binary, binary,
              PYLON_VERSION, about);
  for (const auto& c : commands) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("  %-12s %s\n", "version", "print the version");
  std::printf("\n%s <command> --help shows the command's flags.\n", binary);
}

}  // namespace

int Dispatch(const char* binary, const char* about, const std::vector<Command>& commands, int argc,
             char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "%s: missing command; see --help\n", binary);
    return cli::kExitUsage;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintHelp(binary, about, commands);
    return cli::kExitOk;
  }
  if (name == "version" || name == "--version") {
    std::printf("%s %s\n", binary, PYLON_VERSION);
    return cli::kExitOk;
  }
  for (const auto& c : commands) {
    if (name == c.name) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "%s: unknown command \"%s\"; see --help\n", binary, argv[1]);
  return cli::kExitUsage;
}

}  // namespace pylon::main
