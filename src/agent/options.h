// Command-line flags and environment of `pylon agent`. Pure parsing; no I/O.
//
// The environment gives defaults ($NODE_NAME, PYLON_HEARTBEAT_*, PYLON_QUIET_LEASE) and the lease
// timing (PURELB_LEASE_DURATION, PURELB_RENEW_DEADLINE, PURELB_RETRY_PERIOD); flags override it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/garp.h"
#include "agent/kube_proxy_health.h"
#include "agent/lease_health.h"
#include "agent/lease_pacing.h"
#include "agent/lifecycle.h"
#include "agent/types.h"
#include "common/log.h"
#include "common/result.h"
#include "heartbeat/config.h"

namespace CLI {
class App;  // common/cli.h
}  // namespace CLI

namespace pylon::agent {

// --bird-socket PATH (BGP on), --bird-config PATH, --bgp-status-interval DUR,
// --bgp-drain-timeout DUR, --bgp-drain-margin DUR (bgp_sync.h; docs/bgp.md).
struct BgpOptions {
  std::string bird_socket;  // "" = BGP off
  std::string bird_config = "/run/pylon-bird/bird.conf";
  Duration status_interval = std::chrono::seconds(5);
  Duration drain_timeout = std::chrono::seconds(5);
  Duration drain_margin = std::chrono::milliseconds(300);
  bool enabled() const { return !bird_socket.empty(); }
};

struct AgentOptions {
  std::string kubeconfig;            // --kubeconfig; empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::string node_name;             // --node-name, else $NODE_NAME (required)
  std::string ns = "purelb-system";  // --namespace
  std::string metrics_host = "0.0.0.0";  // --metrics-addr (cli::ParseListenAddress; "" = off)
  std::uint16_t metrics_port = 7473;
  bool metrics_enabled = true;
  EtpLocalMode etp_mode = EtpLocalMode::kReset;           // --etp-local=reset|elect
  std::string state_file = "/run/pylon/agent-addresses";  // --state-file ("" = none)
  std::optional<Duration> address_lifetime;  // --address-lifetime; default: see Effective...
  GarpOptions garp;                          // --garp-count, --garp-interval
  log::Level log_level = log::Level::kInfo;  // --log-level
  LeaseTiming timing;                        // PURELB_* environment variables
  // --quiet-lease on|off (or $PYLON_QUIET_LEASE; default on): renew the node lease every 10 s
  // with a 40 s duration while heartbeats carry liveness, PURELB_* timing otherwise
  // (lease_pacing.h; docs/failover.md "Quiet lease"). Off: always the PURELB_* timing.
  QuietLeaseOptions quiet_lease;
  heartbeat::HeartbeatConfig heartbeat;  // --heartbeat-*, PYLON_HEARTBEAT_* (off: no key)
  // $PURELB_POD_UID: the node lease's purelb.io/instance ("" = none).
  std::string pod_uid;
  // $POD_NAME (downward API): this agent's Pod, read on SIGTERM ("" = not in a pod).
  std::string pod_name;
  // --on-sigterm auto|restart|leave (or $PYLON_ON_SIGTERM): restart keeps the addresses and the
  // lease for the next agent; leave withdraws them; auto decides (lifecycle.h DecideStop).
  SigtermMode on_sigterm = SigtermMode::kAuto;
  // --drain-timeout DURATION (0 = off): how long the node that takes an address over in a planned
  // move (its holder excluded from load balancing, still alive) forwards the established TCP
  // flows through it to that holder (drain.h; docs/failover.md "Lifecycle").
  Duration drain_timeout = std::chrono::minutes(2);
  // --takeover-check on|off: the successor's wire check before taking over from a silent holder
  // (takeover.h; docs/failover.md "A killed agent").
  bool takeover_check = true;
  // --reannounce-interval: gratuitous ARP / NA for every held local address this often, so
  // switches and neighbours that forgot or mislearned it relearn it. 0 = off (default).
  Duration reannounce_interval{0};
  // --probe-count N (0 = off) and --probe-interval DUR: duplicate-address probes (ARP probe /
  // DAD NS) before an address is announced for the first time (docs/agent.md). Foreign claims on
  // announced addresses are watched whenever probing is on.
  int probe_count = 3;
  Duration probe_interval = std::chrono::milliseconds(80);
  // --conflict-recheck DUR: an address withheld for a conflict is probed again this often.
  Duration conflict_recheck = std::chrono::seconds(30);
  // --probe-ahead on|off (default on, needs probing on), --probe-ahead-rate N (probes started per
  // second at most, default 4), --probe-ahead-refresh DUR (10s): probe the addresses the
  // allocator hands out next in the background (probe_ahead.h).
  bool probe_ahead = true;
  double probe_ahead_rate = 4;
  Duration probe_ahead_refresh = std::chrono::seconds(10);
  // --kube-proxy-check on|off (default on), --kube-proxy-healthz URL, --kube-proxy-check-interval,
  // --kube-proxy-check-timeout, --kube-proxy-fail-count, --kube-proxy-pass-count: this node is
  // eligible only while its kube-proxy passes its health check (kube_proxy_health.h).
  KubeProxyCheckOptions kube_proxy;
  BgpOptions bgp;
};

// The valid lifetime given to announced addresses: --address-lifetime, else the lease duration
// (at least 3 s). With renewals every retry period, an agent that dies silently (SIGKILL, OOM)
// stops holding its addresses about when its peers see its lease expire and take over.
std::chrono::seconds EffectiveAddressLifetime(const AgentOptions& o);

// Applies the variables that no flag stands for to `*o`: PURELB_* (the lease timing) and the
// Pod's identity (PURELB_POD_UID, POD_NAME). An unparsable or inconsistent value is an error
// naming the variable; `*o` then holds what could be applied. The variables behind flags
// ($NODE_NAME, PYLON_HEARTBEAT_*, PYLON_ON_SIGTERM, PYLON_QUIET_LEASE) are the flags' own
// (CLI11's envname, read while the command line is parsed).
Status ApplyAgentEnv(const EnvLookup& env, AgentOptions* o);

// The flags of `pylon agent`, parsed into `*o` (its current values are the defaults). Each flag
// checks its own value; ValidateAgentOptions checks what spans flags and the environment.
std::unique_ptr<CLI::App> NewAgentCommand(AgentOptions* o);

// After parsing: a node name (flag or $NODE_NAME), the kube-proxy check and heartbeat settings.
Status ValidateAgentOptions(const AgentOptions& o);

// The three above, silently: the options `pylon agent <args>` runs with, or the one-line error it
// reports. `args` are the flags after "agent"; --help is an error ("help requested").
// The environment is the process's.
Result<AgentOptions> ParseAgentOptions(const std::vector<std::string>& args);

}  // namespace pylon::agent
