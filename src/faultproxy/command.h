// `pylon-dev fault-proxy`: the fault-injecting reverse proxy as a process (docs/fault-proxy.md).
#pragma once

#include "common/command.h"

namespace pylon::faultproxy {

// argv[0] is "fault-proxy". Serves until SIGINT or SIGTERM. Returns the process exit code: 0 after
// a signal, 1 when it cannot start, 2 on a bad command line.
int RunFaultProxyCommand(int argc, char** argv);
// Its entry in the binary's command list (main/dispatch.h).
extern const cli::Command kFaultProxyCommand;

}  // namespace pylon::faultproxy
