#include "agent/options.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "common/duration.h"

namespace pylon::agent {

const char* AgentUsage() {
  return "usage: pylon agent --node-name NAME [flags]\n"
         "  --kubeconfig FILE        kubeconfig (default: $KUBECONFIG, in-cluster, "
         "~/.kube/config)\n"
         "  --node-name NAME         this node (default: $NODE_NAME)\n"
         "  --namespace NS           install namespace (default purelb-system)\n"
         "  --metrics-addr HOST:PORT /metrics, /healthz, /readyz (default 0.0.0.0:7473; \"\" off)\n"
         "  --etp-local reset|elect  externalTrafficPolicy Local on local addresses: reset the\n"
         "                           Service to Cluster (default, as PureLB) or elect among nodes\n"
         "                           with a ready local endpoint\n"
         "  --state-file PATH        record of addresses this agent added\n"
         "                           (default /run/pylon/agent-addresses; \"\" = IFA_PROTO only)\n"
         "  --address-lifetime DUR   valid lifetime of announced addresses (default: lease "
         "duration)\n"
         "  --garp-count N           gratuitous ARP / NA per takeover (default 3)\n"
         "  --garp-interval DUR      spacing (default 300ms)\n"
         "  --reannounce-interval DUR re-send gratuitous ARP / NA for held local addresses\n"
         "                           this often (default 0 = off)\n"
         "  --probe-count N          ARP probes / DAD solicitations before an address is\n"
         "                           announced for the first time (default 3; 0 = no probing\n"
         "                           and no watching for foreign claims)\n"
         "  --probe-interval DUR     spacing of the probes (default 80ms)\n"
         "  --conflict-recheck DUR   probe an address withheld for a conflict again this often\n"
         "                           (default 30s)\n"
         "  --kube-proxy-check on|off leave the election while this node's kube-proxy fails\n"
         "                           its health check (default on; off when kube-proxy is\n"
         "                           replaced, e.g. by the CNI)\n"
         "  --kube-proxy-healthz URL kube-proxy's health URL\n"
         "                           (default http://127.0.0.1:10256/healthz)\n"
         "  --kube-proxy-check-interval DUR  check this often (default 1s)\n"
         "  --kube-proxy-check-timeout DUR   per-request timeout (default 1s)\n"
         "  --kube-proxy-fail-count N consecutive failures to leave (default 3)\n"
         "  --kube-proxy-pass-count N consecutive passes to return (default 2)\n"
         "  --bird-socket PATH       announce kube-lb0 over BGP: drive the BIRD 2 daemon on\n"
         "                           this control socket (default: off; docs/bgp.md)\n"
         "  --bird-config PATH       the configuration file BIRD reads, rendered by the agent\n"
         "                           (default /run/pylon-bird/bird.conf)\n"
         "  --bgp-status-interval DUR read sessions into BGPPeer status this often (default 5s)\n"
         "  --bgp-drain-timeout DUR  on shutdown, wait at most this long for the routes to be\n"
         "                           withdrawn (default 5s)\n"
         "  --bgp-drain-margin DUR   then this long for the router to update (default 300ms)\n"
         "  --log-level LEVEL        debug|info|warn|error\n"
         "environment: PURELB_LEASE_DURATION (10s), PURELB_RENEW_DEADLINE (7s),\n"
         "             PURELB_RETRY_PERIOD (2s), Go duration syntax\n";
}

std::string AgentUsageWithHeartbeat() {
  return std::string(AgentUsage()) + heartbeat::HeartbeatUsage();
}

std::chrono::seconds EffectiveAddressLifetime(const AgentOptions& o) {
  Duration d = o.address_lifetime ? *o.address_lifetime : o.timing.lease_duration;
  auto s = std::chrono::ceil<std::chrono::seconds>(d);
  return std::max(s, std::chrono::seconds(3));
}

namespace {

Result<std::pair<std::string, std::uint16_t>> ParseHostPort(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "--metrics-addr \"" + text + "\": want HOST:PORT");
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535) {
    return Fail(ErrorCode::kInvalidArgument, "--metrics-addr \"" + text + "\": bad port");
  }
  return std::pair{host, static_cast<std::uint16_t>(port)};
}

}  // namespace

