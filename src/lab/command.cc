// `pylon-dev lab`: the dispatcher of the subcommands (command.h) and what they share.
#include "lab/command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "lab/process.h"

namespace pylon::lab {
namespace {

// A signal handler may only store to a lock-free atomic.
static_assert(std::atomic<bool>::is_always_lock_free);
std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

}  // namespace

const std::atomic<bool>* StopFlag() { return &g_stop; }

void InstallStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void AddBuildFlags(cli::App& sub, BuildFlags* flags) {
  sub.add_option("--name", flags->name, "the lab's name: 1-12 characters of [a-z0-9]");
  sub.add_option("--pylon,--binary", flags->pylon,
                 "the pylon binary whose allocator and agent the lab runs (default: pylon beside "
                 "this executable)")
      ->type_name("PATH");
  sub.add_option("--k8s-bin-dir", flags->k8s_bin_dir,
                 "where etcd, kube-apiserver and kubectl are (default: $PYLON_K8S_BIN_DIR, else "
                 "the build's)")
      ->type_name("DIR");
}

void AddKubeProxyFlags(cli::App& sub, KubeProxyFlags* flags) {
  sub.add_flag("--kube-proxy", flags->enabled,
               "kube-proxy on every node, pods behind the Services (docs/datapath.md)");
  sub.add_option("--proxy-mode", flags->mode, "kube-proxy's mode: nftables|iptables")
      ->type_name("MODE");
}

LabConfig ConfigFrom(const BuildFlags& build, const KubeProxyFlags& kube_proxy) {
  LabConfig cfg;
  cfg.name = build.name;
  cfg.binary = build.pylon;
  cfg.dev_binary = SelfExe();
  cfg.k8s_bin_dir = build.k8s_bin_dir;
  cfg.kube_proxy = kube_proxy.enabled;
  cfg.proxy_mode = kube_proxy.mode;
  return cfg;
}

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void Step(const std::string& heading) { Say("\n\033[1m==> " + heading + "\033[0m"); }

void Indent(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    Say("    " + text.substr(start, end - start));
    start = end + 1;
  }
}

int LabCommand(int argc, char** argv) {
  auto app = cli::NewCommand(
      "pylon-dev lab",
      "A whole cluster on one machine, in network namespaces (needs root, docs/lab.md):\n"
      "etcd and kube-apiserver, Pylon's allocator and one agent per node, a client on the\n"
      "nodes' LAN. `pylon-dev lab <command> --help` for a command's flags.");
  app->require_subcommand(1);
  const std::vector<Subcommand> subs = {AddUp(*app),        AddDown(*app),     AddStatus(*app),
                                        AddDemo(*app),      AddFailover(*app), AddTiming(*app),
                                        AddLifecycle(*app), AddServe(*app)};
  // A subcommand's --help comes from the lab's before its option defaults: list it with its flags.
  for (const auto& sub : subs) sub.app->get_help_ptr()->group("flags");
  // CLI11 would only say that a subcommand is required: name the word it did not know.
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(subs.begin(), subs.end(),
                   [&](const Subcommand& s) { return s.app->check_name(argv[1]); })) {
    std::fprintf(stderr, "%s: unknown command \"%s\"; see --help\n", app->get_name().c_str(),
                 argv[1]);
    return cli::kExitUsage;
  }
  if (auto rc = cli::Parse(*app, argc, argv)) return *rc;
  for (const auto& sub : subs) {
    if (!sub.app->parsed()) continue;
    InstallStopSignals();
    if (sub.needs_root && geteuid() != 0) {
      std::fprintf(stderr, "%s: needs root (network namespaces)\n",
                   (app->get_name() + " " + sub.app->get_name()).c_str());
      return cli::kExitFailure;
    }
    return sub.run();
  }
  return cli::kExitUsage;  // unreachable: CLI11 requires one subcommand
}

const cli::Command kLabCommand = {
    "lab", "a whole cluster in network namespaces: up, down, demo (root)", LabCommand};

}  // namespace pylon::lab
