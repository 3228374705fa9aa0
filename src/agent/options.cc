#include "agent/options.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

#include "common/cli.h"
#include "common/duration.h"

namespace pylon::agent {

std::chrono::seconds EffectiveAddressLifetime(const AgentOptions& o) {
  Duration d = o.address_lifetime ? *o.address_lifetime : o.timing.lease_duration;
  auto s = std::chrono::ceil<std::chrono::seconds>(d);
  return std::max(s, std::chrono::seconds(3));
}

namespace {

// A flag that takes one of `choices` (the first is the default shown in --help).
CLI::Option* AddChoice(cli::App& app, const std::string& flag,
                       std::function<void(const std::string&)> set, const std::string& choices,
                       const std::string& shown, const std::string& description) {
  auto* opt = app.add_option_function<std::string>(flag, std::move(set), description);
  opt->type_name(choices)->default_str(shown);
  return opt;
}

// An on|off flag setting `*target` (its value when the flag is absent is the default shown).
CLI::Option* AddOnOff(cli::App& app, const std::string& flag, bool* target,
                      const std::string& description) {
  return AddChoice(
      app, flag,
      [flag, target](const std::string& v) {
        if (v != "on" && v != "off") {
          throw CLI::ValidationError(flag, "want on or off, got \"" + v + "\"");
        }
        *target = v == "on";
      },
      "on|off", *target ? "on" : "off", description);
}

// The cluster and this node: API access, names, /metrics, ETP Local, the address record and
// lifetime.
void AddClusterFlags(cli::App& app, AgentOptions* o) {
  app.add_option("--kubeconfig", o->kubeconfig,
                 "kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
      ->type_name("FILE");
  app.add_option("--node-name", o->node_name, "this node")->type_name("NAME")->envname("NODE_NAME");
  app.add_option("--namespace", o->ns, "install namespace")->type_name("NS");
  app.add_option_function<std::string>(
         "--metrics-addr",
         [o](const std::string& v) {
           o->metrics_enabled = !v.empty();
           if (v.empty()) return;
           auto hp = cli::ParseListenAddress(v);
           if (!hp) throw CLI::ValidationError("--metrics-addr", hp.error().message());
           o->metrics_host = hp->host;
           o->metrics_port = hp->port;
         },
         "/metrics, /healthz, /readyz (\":PORT\" = 0.0.0.0:PORT, \"\" = off)")
      ->type_name("HOST:PORT")
      ->default_str(o->metrics_host + ":" + std::to_string(o->metrics_port));
  AddChoice(
      app, "--etp-local",
      [o](const std::string& v) {
        if (v != "reset" && v != "elect") {
          throw CLI::ValidationError("--etp-local", "want reset or elect, got \"" + v + "\"");
        }
        o->etp_mode = v == "elect" ? EtpLocalMode::kElect : EtpLocalMode::kReset;
      },
      "reset|elect", o->etp_mode == EtpLocalMode::kElect ? "elect" : "reset",
      "externalTrafficPolicy Local on local addresses: reset the Service to Cluster (as PureLB) "
      "or elect among the nodes with a ready local endpoint");
  app.add_option("--state-file", o->state_file,
                 "record of the addresses this agent added (\"\" = IFA_PROTO only)")
      ->type_name("PATH");
  app.add_option_function<std::string>(
         "--address-lifetime",
         [o](const std::string& v) {
           auto d = ParseGoDuration(v);
           if (!d) throw CLI::ValidationError("--address-lifetime", d.error().message());
           if (*d <= Duration::zero()) {
             throw CLI::ValidationError("--address-lifetime", "must be positive");
           }
           o->address_lifetime = *d;
         },
         "valid lifetime of announced addresses (default: the lease duration)")
      ->type_name("DURATION");
}

// SIGTERM, the quiet lease and the takeover check.
void AddLifecycleFlags(cli::App& app, AgentOptions* o) {
  AddChoice(
      app, "--on-sigterm",
      [o](const std::string& v) {
        auto mode = ParseSigtermMode(v);
        if (!mode) {
          throw CLI::ValidationError("--on-sigterm",
                                     "want auto, restart or leave, got \"" + v + "\"");
        }
        o->on_sigterm = *mode;
      },
      "auto|restart|leave", std::string(SigtermModeName(o->on_sigterm)),
      "on SIGTERM: keep the addresses for the next agent (restart), withdraw them (leave), or "
      "decide from the Node, the Pod ($POD_NAME) and its DaemonSet (auto)")
      ->envname("PYLON_ON_SIGTERM");
  AddOnOff(app, "--quiet-lease", &o->quiet_lease.enabled,
           "while heartbeats carry this node's liveness, renew the node lease every 10s with a 40s "
           "duration instead of the PURELB_* timing")
      ->envname("PYLON_QUIET_LEASE");
  AddOnOff(
      app, "--takeover-check", &o->takeover_check,
      "before taking over from a silent node, ask the wire (ARP / NS, its kube-proxy /healthz) "
      "whether it still answers, and leave the address there until it stops");
  app.add_option_function<std::string>(
         "--drain-timeout",
         [o](const std::string& v) {
           auto d = ParseGoDuration(v);
           if (!d) throw CLI::ValidationError("--drain-timeout", d.error().message());
           if (*d < Duration::zero()) {
             throw CLI::ValidationError("--drain-timeout", "must not be negative");
           }
           o->drain_timeout = *d;
         },
         "after a planned move (the holder excluded from load balancing), forward the "
         "established TCP flows to the previous holder this long (0 = off; default 2m)")
      ->type_name("DURATION");
}

// Gratuitous ARP / NA, duplicate-address probes and probe ahead.
void AddAnnounceFlags(cli::App& app, AgentOptions* o) {
  app.add_option("--garp-count", o->garp.count, "gratuitous ARP / NA per takeover")
      ->type_name("N")
      ->check(CLI::Range(1, 20));
  cli::AddDuration(app, "--garp-interval", &o->garp.interval, "spacing of gratuitous ARP / NA");
  cli::AddDuration(app, "--reannounce-interval", &o->reannounce_interval,
                   "re-send gratuitous ARP / NA for held local addresses this often (0 = off, "
                   "else at least 1s)",
                   /*allow_zero=*/true);
  app.add_option("--probe-count", o->probe_count,
                 "ARP probes / DAD solicitations before an address is announced for the first "
                 "time (0 = no probing and no watching for foreign claims)")
      ->type_name("N")
      ->check(CLI::Range(0, 10));
  cli::AddDuration(app, "--probe-interval", &o->probe_interval, "spacing of the probes (10ms..2s)");
  cli::AddDuration(app, "--conflict-recheck", &o->conflict_recheck,
                   "probe an address withheld for a conflict again this often (1s..24h)");
  AddOnOff(app, "--probe-ahead", &o->probe_ahead,
           "probe the addresses the allocator hands out next in the background, so a Service's "
           "address is announced at once (default on)");
  app.add_option("--probe-ahead-rate", o->probe_ahead_rate,
                 "background probes started per second at most, per node")
      ->type_name("N")
      ->check(CLI::Range(0.1, 100.0));
  cli::AddDuration(app, "--probe-ahead-refresh", &o->probe_ahead_refresh,
                   "probe each address kept pre-probed again this often (1s..10m)");
}

// This node's kube-proxy health check (kube_proxy_health.h).
void AddKubeProxyFlags(cli::App& app, AgentOptions* o) {
  AddOnOff(app, "--kube-proxy-check", &o->kube_proxy.enabled,
           "leave the election while this node's kube-proxy fails its health check (off when "
           "kube-proxy is replaced, e.g. by the CNI)");
  app.add_option("--kube-proxy-healthz", o->kube_proxy.url, "kube-proxy's health URL")
      ->type_name("URL");
  cli::AddDuration(app, "--kube-proxy-check-interval", &o->kube_proxy.interval,
                   "check kube-proxy this often");
  cli::AddDuration(app, "--kube-proxy-check-timeout", &o->kube_proxy.timeout,
                   "per-request timeout of the check");
  app.add_option("--kube-proxy-fail-count", o->kube_proxy.fail_count,
                 "consecutive failures to leave the election")
      ->type_name("N");
  app.add_option("--kube-proxy-pass-count", o->kube_proxy.pass_count,
                 "consecutive passes to return")
      ->type_name("N");
}

// BGP over BIRD 2 (BgpOptions).
void AddBgpFlags(cli::App& app, AgentOptions* o) {
  app.add_option("--bird-socket", o->bgp.bird_socket,
                 "announce kube-lb0 over BGP: drive the BIRD 2 daemon on this control socket "
                 "(default: off; docs/bgp.md)")
      ->type_name("PATH");
  app.add_option("--bird-config", o->bgp.bird_config,
                 "the configuration file BIRD reads, rendered by the agent")
      ->type_name("PATH")
      ->check(cli::NonEmpty());
  cli::AddDuration(app, "--bgp-status-interval", &o->bgp.status_interval,
                   "read sessions into BGPPeer status this often");
  cli::AddDuration(app, "--bgp-drain-timeout", &o->bgp.drain_timeout,
                   "on shutdown, wait at most this long for the routes to be withdrawn",
                   /*allow_zero=*/true);
  cli::AddDuration(app, "--bgp-drain-margin", &o->bgp.drain_margin,
                   "then this long for the router to update", /*allow_zero=*/true);
}

// --heartbeat-* (docs/failover.md), each with its PYLON_HEARTBEAT_* variable; the ranges that
// span settings are heartbeat::ValidateHeartbeatConfig's.
void AddHeartbeatFlags(cli::App& app, AgentOptions* o) {
  heartbeat::HeartbeatConfig& hb = o->heartbeat;
  app.add_option("--heartbeat-key-file", hb.key_file,
                 "shared key(s), one per line (a mounted Secret); wins over --heartbeat-key-secret")
      ->type_name("FILE")
      ->envname("PYLON_HEARTBEAT_KEY_FILE")
      ->check(cli::NonEmpty());
  app.add_option("--heartbeat-key-secret", hb.key_secret,
                 "the Secret (in --namespace) holding the key in its entry `key`, created with a "
                 "random key when absent; empty and no key file: heartbeats off, failover follows "
                 "the leases alone")
      ->type_name("NAME")
      ->envname("PYLON_HEARTBEAT_KEY_SECRET");
  cli::AddDuration(app, "--heartbeat-interval", &hb.interval, "heartbeat period (10ms..10s)")
      ->envname("PYLON_HEARTBEAT_INTERVAL");
  cli::AddInteger(app, "--heartbeat-miss-count", &hb.miss_count, 2, 20,
                  "missed intervals before a peer is dead")
      ->envname("PYLON_HEARTBEAT_MISS_COUNT");
  cli::AddInteger<std::uint16_t>(app, "--heartbeat-port", &hb.port, 1, 65535, "UDP port")
      ->type_name("PORT")
      ->envname("PYLON_HEARTBEAT_PORT");
  app.add_option("--heartbeat-interface", hb.interface,
                 "interface to send on (default: the announcing interface)")
      ->type_name("IF")
      ->envname("PYLON_HEARTBEAT_INTERFACE");
}

}  // namespace

Status ApplyAgentEnv(const EnvLookup& env, AgentOptions* o) {
  auto timing = LeaseTimingFromEnv(env);
  if (!timing) return Fail(timing.error());
  o->timing = *timing;
  o->pod_uid = env("PURELB_POD_UID").value_or("");
  o->pod_name = env("POD_NAME").value_or("");
  return Ok();
}

std::unique_ptr<cli::App> NewAgentCommand(AgentOptions* o) {
  auto app = cli::NewCommand(
      "pylon agent",
      "The node agent: elects the node that announces each address, adds it to the interface and "
      "sends gratuitous ARP / NA (a DaemonSet; NET_ADMIN and NET_RAW).\n"
      "Environment: the variable after a flag (Env:NAME) is that flag's default; without flags,\n"
      "PURELB_LEASE_DURATION (10s), PURELB_RENEW_DEADLINE (7s), PURELB_RETRY_PERIOD (2s) in Go\n"
      "duration syntax, and the Pod's PURELB_POD_UID and POD_NAME.");
  AddClusterFlags(*app, o);
  AddLifecycleFlags(*app, o);
  AddAnnounceFlags(*app, o);
  AddKubeProxyFlags(*app, o);
  AddBgpFlags(*app, o);
  AddHeartbeatFlags(*app, o);
  cli::AddLogLevel(*app, &o->log_level);
  return app;
}

Status ValidateAgentOptions(const AgentOptions& o) {
  if (o.node_name.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "--node-name (or $NODE_NAME) is required");
  }
  if (o.ns.empty()) return Fail(ErrorCode::kInvalidArgument, "--namespace must not be empty");
  if (o.reannounce_interval > Duration::zero() && o.reannounce_interval < std::chrono::seconds(1)) {
    return Fail(ErrorCode::kInvalidArgument,
                "--reannounce-interval must be 0 (off) or at least 1s");
  }
  if (o.probe_interval < std::chrono::milliseconds(10) ||
      o.probe_interval > std::chrono::seconds(2)) {
    return Fail(ErrorCode::kInvalidArgument, "--probe-interval: want 10ms..2s");
  }
  if (o.conflict_recheck < std::chrono::seconds(1) || o.conflict_recheck > std::chrono::hours(24)) {
    return Fail(ErrorCode::kInvalidArgument, "--conflict-recheck: want 1s..24h");
  }
  if (o.probe_ahead_refresh < std::chrono::seconds(1) ||
      o.probe_ahead_refresh > std::chrono::minutes(10)) {
    return Fail(ErrorCode::kInvalidArgument, "--probe-ahead-refresh: want 1s..10m");
  }
  if (auto st = ValidateKubeProxyCheck(o.kube_proxy); !st) return Fail(st.error());
  return heartbeat::ValidateHeartbeatConfig(o.heartbeat);
}

Result<AgentOptions> ParseAgentOptions(const std::vector<std::string>& args) {
  AgentOptions o;
  const Status from_env = ApplyAgentEnv(ProcessEnv, &o);
  auto app = NewAgentCommand(&o);
  auto parsed = cli::ParseArgs(*app, args);
  if (!parsed) return Fail(parsed.error());
  if (!*parsed) return Fail(ErrorCode::kInvalidArgument, "help requested");
  if (!from_env) return Fail(from_env.error());
  if (auto st = ValidateAgentOptions(o); !st) return Fail(st.error());
  return o;
}

}  // namespace pylon::agent
