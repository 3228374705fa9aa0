// The agent's heartbeats: the key, the service on the announcing interface, the endpoints it
// publishes in the node lease, its metrics.
#include <algorithm>
#include <map>
#include <utility>

#include "agent/agent.h"
#include "agent/agent_metrics.h"
#include "agent/heartbeat_key.h"
#include "common/log.h"
#include "heartbeat/local_endpoints.h"
#include "k8s/retry.h"

namespace pylon::agent {

std::string Agent::HeartbeatInterface() const {
  if (!options_.heartbeat.interface.empty()) return options_.heartbeat.interface;
  return network_.interfaces.empty() ? std::string() : network_.interfaces.front().name;
}

Status Agent::StartHeartbeat(Duration api_timeout) {
  const heartbeat::HeartbeatConfig& cfg = options_.heartbeat;
  Result<heartbeat::KeyRing> keys = Fail(ErrorCode::kInternal, "no key source");
  std::string key_source;
  if (!cfg.key_file.empty()) {
    keys = heartbeat::LoadKeyRingFile(cfg.key_file);
    if (!keys) return Fail(keys.error().Wrap("--heartbeat-key-file " + cfg.key_file));
    key_source = "file " + cfg.key_file;
  } else {
    if (d_.client == nullptr) return Fail(ErrorCode::kInternal, "heartbeats: no API client");
    // The API may be down while the agent (re)starts: wait for it as long as the informers
    // would (an error for what waiting cannot fix: RBAC, a malformed Secret).
    Result<std::string> text = Fail(ErrorCode::kInternal, "not read");
    k8s::RetryOptions ro;
    ro.initial = std::chrono::milliseconds(250);
    ro.factor = 2.0;
    ro.cap = std::chrono::seconds(5);
    ro.steps = std::max(1, static_cast<int>(api_timeout / ro.cap) + 5);
    Status read = k8s::RetryOnError(
        ro, [](const Error& e) { return e.code() == ErrorCode::kUnavailable; },
        [&]() -> Status {
          text = EnsureHeartbeatKey(*d_.client, options_.ns, cfg.key_secret,
                                    [] { return NewHeartbeatKeyText(SystemRandomBytes); });
          if (text) return Ok();
          log::Warn("heartbeat key not read yet", {{"error", text.error().message()}});
          return Fail(text.error());
        });
    if (!read) return Fail(read.error().Wrap("heartbeats"));  // says when the retries ran out
    const std::string where = "Secret " + options_.ns + "/" + cfg.key_secret;
    keys = heartbeat::KeyRing::Parse(*text, where);
    if (!keys) return Fail(keys.error().Wrap("heartbeats"));
    key_source = where;
  }
  hb_interface_ = HeartbeatInterface();
  if (hb_interface_.empty()) {
    return Fail(ErrorCode::kUnavailable,
                "heartbeats: no announcing interface found (set --heartbeat-interface)");
  }
  heartbeat::ServiceDeps deps;
  deps.clock = d_.clock;
  if (d_.open_netlink) {
    auto nl = d_.open_netlink();
    if (!nl) return Fail(nl.error().Wrap("heartbeats: netlink"));
    deps.netlink = std::move(*nl);
  }
  heartbeat::ServiceOptions so{election::NodeName(options_.node_name), cfg, hb_interface_, {}};
  auto hb = heartbeat::HeartbeatService::Create(so, std::move(*keys), std::move(deps),
                                                [this] { Wake(false); });
  if (!hb) return Fail(hb.error().Wrap("heartbeats"));
  if (auto st = (*hb)->Start(); !st) return Fail(st.error().Wrap("heartbeats"));
  hb_ = std::move(*hb);
  PublishHeartbeatEndpoints();
  log::Info("heartbeats on",
            {{"key", key_source},
             {"interface", hb_interface_},
             {"port", std::to_string(hb_->port())},
             {"interval_ms",
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(cfg.interval).count())},
             {"miss_count", std::to_string(cfg.miss_count)}});
  return Ok();
}

void Agent::PublishHeartbeatEndpoints() {
  if (!hb_) return;
  auto link = d_.netlink->GetLink(hb_interface_);
  if (!link) return;
  auto addrs = d_.netlink->ListAddresses(std::nullopt);
  if (!addrs) return;
  std::vector<net::IpAddress> ours;
  for (const auto& o : sync_->owned()) ours.push_back(o.address.address());
  std::optional<std::uint8_t> proto;
  if (d_.netlink->SupportsAddressProto()) proto = netlink::kPylonAddressProto;
  auto ips = heartbeat::EndpointAddresses(*addrs, link->index, proto, ours);
  lease_->SetAnnotation(std::string(heartbeat::kHeartbeatAnnotation),
                        heartbeat::FormatEndpoints(hb_->LocalEndpoints(ips)));
  lease_->SetAnnotation(std::string(heartbeat::kRingAnnotation),
                        std::string(heartbeat::kRingVersion));
}

void Agent::ExportHeartbeatMetrics(bool healthy) {
  d_.metrics->Set(kMetricHeartbeatHealthy, {}, healthy ? 1 : 0);
  std::map<std::string, int> by_state;
  for (auto st : heartbeat::kPeerStates) {
    by_state[heartbeat::PeerStateName(st)] = 0;
  }
  for (const auto& p : hb_->Peers()) ++by_state[heartbeat::PeerStateName(p.state)];
  const heartbeat::HeartbeatStats st = hb_->stats();
  auto add = [&](const char* family, const char* label, const char* value, std::uint64_t now_v,
                 std::uint64_t& seen) {
    if (now_v > seen) d_.metrics->Add(family, {{label, value}}, static_cast<double>(now_v - seen));
    seen = now_v;
  };
  add(kMetricHeartbeatDatagrams, "direction", "sent", st.sent, hb_seen_.sent);
  add(kMetricHeartbeatDatagrams, "direction", "received", st.received, hb_seen_.received);
  add(kMetricHeartbeatReports, "event", "made", st.reports_made, hb_seen_.reports_made);
  add(kMetricHeartbeatReports, "event", "sent", st.reports_sent, hb_seen_.reports_sent);
  add(kMetricHeartbeatReports, "event", "received", st.reports_received, hb_seen_.reports_received);
  for (const auto& [state, n] : by_state) {
    d_.metrics->Set(kMetricHeartbeatPeers, {{"state", state}}, n);
  }
}

}  // namespace pylon::agent
