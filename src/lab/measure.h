// What the lab's measurements share: `failover` and `timing` build the same lab (three nodes, the
// ServiceGroup localdual) from the same flags, and `demo` and `failover` time an outage the same
// way. The tables they print are read by people and by docs (docs/lab.md, docs/failover.md): keep
// their lines as they are.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/clock.h"
#include "lab/command.h"
#include "lab/lab.h"

namespace pylon::lab {

// The flags of a measurement. kube_proxy and address_lifetime are failover's only.
struct MeasureFlags {
  BuildFlags build;
  int runs = 3;
  KubeProxyFlags kube_proxy;
  Duration address_lifetime = Duration::zero();  // zero: the agents' default (the lease duration)
};
// The subcommand `name` of `lab` for a measurement: its lab is named `name` and it runs `runs`
// times per case by default; --name, --pylon / --binary, --k8s-bin-dir and --runs (1 to 100).
cli::App* AddMeasureCommand(cli::App& lab, const std::string& name, const std::string& description,
                            int runs, MeasureFlags* flags);

// The lab a measurement runs on: ConfigFrom the flags, and for the agents --address-lifetime when
// given and, with kube-proxy, --etp-local=elect (the address follows a node with a ready endpoint,
// so the pod that answers names the node that holds the address).
LabConfig MeasureLabConfig(const MeasureFlags& flags);

// The valid lifetime the agents give their addresses: --address-lifetime, else the lease duration.
Duration AddressLifetime(const MeasureFlags& flags, const LabConfig& cfg);

// A duration as Go writes the agent's flags and as the tables show it: "3s", "2500ms".
std::string DurationText(Duration d);

// Brings up the lab of `cfg` and applies the ServiceGroup localdual; on failure says "lab up
// failed: <why>" and returns null (the lab is torn down).
std::unique_ptr<Lab> StartMeasureLab(const LabConfig& cfg);
// Removes the lab after the measurement (saying why when it could not); the measurement's exit
// code: cli::kExitOk.
int FinishMeasureLab(Lab& lab);

// What the client saw while a fault hit the node answering for an address.
struct Outage {
  double ms = -1;        // the longest stretch without an answer; -1: the address never came back
  std::string from, to;  // the node that answered before the fault, and last
  double handover_ms = -1;  // fault -> first answer from another node; -1: none
};

// Probes `ip` from the client every 10 ms (30 ms timeout per attempt), runs `fault` on this
// thread after 500 ms of answers, and returns the longest outage seen by the client and the node
// that answered before and after. The run ends `window` after the fault, or earlier once the
// address has answered steadily for 300 ms after an outage (or for 1.5 s when there was none).
Outage MeasureFailover(const Lab& lab, const std::string& ip, const std::function<void()>& fault,
                       std::chrono::milliseconds window);

// Milliseconds since `t0` on the steady clock.
double SinceMs(std::chrono::steady_clock::time_point t0);

// One row of a table, "     min   median      max" of the values >= 0 (-1: missing), then how many
// of `runs` were missing ("<missing> within <window_s> s") and, when the values are fewer than
// `runs`, how many runs were done. Pure.
std::string Stats(std::vector<double> v, int runs, double window_s,
                  const std::string& missing = "the address never came back");

}  // namespace pylon::lab
