// The agent's inputs: node leases into the Membership, the informers' caches into the planner's
// inputs, the governing LBNodeAgent, and what peers' wire checks need.
#include "agent/agent_inputs.h"

#include <map>
#include <utility>

#include "agent/agent.h"
#include "agent/agent_metrics.h"
#include "agent/node_agent_policy.h"
#include "common/log.h"
#include "common/object_key.h"
#include "election/macs_annotation.h"
#include "election/node_name.h"
#include "election/subnets_annotation.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "model/endpoints.h"
#include "model/probe_ahead.h"
#include "model/service.h"

namespace pylon::agent {

namespace {

// This node's kube-proxy URL, `own`, split at its host: scheme, port and path ("" when it has no
// port).
struct UrlParts {
  std::string scheme, port, path;
};
std::optional<UrlParts> SplitOwnUrl(const std::string& own) {
  const auto scheme_end = own.find("://");
  if (scheme_end == std::string::npos) return std::nullopt;
  const auto path_at = own.find('/', scheme_end + 3);
  const std::string hostport = own.substr(
      scheme_end + 3, path_at == std::string::npos ? std::string::npos : path_at - scheme_end - 3);
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos || hostport.find(']', colon) != std::string::npos) {
    return std::nullopt;
  }
  return UrlParts{own.substr(0, scheme_end), hostport.substr(colon + 1),
                  path_at == std::string::npos ? "" : own.substr(path_at)};
}

}  // namespace

std::vector<net::IpAddress> NodeInternalIps(const Json& node) {
  std::vector<net::IpAddress> out;
  const Json* addrs = Find(node, {"status", "addresses"});
  if (addrs == nullptr || !addrs->is_array()) return out;
  for (const auto& a : *addrs) {
    if (!a.is_object() || FindString(a, {"type"}).value_or("") != "InternalIP") continue;
    if (auto ip = net::IpAddress::Parse(FindString(a, {"address"}).value_or(""))) {
      out.push_back(*ip);
    }
  }
  return out;
}

std::string KubeProxyUrlAt(const std::string& own_url, const Json& node) {
  const auto parts = SplitOwnUrl(own_url);
  if (!parts) return "";
  std::optional<net::IpAddress> v4, v6;
  for (const auto& ip : NodeInternalIps(node)) {
    if (ip.is_v4() && !v4) v4 = ip;
    if (!ip.is_v4() && !v6) v6 = ip;
  }
  if (v4) return parts->scheme + "://" + v4->ToString() + ":" + parts->port + parts->path;
  if (v6) return parts->scheme + "://[" + v6->ToString() + "]:" + parts->port + parts->path;
  return "";
}

std::vector<net::IpAddress> ProbeAheadCandidates(const std::vector<Json>& configs) {
  std::vector<net::IpAddress> out;
  for (const auto& g : configs) {
    for (const char* fam : {"ipv4", "ipv6"}) {
      const Json* list = Find(g, {"status", "probeAhead", fam});
      if (list == nullptr || !list->is_array()) continue;
      for (const auto& item : *list) {
        if (!item.is_string()) continue;
        if (auto ip = net::IpAddress::Parse(item.get<std::string>())) out.push_back(*ip);
      }
    }
  }
  return out;
}

