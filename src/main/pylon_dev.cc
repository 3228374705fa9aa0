// `pylon-dev`: developer and test tools, never in the image. Only wires, like `pylon`.
#include "faultproxy/command.h"
#include "lab/lab.h"
#include "main/dispatch.h"
#include "soak/soak.h"

int main(int argc, char** argv) {
  return pylon::main::Dispatch(
      "pylon-dev", "Pylon's developer and test tools",
      {pylon::lab::kLabCommand, pylon::faultproxy::kFaultProxyCommand, pylon::soak::kSoakCommand},
      argc, argv);
}
