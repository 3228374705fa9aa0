// `pylon-dev`: developer and test tools, never in the image. Only wires, like `pylon`.
#include "faultproxy/command.h"
#include "lab/lab.h"
#include "main/dispatch.h"
#include "soak/soak.h"

int main(int argc, char** argv) {
  const std::vector<pylon::main::Command> commands = {
      {"lab", "a whole cluster in network namespaces: up, down, demo (root)",
       pylon::lab::LabCommand},
      {"fault-proxy", "a fault-injecting reverse proxy in front of kube-apiserver (tests)",
       pylon::faultproxy::RunFaultProxyCommand},
      {"soak", "random faults on a lab for hours, invariants checked on the wire (root)",
       pylon::soak::SoakCommand},
  };
  return pylon::main::Dispatch("pylon-dev", "Pylon's developer and test tools", commands, argc,
                               argv);
}
