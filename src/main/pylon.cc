// `pylon`: the product, the binary the image ships. Only wires: each command lives in its module.
#include "agent/command.h"
#include "allocator/command.h"
#include "main/dispatch.h"

int main(int argc, char** argv) {
  return pylon::main::Dispatch("pylon", "a bare-metal LoadBalancer for Kubernetes",
                               {pylon::allocator::kAllocatorCommand, pylon::agent::kAgentCommand,
                                pylon::agent::kPrepareNodeCommand},
                               argc, argv);
}
