// `pylon`: the product, the binary the image ships. Only wires: each command lives in its module.
#include "agent/command.h"
#include "allocator/command.h"
#include "main/dispatch.h"

int main(int argc, char** argv) {
  const std::vector<pylon::main::Command> commands = {
      {"allocator", "allocates LoadBalancer addresses (Deployment, leader-elected)",
       pylon::allocator::RunAllocatorCommand},
      {"agent", "the node agent: election, addresses, GARP/NA (DaemonSet, NET_ADMIN+NET_RAW)",
       pylon::agent::RunAgentCommand},
      {"prepare-node",
       "sets the node's strict-ARP sysctls and exits (the agent DaemonSet's privileged init "
       "container)",
       pylon::agent::RunPrepareNodeCommand},
  };
  return pylon::main::Dispatch("pylon", "a bare-metal LoadBalancer for Kubernetes", commands, argc,
                               argv);
}
