// `pylon agent`: the node agent's entry point (see agent.h).
#pragma once

#include "common/command.h"

namespace pylon::agent {

// `pylon agent`: argv[0] is "agent". Returns the process exit code: 0 after a graceful shutdown,
// 1 when the agent cannot start, 2 on a bad command line or environment.
int RunAgentCommand(int argc, char** argv);
// Its entry in the binary's command list (main/dispatch.h).
extern const cli::Command kAgentCommand;

// `pylon prepare-node`: sets the node's sysctls that virtual addresses need (node_sysctls.h:
// net.ipv4.conf.all.arp_ignore=1, .arp_announce=2, .promote_secondaries=1) and exits: the
// DaemonSet's privileged init container, so that the agent itself stays non-privileged. Returns 0
// when they are in force, 1 when they cannot be set, 2 on a bad command line.
int RunPrepareNodeCommand(int argc, char** argv);
// Its entry in the binary's command list (main/dispatch.h).
extern const cli::Command kPrepareNodeCommand;

}  // namespace pylon::agent
