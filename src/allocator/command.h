// `pylon allocator`: flag parsing and wiring (client, informers, leader election, metrics server).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace pylon::allocator {

struct CommandOptions {
  std::string kubeconfig;  // "" = $KUBECONFIG, else in-cluster config
  std::string ns = "purelb-system";
  std::string metrics_addr = "0.0.0.0:7472";
  std::string lease_name = "pylon-allocator";
  std::string identity;  // "" = $POD_NAME, else hostname_pid
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  int workers = 8;  // concurrent Service writers; see docs/allocator.md (Benchmark)
  std::string log_level = "info";
};

// Parses argv (argv[0] is the command name). kInvalidArgument with a message on a bad flag.
Result<CommandOptions> ParseCommandLine(int argc, char** argv);

// "15s", "500ms", "2m", "1.5" (seconds). Positive.
Result<Duration> ParseDuration(std::string_view text);

// "host:port", "[v6]:port", ":port" (all interfaces).
struct HostPort {
  std::string host;
  int port = 0;
};
Result<HostPort> ParseHostPort(std::string_view text);

}  // namespace pylon::allocator

namespace pylon {
int RunAllocator(int argc, char** argv);
}  // namespace pylon
