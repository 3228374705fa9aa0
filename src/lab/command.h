// The pieces of `pylon-dev lab` (LabCommand in lab.h) shared by its subcommands: how a subcommand
// is declared to the dispatcher, the stop flag that SIGINT / SIGTERM set, the flags that every lab
// building subcommand takes, and the console output of the demo and the measurements.
//
// One file per subcommand or close family: cmd_up.cc (up, down, status), cmd_demo.cc,
// cmd_failover.cc, cmd_timing.cc, cmd_lifecycle.cc, cmd_serve.cc.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/cli.h"
#include "common/result.h"
#include "lab/lab.h"

namespace pylon::lab {

// A subcommand of `pylon-dev lab`: its parser, a CLI11 subcommand of the lab's, and what runs it
// once its flags are parsed (an exit code: cli::kExitOk, kExitFailure or kExitUsage).
struct Subcommand {
  cli::App* app = nullptr;
  std::function<int()> run;
  bool needs_root = true;  // network namespaces
};

// Each declares one subcommand (its flags land in state the returned `run` owns).
Subcommand AddUp(cli::App& lab);
Subcommand AddDown(cli::App& lab);
Subcommand AddStatus(cli::App& lab);
Subcommand AddDemo(cli::App& lab);
Subcommand AddFailover(cli::App& lab);
Subcommand AddTiming(cli::App& lab);
Subcommand AddLifecycle(cli::App& lab);
Subcommand AddServe(cli::App& lab);

// Set once SIGINT or SIGTERM arrives (InstallStopSignals); the loops of the subcommands end then.
const std::atomic<bool>* StopFlag();
inline bool Stopping() { return StopFlag()->load(); }
void InstallStopSignals();

// The flags naming what a lab is built from, shared by up, demo, failover and timing.
struct BuildFlags {
  std::string name;
  std::string pylon;  // --pylon (alias --binary): the product binary; empty: LabConfig's default
  std::string k8s_bin_dir;  // empty: K8sBinDir()
};
// --name, --pylon / --binary, --k8s-bin-dir; their defaults are the values in `*flags`.
void AddBuildFlags(cli::App& sub, BuildFlags* flags);

// --kube-proxy and --proxy-mode, shared by up, demo and failover.
struct KubeProxyFlags {
  bool enabled = false;
  std::string mode = "nftables";
};
void AddKubeProxyFlags(cli::App& sub, KubeProxyFlags* flags);

// The LabConfig those flags describe: the responders run this executable's `lab serve`.
LabConfig ConfigFrom(const BuildFlags& build, const KubeProxyFlags& kube_proxy);

// The flags of the subcommands that build a lab to look at (up, demo).
struct UpFlags {
  BuildFlags build{.name = "demo", .pylon = "", .k8s_bin_dir = ""};
  int nodes = 3;
  KubeProxyFlags kube_proxy;
  bool bgp = false;
  bool kubelet = false;
  std::string install;  // LabConfig::install
};
// The build flags, --nodes (within [min_nodes, max_nodes]), the kube-proxy flags, --bgp,
// --kubelet and --install.
void AddUpFlags(cli::App& sub, UpFlags* flags, int min_nodes, int max_nodes);
LabConfig UpConfig(const UpFlags& flags);

// Console output: a line (flushed, so that a pipe shows progress), a bold step heading, and text
// indented by four spaces line by line.
void Say(const std::string& line);
void Step(const std::string& heading);
void Indent(const std::string& text);

}  // namespace pylon::lab