void Agent::OnLease(const Json& obj, bool deleted) {
  auto node = election::NodeFromLeaseName(k8s::Name(obj));
  if (!node) return;
  election::LeaseObservation o;
  o.node = *node;
  o.deleted = deleted;
  o.holder_identity = FindString(obj, {"spec", "holderIdentity"}).value_or("");
  o.lease_duration_seconds = FindInt(obj, {"spec", "leaseDurationSeconds"});
  o.renew_time = FindString(obj, {"spec", "renewTime"}).value_or("");
  o.subnets_annotation = k8s::Annotation(obj, election::kSubnetsAnnotation);
  o.macs_annotation = k8s::Annotation(obj, election::kMacsAnnotation);
  const bool restarting = !deleted && !k8s::Annotation(obj, kRestartingAnnotation).empty();
  const bool heartbeat_annotated =
      !deleted && !k8s::Annotation(obj, heartbeat::kHeartbeatAnnotation).empty();
  if (hb_ && node->str() != options_.node_name) {
    auto issues = hb_->ObservePeerLease(
        *node, k8s::Annotation(obj, heartbeat::kHeartbeatAnnotation), deleted,
        k8s::Annotation(obj, heartbeat::kRingAnnotation) == heartbeat::kRingVersion);
    for (const auto& issue : issues) {
      log::Warn("heartbeat annotation", {{"node", node->str()}, {"issue", issue}});
    }
  }
  std::set<net::IpAddress> probed_free;
  if (!deleted && node->str() != options_.node_name) {
    for (const auto& e :
         model::ParseProbeAhead(k8s::Annotation(obj, model::kAnnProbeAhead)).entries) {
      if (!e.taken) probed_free.insert(e.address);
    }
  }
  std::vector<net::IpAddress> addresses;
  if (!deleted && node->str() != options_.node_name) {
    for (const auto& e :
         heartbeat::ParseEndpoints(k8s::Annotation(obj, heartbeat::kHeartbeatAnnotation))
             .endpoints) {
      addresses.push_back(e.address);
    }
  }
  MutexLock lock(mu_);
  if (addresses.empty()) {
    peer_addresses_.erase(*node);
  } else {
    peer_addresses_[*node] = std::move(addresses);
  }
  if (restarting) {
    restarting_.insert(*node);
  } else {
    restarting_.erase(*node);
  }
  if (heartbeat_annotated) {
    heartbeat_annotated_.insert(*node);
  } else {
    heartbeat_annotated_.erase(*node);
  }
  if (probed_free.empty()) {
    peer_probed_free_.erase(node->str());
  } else {
    peer_probed_free_[node->str()] = std::move(probed_free);
  }
  auto outcome = membership_.Observe(o, d_.clock->Now());
  for (const auto& issue : outcome.issues) {
    log::Warn("node lease", {{"node", node->str()}, {"issue", issue}});
  }
  if (outcome.membership_changed()) {
    log::Info("membership changed", {{"node", node->str()},
                                     {"joined", outcome.joined ? "true" : "false"},
                                     {"left", outcome.left ? "true" : "false"}});
  }
  wake_ = true;
  cv_.notify_all();
}

void Agent::RefreshInputs() {
  // Config: every ServiceGroup and LoadBalancerClass; the last valid version stays in force.
  std::vector<Json> candidates = groups_->store().List();
  for (auto& c : classes_->store().List()) {
    if (!c.contains("kind")) c["kind"] = "LoadBalancerClass";
    candidates.push_back(std::move(c));
  }
  for (auto& c : candidates) {
    if (!c.contains("kind")) c["kind"] = "ServiceGroup";
  }
  config_ = config::ValidateConfig(candidates, config_).config;

  RefreshNodeAgent();

  // Probe ahead: the next addresses of every ServiceGroup and LoadBalancerClass, as the
  // allocator publishes them.
  probe_ahead_candidates_.clear();
  if (ahead_prober_) probe_ahead_candidates_ = ProbeAheadCandidates(candidates);

  // EndpointSlices by Service, read only for Services that need them: ETP Local, and
  // purelb.io/node-affinity: service-endpoints.
  std::map<std::string, std::vector<model::EndpointSlice>> slices;
  bool slices_loaded = false;
  services_in_.clear();
  for (const auto& obj : services_->store().List()) {
    auto svc = model::ParseService(obj);
    if (!svc) {
      log::Debug("skipping a Service", {{"error", svc.error().message()}});
      continue;
    }
    ServiceInput in;
    in.owner = model::SelectOwner(*svc);
    if (in.owner.owner == model::Owner::kNone) continue;
    in.service = std::move(*svc);
    if (in.service.external_traffic_policy == "Local" || in.service.EndpointAffinity()) {
      if (!slices_loaded) {
        for (const auto& so : slices_->store().List()) {
          auto es = model::ParseEndpointSlice(so);
          if (es && !es->service_name.empty()) {
            slices[ObjectKey{es->ns, es->service_name}.String()].push_back(std::move(*es));
          }
        }
        slices_loaded = true;
      }
      if (auto it = slices.find(in.service.Key()); it != slices.end()) in.slices = it->second;
    }
    services_in_.push_back(std::move(in));
  }
  // Nodes leaving load balancing (LeavingLoadBalancing: deleted, excluded by label or taint,
  // shutting down) may not win anything.
  excluded_nodes_.clear();
  for (const auto& obj : nodes_->store().List()) {
    if (LeavingLoadBalancing(ParseNodeFacts(&obj))) {
      excluded_nodes_.push_back(NodeName(k8s::Name(obj)));
    }
  }
  peer_kube_proxy_.clear();
  for (const auto& obj : nodes_->store().List()) {
    if (k8s::Name(obj) == options_.node_name) continue;
    std::string url = PeerKubeProxyUrl(obj);
    if (!url.empty()) peer_kube_proxy_[NodeName(k8s::Name(obj))] = std::move(url);
  }
  l2_in_.clear();
  for (const auto& obj : l2advs_->store().List()) {
    auto l2 = ParseL2Advertisement(obj);
    if (l2) l2_in_.push_back(std::move(*l2));
  }
}

