// `pylon allocator`: flag parsing and wiring (client, informers, leader election, metrics server).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/cli.h"
#include "common/clock.h"
#include "common/command.h"
#include "common/log.h"

namespace pylon::allocator {

struct CommandOptions {
  std::string kubeconfig;  // "" = $KUBECONFIG, else in-cluster config
  std::string ns = "purelb-system";
  cli::HostPort metrics_addr{"0.0.0.0", 7472};
  std::string lease_name = "pylon-allocator";
  std::string identity;  // "" = $POD_NAME, else hostname_pid
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  int workers = 8;  // concurrent Service writers; see docs/allocator.md (Benchmark)
  // --probe-ahead N: next addresses per ServiceGroup and family published for background probes
  // (status.probeAhead, docs/agent.md "Probe ahead"); 0 = off.
  int probe_ahead = 4;
  log::Level log_level = log::Level::kInfo;
};

// The flags of `pylon allocator`, parsed into `*o` (its current values are the defaults). Every
// check is a flag's own, so a parse that succeeds leaves valid options.
std::unique_ptr<cli::App> NewAllocatorCommand(CommandOptions* o);

// `pylon allocator`: argv[0] is "allocator". Returns the process exit code: 0 after a graceful
// shutdown, 1 when it cannot start or loses leadership, 2 on a bad command line.
int RunAllocatorCommand(int argc, char** argv);
// Its entry in the binary's command list (main/dispatch.h).
extern const cli::Command kAllocatorCommand;

}  // namespace pylon::allocator
