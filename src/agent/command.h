// `pylon agent`: the node agent's entry point (see agent.h).
#pragma once

namespace pylon::agent {

// `pylon agent`: argv[0] is "agent". Returns the process exit code: 0 after a graceful shutdown,
// 1 when the agent cannot start, 2 on a bad command line or environment.
int RunAgentCommand(int argc, char** argv);

}  // namespace pylon::agent
