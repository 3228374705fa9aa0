#include "agent/command.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "agent/node_sysctls.h"
#include "agent/options.h"
#include "agent/ownership_file.h"
#include "common/cli.h"
#include "common/env.h"
#include "common/log.h"
#include "http/server.h"
#include "k8s/client_impl.h"
#include "k8s/rest_config.h"
#include "netlink/netlink_impl.h"
#include "nftables/nftables.h"

namespace pylon::agent {

namespace {

// Blocks SIGTERM and SIGINT in the calling thread (and so in every thread it starts later): one
// thread takes them with sigwait. Returns the set.
sigset_t BlockStopSignals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  return sigs;
}

// The record of the addresses this agent added: --state-file, or memory only when it is "".
std::unique_ptr<OwnershipStore> NewOwnershipStore(const AgentOptions& opts,
                                                  bool kernel_tags_addresses) {
  if (!kernel_tags_addresses && opts.state_file.empty()) {
    log::Warn(
        "kernel without IFA_PROTO and no --state-file: addresses left by a crash are not "
        "recognised as ours and are only removed by their valid lifetime");
  }
  if (opts.state_file.empty()) return std::make_unique<MemoryOwnershipStore>();
  return std::make_unique<FileOwnershipStore>(opts.state_file);
}

// Serves /metrics (from `registry`), /healthz and /readyz (from `agent`) on --metrics-addr.
Result<std::unique_ptr<http::Server>> StartMetricsServer(const AgentOptions& opts, Agent& agent,
                                                         metrics::Registry& registry) {
  http::ServerOptions so;
  so.address = opts.metrics_host;
  so.port = opts.metrics_port;
  Agent* a = &agent;
  auto srv =
      http::Server::Start(so, [a, &registry](const http::Request& req, http::ResponseWriter& w) {
        if (req.path == "/metrics") {
          w.Send(http::Response::Text(200, registry.Render(), "text/plain; version=0.0.4"));
        } else if (req.path == "/healthz") {
          w.Send(a->Alive() ? http::Response::Text(200, "ok\n")
                            : http::Response::Text(503, "agent loop stalled\n"));
        } else if (req.path == "/readyz") {
          // A node-sysctl shortfall is shown, not made a readiness failure: the agent still
          // serves local addresses, and an unready DaemonSet would stall every rollout.
          const std::string detail = a->ReadyDetail();
          const std::string extra = detail.empty() ? "" : detail + "\n";
          w.Send(a->Ready() ? http::Response::Text(200, "ok\n" + extra)
                            : http::Response::Text(503, "not ready\n" + extra));
        } else {
          w.Send(http::Response::Text(404, "not found\n"));
        }
      });
  if (!srv) return Fail(srv.error());
  log::Info("serving /metrics /healthz /readyz", {{"url", (*srv)->Url()}});
  return std::move(*srv);
}

// Starts `agent` and runs it until SIGTERM or SIGINT (`sigs`, blocked) asks it to stop; the exit
// code.
int RunUntilStopped(Agent& agent, const sigset_t& sigs) {
  std::atomic<bool> done{false};
  std::thread signals([&] {
    while (!done.load()) {
      timespec ts{0, 200 * 1000 * 1000};
      int sig = sigtimedwait(&sigs, nullptr, &ts);
      if (sig == SIGTERM || sig == SIGINT) {
        log::Info("signal received, stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        agent.RequestStop();
      }
    }
  });
  int rc = 0;
  if (auto st = agent.Start(); !st) {
    log::Error("agent start", {{"error", st.error().message()}});
    rc = 1;
  } else {
    agent.Run();
  }
  done.store(true);
  signals.join();
  return rc;
}

}  // namespace

int RunAgentCommand(int argc, char** argv) {
  AgentOptions options;
  const Status from_env = ApplyAgentEnv(ProcessEnv, &options);
  auto app = NewAgentCommand(&options);
  if (auto code = cli::Parse(*app, argc, argv)) return *code;
  if (!from_env) return cli::UsageError(*app, from_env.error().message());
  if (auto st = ValidateAgentOptions(options); !st) {
    return cli::UsageError(*app, st.error().message());
  }
  const AgentOptions* opts = &options;
  log::SetComponent("agent");
  log::SetLevel(opts->log_level);
  const sigset_t sigs = BlockStopSignals();  // before any thread starts

  auto rest = k8s::LoadRestConfig(opts->kubeconfig);
  if (!rest) {
    log::Error("kubeconfig", {{"error", rest.error().message()}});
    return 1;
  }
  auto client = k8s::NewClient(*rest, std::string("pylon-agent/") + PYLON_VERSION);
  if (!client) {
    log::Error("API client", {{"error", client.error().message()}});
    return 1;
  }
  auto nl = netlink::NetlinkImpl::Create();
  if (!nl) {
    log::Error("netlink", {{"error", nl.error().message()}});
    return 1;
  }
  k8s::EventRecorderOptions ro;
  ro.component = kEventComponent;
  ro.host = opts->node_name;
  k8s::EventRecorderImpl recorder(**client, ro);
  recorder.Start();
  packet::AnnouncerImpl announcer(SystemClock::Instance());
  std::unique_ptr<OwnershipStore> store = NewOwnershipStore(*opts, (*nl)->SupportsAddressProto());
  metrics::Registry registry;

  AgentDeps deps;
  deps.client = client->get();
  deps.recorder = &recorder;
  deps.netlink = nl->get();
  deps.announcer = &announcer;
  deps.ownership = store.get();
  deps.metrics = &registry;
  deps.clock = &SystemClock::Instance();
  deps.open_netlink = []() -> Result<std::unique_ptr<netlink::Netlink>> {
    auto n = netlink::NetlinkImpl::Create();
    if (!n) return Fail(n.error());
    return std::unique_ptr<netlink::Netlink>(std::move(*n));
  };
  std::unique_ptr<nftables::Nftables> nft;
  if (opts->drain_timeout > Duration(0)) {
    if (auto n = nftables::OpenNftables(); n) {
      nft = std::move(*n);
      deps.nftables = nft.get();
    } else {
      log::Warn("nftables unavailable: planned moves reset established flows (no drain)",
                {{"error", n.error().message()}});
    }
  }
  auto agent = Agent::Create(*opts, deps);
  if (!agent) {
    log::Error("agent", {{"error", agent.error().message()}});
    return 1;
  }
  std::unique_ptr<http::Server> server;
  if (opts->metrics_enabled) {
    auto srv = StartMetricsServer(*opts, **agent, registry);
    if (!srv) {
      log::Error("metrics server", {{"error", srv.error().message()}});
      return 1;
    }
    server = std::move(*srv);
  }
  const int rc = RunUntilStopped(**agent, sigs);
  if (server) server->Stop();
  agent->reset();
  recorder.Stop();
  log::Info("agent stopped");
  return rc;
}

const cli::Command kAgentCommand = {
    "agent", "the node agent: election, addresses, GARP/NA (DaemonSet, NET_ADMIN+NET_RAW)",
    RunAgentCommand};

int RunPrepareNodeCommand(int argc, char** argv) {
  auto app = cli::NewCommand(
      "pylon prepare-node",
      "Sets net.ipv4.conf.all.arp_ignore=1, arp_announce=2 and promote_secondaries=1 in this "
      "network namespace and exits: strict ARP for the virtual addresses on kube-lb0. The agent "
      "DaemonSet runs it as a privileged init container (/proc/sys is read-only in the agent's "
      "own, non-privileged container); the agent checks the values.");
  if (auto code = cli::Parse(*app, argc, argv)) return *code;
  log::SetComponent("prepare-node");
  auto nl = netlink::NetlinkImpl::Create();
  if (!nl) {
    log::Error("netlink", {{"error", nl.error().message()}});
    return 1;
  }
  if (auto st = PrepareNode(**nl); !st) {
    log::Error("cannot set the node's sysctls (a privileged container is needed)",
               {{"error", st.error().message()}});
    return 1;
  }
  std::string set;
  for (const auto& s : PrepareNodeSettings()) {
    set += (set.empty() ? "" : " ") + s.key.interface + "." + s.key.name + "=" + s.value;
  }
  log::Info("node sysctls set", {{"net.ipv4.conf", set}});
  return 0;
}

const cli::Command kPrepareNodeCommand = {"prepare-node",
                                          "sets the node's strict-ARP sysctls and exits (the agent "
                                          "DaemonSet's privileged init container)",
                                          RunPrepareNodeCommand};

}  // namespace pylon::agent
