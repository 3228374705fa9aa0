// The `pylon` binary: one executable, one subcommand per component. This file only wires:
// each command's implementation lives in its own module under src/.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "agent/command.h"
#include "faultproxy/proxy.h"
#include "lab/lab.h"
#include "main/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);  // argv[0] is the command name
};

int RunVersion(int /*argc*/, char** /*argv*/) {
  std::printf("pylon %s\n", PYLON_VERSION);
  return 0;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"version", "print the version", RunVersion},
      {"allocator", "allocates LoadBalancer addresses (Deployment, leader-elected)",
       pylon::RunAllocator},
      {"agent", "the node agent: election, addresses, GARP/NA (DaemonSet, NET_ADMIN+NET_RAW)",
       pylon::agent::RunAgentCommand},
      {"fault-proxy", "a fault-injecting reverse proxy in front of kube-apiserver (tests)",
       pylon::faultproxy::RunFaultProxyCommand},
      {"lab", "a whole cluster in network namespaces: up, down, demo (root)",
       pylon::lab::LabCommand},
  };
  return commands;
}

void PrintHelp(std::FILE* out) {
  std::fprintf(out,
               "pylon %s: a bare-metal LoadBalancer for Kubernetes\n\n"
               "usage: pylon <command> [flags]   (pylon <command> --help for its flags)\n\n"
               "commands:\n",
               PYLON_VERSION);
  for (const auto& c : Commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintHelp(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    PrintHelp(stdout);
    return 0;
  }
  if (cmd == "--version") return RunVersion(argc - 1, argv + 1);
  for (const auto& c : Commands()) {
    if (cmd == c.name) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "pylon: unknown command \"%s\"\n\n", argv[1]);
  PrintHelp(stderr);
  return 2;
}
