// `pylon-dev soak`: hours of random faults on a lab (kube-proxy, pods, 3 nodes), checked against
// the API and the wire (docs/reliability.md).
//
// The run alternates fault phases and quiet phases. In a fault phase, every --step the soak draws
// one decision from its seeded generator (a fault, a config edit or a Service edit) and undoes
// earlier faults whose time has come; the same seed gives the same sequence of decisions (the
// digest in the table says so), whatever the timing. A quiet phase undoes every fault and waits,
// up to --bound, until every invariant holds; what still fails then is a violation.
//
// Invariants (checks.h): no address held by two Services unless they share a key (continuous,
// past --grace); no address changed on a Service the soak did not ask to change (continuous);
// and after the faults stop: config status inUse equal to what the Services hold; every local
// address on exactly one node's eth0, answered by exactly that node's MAC (ARP / NS) and it is
// the node the announcing annotation or L2Advertisement names; no pool address on any node that
// no Service holds; every Service served (addresses, announced, an HTTP answer through
// kube-proxy) or explained (AddressAllocated=False with a reason).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/cli.h"
#include "common/command.h"

namespace pylon::soak {

struct SoakOptions {
  std::string name = "soak";  // the lab's name ([a-z0-9]{1,12})
  int nodes = 3;
  std::uint64_t seed = 1;
  std::chrono::seconds duration{180};    // fault + quiet phases (not the lab's set-up)
  std::chrono::seconds fault_phase{30};  // length of one fault phase
  // Convergence allowed after the faults stop. An informer that failed through an API outage
  // waits up to 60 s before it lists again (backoff capped at 30 s, jittered up to x2: Pylon's
  // and client-go's, so kube-proxy's too); the bound covers that wait and 30 s more.
  std::chrono::seconds bound{90};
  std::chrono::seconds grace{20};        // an unshared duplicate tolerated this long in faults
  std::chrono::milliseconds step{1000};  // one decision per step
  std::string pylon;                     // the product binary; default: beside this executable
  std::string k8s_bin_dir;               // default: the build's
  bool keep_going = true;                // false: stop at the first violation
};

// Runs the soak; prints its table. 0: no violation; 1: violations or a lab that did not come up.
int RunSoak(const SoakOptions& options);

// `pylon-dev soak [flags]` (argv[0] is "soak").
int SoakCommand(int argc, char** argv);
// Its entry in the binary's command list (main/dispatch.h).
extern const cli::Command kSoakCommand;

}  // namespace pylon::soak