Result<AgentOptions> ParseAgentOptions(const std::vector<std::string>& args, const EnvFn& env) {
  AgentOptions o;
  std::vector<std::pair<std::string, std::string>> heartbeat_flags;  // applied after the env
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (auto eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    if (flag.rfind("--heartbeat-", 0) == 0) {
      std::string hv;
      if (value) {
        hv = *value;
      } else if (i + 1 < args.size()) {
        hv = args[++i];
      } else {
        return Fail(ErrorCode::kInvalidArgument, flag + " needs a value");
      }
      heartbeat_flags.emplace_back(flag.substr(2), hv);
      continue;
    }
    static const char* const kKnown[] = {"--kubeconfig",
                                         "--node-name",
                                         "--namespace",
                                         "--metrics-addr",
                                         "--etp-local",
                                         "--state-file",
                                         "--address-lifetime",
                                         "--garp-interval",
                                         "--garp-count",
                                         "--log-level",
                                         "--reannounce-interval",
                                         "--probe-count",
                                         "--probe-interval",
                                         "--conflict-recheck",
                                         "--kube-proxy-check",
                                         "--kube-proxy-healthz",
                                         "--kube-proxy-check-interval",
                                         "--kube-proxy-check-timeout",
                                         "--kube-proxy-fail-count",
                                         "--kube-proxy-pass-count",
                                         "--bird-socket",
                                         "--bird-config",
                                         "--bgp-status-interval",
                                         "--bgp-drain-timeout",
                                         "--bgp-drain-margin"};
    if (std::find(std::begin(kKnown), std::end(kKnown), flag) == std::end(kKnown)) {
      return Fail(ErrorCode::kInvalidArgument, "unknown flag " + flag);
    }
    auto next = [&]() -> Result<std::string> {
      if (value) return *value;
      if (i + 1 >= args.size()) return Fail(ErrorCode::kInvalidArgument, flag + " needs a value");
      return args[++i];
    };
    auto v = next();
    if (!v) return Fail(v.error());
    if (flag == "--kubeconfig") {
      o.kubeconfig = *v;
    } else if (flag == "--node-name") {
      o.node_name = *v;
    } else if (flag == "--namespace") {
      o.ns = *v;
    } else if (flag == "--metrics-addr") {
      if (v->empty()) {
        o.metrics_enabled = false;
        continue;
      }
      auto hp = ParseHostPort(*v);
      if (!hp) return Fail(hp.error());
      o.metrics_host = hp->first;
      o.metrics_port = hp->second;
    } else if (flag == "--etp-local") {
      if (*v == "reset") {
        o.etp_mode = EtpLocalMode::kReset;
      } else if (*v == "elect") {
        o.etp_mode = EtpLocalMode::kElect;
      } else {
        return Fail(ErrorCode::kInvalidArgument,
                    "--etp-local: want reset or elect, got \"" + *v + "\"");
      }
    } else if (flag == "--state-file") {
      o.state_file = *v;
    } else if (flag == "--address-lifetime" || flag == "--garp-interval") {
      auto d = ParseGoDuration(*v);
      if (!d) return Fail(d.error().Wrap(flag));
      if (*d <= Duration(0)) return Fail(ErrorCode::kInvalidArgument, flag + " must be positive");
      if (flag == "--address-lifetime") {
        o.address_lifetime = *d;
      } else {
        o.garp.interval = *d;
      }
    } else if (flag == "--reannounce-interval") {
      auto d = ParseGoDuration(*v);
      if (!d) return Fail(d.error().Wrap(flag));
      if (*d < Duration(0))
        return Fail(ErrorCode::kInvalidArgument, flag + " must not be negative");
      if (*d > Duration(0) && *d < std::chrono::seconds(1)) {
        return Fail(ErrorCode::kInvalidArgument, flag + " must be 0 (off) or at least 1s");
      }
      o.reannounce_interval = *d;
    } else if (flag == "--garp-count") {
      int n = 0;
      auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
      if (ec != std::errc() || p != v->data() + v->size() || n < 1 || n > 20) {
        return Fail(ErrorCode::kInvalidArgument, "--garp-count: want 1..20, got \"" + *v + "\"");
      }
      o.garp.count = n;
    } else if (flag == "--probe-count") {
      int n = 0;
      auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
      if (ec != std::errc() || p != v->data() + v->size() || n < 0 || n > 10) {
        return Fail(ErrorCode::kInvalidArgument, "--probe-count: want 0..10, got \"" + *v + "\"");
      }
      o.probe_count = n;
    } else if (flag == "--probe-interval" || flag == "--conflict-recheck") {
      auto d = ParseGoDuration(*v);
      if (!d) return Fail(d.error().Wrap(flag));
      const bool probe = flag == "--probe-interval";
      const Duration lo = probe ? Duration(std::chrono::milliseconds(10)) : std::chrono::seconds(1);
      const Duration hi = probe ? Duration(std::chrono::seconds(2)) : std::chrono::hours(24);
      if (*d < lo || *d > hi) {
        return Fail(ErrorCode::kInvalidArgument,
                    flag + (probe ? ": want 10ms..2s" : ": want 1s..24h") + ", got \"" + *v + "\"");
      }
      (probe ? o.probe_interval : o.conflict_recheck) = *d;
    } else if (flag == "--kube-proxy-check") {
      if (*v == "on") {
        o.kube_proxy.enabled = true;
      } else if (*v == "off") {
        o.kube_proxy.enabled = false;
      } else {
        return Fail(ErrorCode::kInvalidArgument,
                    "--kube-proxy-check: want on or off, got \"" + *v + "\"");
      }
    } else if (flag == "--kube-proxy-healthz") {
      o.kube_proxy.url = *v;
    } else if (flag == "--kube-proxy-check-interval" || flag == "--kube-proxy-check-timeout") {
      auto d = ParseGoDuration(*v);
      if (!d) return Fail(d.error().Wrap(flag));
      (flag == "--kube-proxy-check-interval" ? o.kube_proxy.interval : o.kube_proxy.timeout) = *d;
    } else if (flag == "--kube-proxy-fail-count" || flag == "--kube-proxy-pass-count") {
      int n = 0;
      auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
      if (ec != std::errc() || p != v->data() + v->size()) {
        return Fail(ErrorCode::kInvalidArgument, flag + ": want a number, got \"" + *v + "\"");
      }
      (flag == "--kube-proxy-fail-count" ? o.kube_proxy.fail_count : o.kube_proxy.pass_count) = n;
    } else if (flag == "--bird-socket") {
      o.bgp.bird_socket = *v;
    } else if (flag == "--bird-config") {
      if (v->empty()) return Fail(ErrorCode::kInvalidArgument, flag + ": must not be empty");
      o.bgp.bird_config = *v;
    } else if (flag == "--bgp-status-interval" || flag == "--bgp-drain-timeout" ||
               flag == "--bgp-drain-margin") {
      auto d = ParseGoDuration(*v);
      if (!d) return Fail(d.error().Wrap(flag));
      if (d->count() < 0 || (flag == "--bgp-status-interval" && d->count() == 0)) {
        return Fail(ErrorCode::kInvalidArgument, flag + ": must be positive");
      }
      (flag == "--bgp-status-interval" ? o.bgp.status_interval
       : flag == "--bgp-drain-timeout" ? o.bgp.drain_timeout
                                       : o.bgp.drain_margin) = *d;
    } else if (flag == "--log-level") {
      o.log_level = *v;
    } else {
      return Fail(ErrorCode::kInvalidArgument, "unknown flag " + flag);
    }
  }
  if (o.help) return o;
  if (o.node_name.empty()) {
    if (auto n = env("NODE_NAME")) o.node_name = *n;
  }
  if (o.node_name.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "--node-name (or $NODE_NAME) is required");
  }
  if (o.ns.empty()) return Fail(ErrorCode::kInvalidArgument, "--namespace must not be empty");
  if (auto st = ValidateKubeProxyCheck(o.kube_proxy); !st) return Fail(st.error());
  auto timing = LeaseTimingFromEnv(env);
  if (!timing) return Fail(timing.error());
  o.timing = *timing;
  o.pod_uid = env("PURELB_POD_UID").value_or("");
  if (auto st = heartbeat::ApplyHeartbeatEnv(env, o.heartbeat); !st) return Fail(st.error());
  for (const auto& [name, val] : heartbeat_flags) {
    auto applied = heartbeat::ApplyHeartbeatFlag(name, val, o.heartbeat);
    if (!applied) return Fail(applied.error());
    if (!*applied) return Fail(ErrorCode::kInvalidArgument, "unknown flag --" + name);
  }
  if (auto st = heartbeat::ValidateHeartbeatConfig(o.heartbeat); !st) return Fail(st.error());
  return o;
}

}  // namespace pylon::agent
