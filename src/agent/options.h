// Command-line flags and environment of `pylon agent`. Pure parsing; no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/garp.h"
#include "agent/kube_proxy_health.h"
#include "agent/lease_health.h"
#include "agent/types.h"
#include "common/result.h"
#include "heartbeat/config.h"

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
  std::string metrics_host = "0.0.0.0";  // --metrics-addr host:port ("" port 0 = disabled)
  std::uint16_t metrics_port = 7473;
  bool metrics_enabled = true;
  EtpLocalMode etp_mode = EtpLocalMode::kReset;           // --etp-local=reset|elect
  std::string state_file = "/run/pylon/agent-addresses";  // --state-file ("" = none)
  std::optional<Duration> address_lifetime;  // --address-lifetime; default: see Effective...
  GarpOptions garp;                          // --garp-count, --garp-interval
  std::string log_level = "info";            // --log-level
  LeaseTiming timing;                        // PURELB_* environment variables
  heartbeat::HeartbeatConfig heartbeat;      // --heartbeat-*, PYLON_HEARTBEAT_* (off: no key)
  // $PURELB_POD_UID: the node lease's purelb.io/instance ("" = none).
  std::string pod_uid;
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
  // --kube-proxy-check on|off (default on), --kube-proxy-healthz URL, --kube-proxy-check-interval,
  // --kube-proxy-check-timeout, --kube-proxy-fail-count, --kube-proxy-pass-count: this node is
  // eligible only while its kube-proxy passes its health check (kube_proxy_health.h).
  KubeProxyCheckOptions kube_proxy;
  BgpOptions bgp;
  bool help = false;
};

// The valid lifetime given to announced addresses: --address-lifetime, else the lease duration
// (at least 3 s). With renewals every retry period, an agent that dies silently (SIGKILL, OOM)
// stops holding its addresses about when its peers see its lease expire and take over.
std::chrono::seconds EffectiveAddressLifetime(const AgentOptions& o);

using EnvFn = std::function<std::optional<std::string>(const std::string&)>;

// args: the flags after "agent". "--flag value" and "--flag=value" both work.
Result<AgentOptions> ParseAgentOptions(const std::vector<std::string>& args, const EnvFn& env);

const char* AgentUsage();
// AgentUsage() followed by the heartbeat flags (heartbeat::HeartbeatUsage()).
std::string AgentUsageWithHeartbeat();

}  // namespace pylon::agent