void Agent::NodeObjectEvent(const std::optional<Json>& node, bool warning,
                            const std::string& reason, const std::string& message) {
  k8s::ObjectReference ref{"Node", "", options_.node_name, "", "v1"};
  if (node) ref = k8s::ObjectReference::For(k8s::resources::Nodes(), *node);
  d_.recorder->Event(ref, warning ? k8s::EventLevel::kWarning : k8s::EventLevel::kNormal, reason,
                     message);
}

void Agent::RefreshNodeAgent() {
  const auto agents = node_agents_->store().List();
  const auto node = nodes_->store().Get("", options_.node_name);
  NodeAgentChoice choice =
      ChooseNodeAgent(agents, node ? &*node : nullptr, options_.node_name, options_.ns);
  if (d_.metrics && choice.state != selector_state_reported_) {
    selector_state_reported_ = choice.state;
    for (auto st : kNodeAgentStates) {
      d_.metrics->Set(kMetricSelectorState, {{"state", std::string(NodeAgentStateName(st))}},
                      st == choice.state ? 1 : 0);
    }
  }

  // Report once per distinct set of notes and verdict (this runs on every input change).
  std::vector<std::string> reported;
  for (const auto& n : choice.notes) reported.push_back(n.reason + ": " + n.message);
  if (choice.config) {
    for (const auto& w : choice.config->warnings) reported.push_back("warning: " + w);
  }
  reported.push_back(std::string(NodeAgentStateName(choice.state)) + ": " +
                     (choice.config ? choice.config->meta.key.ToString() : choice.why));
  if (reported != node_agent_reported_) {
    for (const auto& n : choice.notes) {
      log::Warn("LBNodeAgent", {{"reason", n.reason}, {"message", n.message}});
      d_.recorder->Event(
          k8s::ObjectReference::For(k8s::resources::LBNodeAgents(), agents[n.object]),
          k8s::EventLevel::kWarning, n.reason, n.message);
    }
    if (choice.config) {
      for (const auto& w : choice.config->warnings) {
        log::Warn("LBNodeAgent setting adjusted",
                  {{"lbnodeagent", choice.config->meta.key.ToString()}, {"warning", w}});
      }
    }
    if (choice.state == NodeAgentState::kDeselected) {
      log::Warn("node deselected", {{"why", choice.why}});
      NodeObjectEvent(node, true, "LBNodeAgentDeselected", choice.why);
    } else if (choice.state == NodeAgentState::kInvalid) {
      log::Warn("no usable LBNodeAgent", {{"why", choice.why}});
      NodeObjectEvent(node, true, "LBNodeAgentInvalid", choice.why);
    } else {
      log::Info("LBNodeAgent", {{"state", std::string(NodeAgentStateName(choice.state))},
                                {"lbnodeagent", choice.config ? choice.config->meta.key.ToString()
                                                              : std::string("none: defaults")}});
    }
    node_agent_reported_ = std::move(reported);
  }

  const config::NodeAgentConfig* cfg = choice.config ? &*choice.config : nullptr;
  const bool network_changed =
      choice.state != node_agent_state_ || choice.config.has_value() != node_agent_.has_value() ||
      (cfg && (cfg->local_interface != node_agent_->local_interface ||
               cfg->interfaces != node_agent_->interfaces ||
               cfg->external_interface != node_agent_->external_interface));
  if (network_changed) last_discovery_.reset();
  garp_.set_options(GarpOptionsFor(options_.garp, cfg));
  sync_->SetOptions(AddressSyncOptionsFor(options_, cfg));
  node_agent_state_ = choice.state;
  node_agent_ = std::move(choice.config);
}

void Agent::RefreshPeerSigns() {
  peer_signs_.clear();
  for (const auto& [node, url] : peer_kube_proxy_) peer_signs_[node].kube_proxy_url = url;
  for (const auto& node : restarting_) peer_signs_[node].restarting = true;
  for (const auto& [node, addresses] : peer_addresses_) peer_signs_[node].addresses = addresses;
  if (hb_) {
    for (const auto& p : hb_->Peers()) {
      HolderSigns& s = peer_signs_[p.node];
      s.leaving =
          p.state == heartbeat::PeerState::kDead && (p.flags & heartbeat::flags::kLeaving) != 0;
      s.last_alive = p.last_heard;
    }
  }
}

std::string Agent::PeerKubeProxyUrl(const Json& node) const {
  if (!options_.kube_proxy.enabled) return "";
  return KubeProxyUrlAt(options_.kube_proxy.url, node);
}

}  // namespace pylon::agent
