#include "agent/agent.h"

#include <algorithm>
#include <map>
#include <utility>

#include "agent/agent_metrics.h"
#include "agent/heartbeat_key.h"
#include "agent/network.h"
#include "agent/node_agent_policy.h"
#include "common/log.h"
#include "common/object_key.h"
#include "election/macs_annotation.h"
#include "election/node_name.h"
#include "election/subnets_annotation.h"
#include "heartbeat/local_endpoints.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "k8s/retry.h"
#include "model/endpoints.h"
#include "model/probe_ahead.h"
#include "model/service.h"
#include "netlink/ops.h"
#include "netlink/types.h"

namespace pylon::agent {

namespace {

constexpr Duration kRediscoverEvery = std::chrono::seconds(2);

const k8s::Resource& PodsResource() {
  static const k8s::Resource r{"", "v1", "pods", "Pod", true};
  return r;
}
const k8s::Resource& DaemonSetsResource() {
  static const k8s::Resource r{"apps", "v1", "daemonsets", "DaemonSet", true};
  return r;
}

std::int64_t SteadyNanos(SteadyTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options, AgentDeps deps) {
  auto planner = Planner::Create(PlannerOptions{election::NodeName(options.node_name),
                                                options.etp_mode, election::Stickiness::kSticky});
  if (!planner) return Fail(planner.error());
  return std::unique_ptr<Agent>(new Agent(std::move(options), deps, std::move(*planner)));
}

Agent::Agent(AgentOptions options, AgentDeps deps, Planner planner)
    : options_(std::move(options)),
      d_(deps),
      planner_(std::move(planner)),
      garp_(options_.garp),
      membership_(
          election::MembershipOptions{options_.timing.lease_duration, std::chrono::minutes(5)}) {
  sync_ = std::make_unique<AddressSync>(*d_.netlink, *d_.ownership, *d_.clock,
                                        AddressSyncOptionsFor(options_, nullptr));
  writer_ = std::make_unique<KubeWriter>(
      *d_.client, *d_.recorder, KubeWriterOptions{options_.ns, options_.node_name}, *d_.clock);
  ReconcilerDeps rd{&planner_,  sync_.get(),   &garp_,     d_.announcer,
                    d_.netlink, writer_.get(), d_.metrics, d_.clock};
  rd.reannounce_interval = options_.reannounce_interval;
  if (options_.probe_count > 0 && d_.announcer != nullptr) {
    prober_ = std::make_unique<ThreadProber>(*d_.announcer, [this] { Wake(false); });
    claim_monitor_ = std::make_unique<ClaimMonitor>(*d_.clock, [this] { Wake(false); });
    rd.prober = prober_.get();
    rd.claims = claim_monitor_.get();
    rd.probe.count = options_.probe_count;
    rd.probe.interval =
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.probe_interval);
    rd.gate.conflict_recheck = options_.conflict_recheck;
    if (options_.probe_ahead) {
      // One worker: background probes are paced (ProbeAhead's rate), never urgent.
      ahead_prober_ = std::make_unique<ThreadProber>(
          *d_.announcer, [this] { Wake(false); }, 1);
      rd.background = ahead_prober_.get();
      rd.ahead.rate = options_.probe_ahead_rate;
      rd.ahead.burst = std::max(1, static_cast<int>(options_.probe_ahead_rate));
      rd.ahead.refresh = options_.probe_ahead_refresh;
      rd.ahead.fresh_for = 3 * options_.probe_ahead_refresh;
      rd.ahead.taken_recheck = options_.conflict_recheck;
    }
  }
  if (options_.takeover_check && d_.announcer != nullptr) {
    const Clock* clock = d_.clock;
    wire_ = std::make_unique<ThreadWireChecker>(
        *d_.announcer,
        [clock](const std::string& url, Duration timeout) {
          return HttpGetStatus(url, timeout, *clock);
        },
        [this] { Wake(false); });
    rd.wire = wire_.get();
    rd.takeover.lifetime = EffectiveAddressLifetime(options_);
  }
  if (d_.nftables != nullptr && options_.drain_timeout > Duration(0)) {
    nftables::Nftables* nft = d_.nftables;
    rd.drain_timeout = options_.drain_timeout;
    rd.apply_drain_ruleset = [nft](std::string_view text) { return nft->Run(text); };
  }
  reconciler_ = std::make_unique<Reconciler>(rd);
  lease_ = std::make_unique<LeaseKeeper>(
      *d_.client, options_.ns, election::NodeName(options_.node_name), options_.timing, *d_.clock,
      [this] { Wake(false); }, options_.quiet_lease);
  if (!options_.pod_uid.empty()) lease_->SetInstance(options_.pod_uid);
  if (d_.metrics) DescribeAgentMetrics(*d_.metrics);
}

Status Agent::StartKubeProxyCheck() {
  if (!options_.kube_proxy.enabled) {
    log::Info("kube-proxy health check off (--kube-proxy-check=off)");
    return Ok();
  }
  auto c = KubeProxyChecker::Create(options_.kube_proxy, *d_.clock, [this] { Wake(false); });
  if (!c) return Fail(c.error());
  kube_proxy_ = std::move(*c);
  // Not eligible until the check has passed: peers see the lease released until then.
  lease_->SetReleased(true);
  kube_proxy_->Start();
  log::Info("kube-proxy health check on",
            {{"url", options_.kube_proxy.url},
             {"fail_count", std::to_string(options_.kube_proxy.fail_count)},
             {"pass_count", std::to_string(options_.kube_proxy.pass_count)}});
  return Ok();
}

void Agent::ReportKubeProxyTransitions() {
  if (!kube_proxy_) return;
  for (const auto& t : kube_proxy_->TakeTransitions()) {
    const std::string from(KubeProxyStateName(t.from));
    const std::string to(KubeProxyStateName(t.to));
    const std::string url = options_.kube_proxy.url;
    if (t.to == KubeProxyState::kHealthy) {
      log::Info("kube-proxy healthy: eligible to announce", {{"url", url}, {"from", from}});
      writer_->NodeEvent(false, "KubeProxyHealthy",
                         "kube-proxy passes its health check (" + url + ", " +
                             std::to_string(options_.kube_proxy.pass_count) +
                             " in a row): this node is eligible to announce again");
    } else {
      log::Warn("kube-proxy unhealthy: leaving the election",
                {{"url", url}, {"from", from}, {"result", t.last_result}});
      writer_->NodeEvent(true, "KubeProxyUnhealthy",
                         "kube-proxy fails its health check (" + url + ": " + t.last_result + ", " +
                             std::to_string(options_.kube_proxy.fail_count) +
                             " in a row): this node withdraws its local addresses and leaves "
                             "the election until it passes");
    }
    if (d_.metrics) d_.metrics->Add(kMetricKubeProxyTransitions, {{"to", to}});
  }
}

Agent::~Agent() {
  // Their threads call Wake(): join them while mu_ and cv_ still exist.
  if (kube_proxy_) kube_proxy_->Stop();
  claim_monitor_.reset();
  ahead_prober_.reset();
  prober_.reset();
  wire_.reset();
  link_stop_.store(true);
  if (link_thread_.joinable()) link_thread_.join();
  if (hb_) hb_->Stop();
  for (auto& i : informers_) i->Stop();
  // Start failed or Run never reached Shutdown: a kube-lb0 this run created must not be left
  // behind (the next run would take it for someone else's and keep it). Empty after Shutdown.
  DeleteCreatedVirtual();
  lease_->Stop();
  writer_->Stop(std::chrono::seconds(0));
}

bool Agent::Alive() const {
  auto last = last_pass_ns_.load();
  if (last == 0) return true;  // starting
  return SteadyNanos(d_.clock->Now()) - last <
         std::chrono::nanoseconds(std::chrono::seconds(60)).count();
}

void Agent::Wake(bool inputs_changed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (inputs_changed) inputs_dirty_ = true;
  wake_ = true;
  cv_.notify_all();
}

void Agent::RequestStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
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
  std::lock_guard<std::mutex> lock(mu_);
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

Status Agent::Start(Duration sync_timeout) {
  if (auto st = sync_->Load(); !st) return st;
  // A predecessor's drain ends here: this agent does not know what it forwarded, nor since when.
  reconciler_->ClearDrains();
  // What a previous agent on this node left: ours (recorded, or tagged) and still on the NIC.
  if (auto present = d_.netlink->ListAddresses(std::nullopt); present) {
    for (const auto& a : *present) {
      if (a.proto == netlink::kPylonAddressProto) adoptable_.insert(a.prefix.address());
      for (const auto& o : sync_->owned()) {
        if (a.prefix.address() == o.address.address()) adoptable_.insert(o.address.address());
      }
    }
  }

  RefreshNetwork();
  if (options_.heartbeat.enabled()) {
    if (auto st = StartHeartbeat(sync_timeout); !st) return st;
  }
  if (auto ev = d_.netlink->Subscribe(); ev && (*ev)->fd() >= 0) {
    link_events_ = std::move(*ev);
    link_thread_ = std::thread([this] { WatchLinks(); });
  } else if (!ev) {
    log::Warn("no link notifications; links are rediscovered every 2s",
              {{"error", ev.error().message()}});
  }

  auto add = [&](const k8s::Resource& res, const std::string& ns, bool lease) {
    k8s::InformerOptions io;
    io.resource = res;
    io.ns = ns;
    auto inf = std::make_unique<k8s::Informer>(*d_.client, io);
    k8s::EventHandlers h;
    if (lease) {
      h.on_add = [this](const Json& o) { OnLease(o, false); };
      h.on_update = [this](const Json&, const Json& o) { OnLease(o, false); };
      h.on_delete = [this](const Json& o) { OnLease(o, true); };
    } else {
      h.on_add = [this](const Json&) { Wake(true); };
      h.on_update = [this](const Json&, const Json&) { Wake(true); };
      h.on_delete = [this](const Json&) { Wake(true); };
    }
    inf->AddHandlers(std::move(h));
    informers_.push_back(std::move(inf));
    return informers_.back().get();
  };
  services_ = add(k8s::resources::Services(), "", false);
  slices_ = add(k8s::resources::EndpointSlices(), "", false);
  leases_ = add(k8s::resources::Leases(), options_.ns, true);
  groups_ = add(crd::ServiceGroups(), options_.ns, false);
  classes_ = add(crd::LoadBalancerClasses(), "", false);
  // Every namespace, as PureLB (the install namespace's objects take precedence on a tie:
  // node_agent_select.h).
  node_agents_ = add(crd::LBNodeAgents(), "", false);
  l2advs_ = add(crd::L2Advertisements(), "", false);
  nodes_ = add(k8s::resources::Nodes(), "", false);
  if (options_.bgp.enabled()) {
    bgp_peers_ = add(crd::BGPPeers(), "", false);
    bfd_profiles_ = add(crd::BFDProfiles(), "", false);
    bgp_ads_ = add(crd::BGPAdvertisements(), "", false);
    bgp_ = std::make_unique<BgpSync>(options_.bgp, options_.node_name, options_.ns, d_.client,
                                     d_.recorder, d_.metrics, d_.clock);
  }
  for (auto& i : informers_) i->Start();
  writer_->Start();
  if (claim_monitor_) claim_monitor_->Start();
  if (auto st = StartKubeProxyCheck(); !st) return st;
  lease_->SetSubnets(network_.Subnets());
  lease_->Start();

  for (auto& i : informers_) {
    if (!i->WaitForSync(sync_timeout)) {
      return Fail(ErrorCode::kUnavailable, "informers did not sync within the timeout");
    }
  }
  log::Info("agent started", {{"node", options_.node_name}, {"namespace", options_.ns}});
  return Ok();
}

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

void Agent::PublishMacs() {
  std::vector<std::string> macs;
  for (const auto& i : network_.interfaces) {
    auto link = d_.netlink->GetLink(i.name);
    if (!link) continue;
    auto mac = net::MacAddress::FromBytes(link->hwaddr);
    if (mac && !mac->is_zero()) macs.push_back(mac->ToString());
  }
  lease_->SetAnnotation(std::string(election::kMacsAnnotation),
                        election::FormatMacsAnnotation(macs));
}

void Agent::WatchLinks() {
  while (!link_stop_.load()) {
    auto events = link_events_->Poll(std::chrono::milliseconds(200));
    if (!events) {
      log::Warn("link notifications", {{"error", events.error().message()}});
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    bool changed = false;
    for (const auto& e : *events) {
      if (const auto* le = std::get_if<netlink::LinkEvent>(&e)) {
        log::Debug("link event",
                   {{"interface", le->link.name}, {"up", le->link.lower_up() ? "true" : "false"}});
        changed = true;
      } else if (std::holds_alternative<netlink::ResyncEvent>(e)) {
        changed = true;
      }
    }
    if (!changed) continue;
    std::lock_guard<std::mutex> lock(mu_);
    rediscover_ = true;
    wake_ = true;
    cv_.notify_all();
  }
}

bool Agent::EnsureVirtual(const std::string& name) {
  if (!virtual_tried_.insert(name).second) return false;  // failed before: logged once
  // The virtual interface, with the documented fallback when the kernel has no dummy driver.
  auto vl = netlink::EnsureVirtualLink(*d_.netlink, name);
  if (!vl) {
    log::Error("cannot create the virtual interface; virtual addresses are disabled",
               {{"interface", name}, {"error", vl.error().message()}});
    return false;
  }
  if (vl->created) created_virtual_[name] = vl->link.index;
  if (!vl->note.empty()) {
    const std::string kind(netlink::VirtualLinkKindName(vl->kind));
    log::Warn("virtual interface fallback",
              {{"interface", name}, {"kind", kind}, {"note", vl->note}});
    writer_->NodeEvent(true, "VirtualInterfaceFallback", name + " is a " + kind + ": " + vl->note);
  }
  // Its promote_secondaries is checked (and set where /proc/sys is writable) with strict ARP by
  // the Reconciler: node_sysctls.h.
  virtual_tried_.erase(name);  // success: a later disappearance may be repaired
  return true;
}

void Agent::RefreshNetwork() {
  const SteadyTime now = d_.clock->Now();
  if (last_discovery_ && now < *last_discovery_ + kRediscoverEvery) return;
  last_discovery_ = now;
  auto net = DiscoverNetwork(*d_.netlink, node_agent_ ? &*node_agent_ : nullptr);
  if (!net) {
    log::Warn("network discovery failed", {{"error", net.error().message()}});
    return;
  }
  PublishHeartbeatEndpoints();
  if (node_agent_state_ == NodeAgentState::kDeselected) {
    // No LBNodeAgent governs this node: no announcing interface, no virtual interface, so it
    // holds nothing and its lease advertises no subnets.
    net->interfaces.clear();
    net->virtual_ifindex = 0;
  } else if (net->virtual_ifindex == 0 && EnsureVirtual(net->virtual_interface)) {
    auto link = d_.netlink->GetLink(net->virtual_interface);
    if (link) net->virtual_ifindex = link->index;
  }
  if (*net == network_) return;
  std::string names;
  for (const auto& i : net->interfaces) names += (names.empty() ? "" : ",") + i.name;
  const std::vector<net::Prefix> subnets = net->Subnets();
  std::vector<net::Prefix> copy = subnets;
  log::Info("node network", {{"interfaces", names},
                             {"subnets", election::FormatSubnetsAnnotation(copy)},
                             {"virtual", net->virtual_interface}});
  network_ = std::move(*net);
  if (lease_) {
    lease_->SetSubnets(subnets);
    PublishMacs();
  }
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
  if (ahead_prober_) {
    for (const auto& g : candidates) {
      for (const char* fam : {"ipv4", "ipv6"}) {
        const Json* list = Find(g, {"status", "probeAhead", fam});
        if (list == nullptr || !list->is_array()) continue;
        for (const auto& item : *list) {
          if (!item.is_string()) continue;
          if (auto ip = net::IpAddress::Parse(item.get<std::string>())) {
            probe_ahead_candidates_.push_back(*ip);
          }
        }
      }
    }
  }

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

std::string Agent::ReadyDetail() const {
  std::lock_guard<std::mutex> lock(detail_mu_);
  return ready_detail_;
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
      d_.recorder->Event(k8s::ObjectReference::For(crd::LBNodeAgents(), agents[n.object]),
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

void Agent::OnePass(bool shutting_down) {
  RefreshNetwork();
  ReportKubeProxyTransitions();
  const bool lease_healthy = lease_->Healthy();
  // This node's kube-proxy (--kube-proxy-check): while it fails, the node is not eligible. The
  // same path as an unhealthy lease locally (no local address, no writes), plus what peers see:
  // the lease released (holderIdentity "") and, with heartbeats, "not eligible" in them.
  const bool kube_proxy_ok = !kube_proxy_ || kube_proxy_->eligible();
  lease_->SetReleased(!kube_proxy_ok);
  bool healthy = lease_healthy;
  std::string health_name = healthy ? "healthy" : "lease-unhealthy";
  HeartbeatLivenessFacts liveness;
  if (hb_) {
    std::lock_guard<std::mutex> lock(mu_);
    auto r = hb_->Sync(membership_, {lease_healthy, false, !shutting_down && kube_proxy_ok});
    healthy = r.health == heartbeat::SelfHealth::kHealthy;
    health_name = heartbeat::SelfHealthName(r.health);
    liveness = LivenessFacts(hb_->Peers(), heartbeat_annotated_, membership_,
                             NodeName(options_.node_name), d_.clock->Now());
    liveness.legacy_peers = hb_->LegacyPeers() > 0;
  }
  // The quiet lease (lease_pacing.h): a change of pace is written at once.
  lease_->SetHeartbeatsCarryLiveness(HeartbeatsCarryLiveness(liveness));
  if (healthy && !kube_proxy_ok) {
    healthy = false;
    health_name = "kube-proxy-" + std::string(KubeProxyStateName(kube_proxy_->state()));
  }
  if (healthy != last_healthy_) {
    log::Info("self health", {{"health", health_name}});
    last_healthy_ = healthy;
  }
  const SteadyTime now = d_.clock->Now();
  if (healthy && !first_healthy_) {
    first_healthy_ = now;
    // Fit to announce: a mark left by a predecessor that restarted is cleared.
    lease_->ClearAnnotation(std::string(kRestartingAnnotation));
  }
  PlanInputs in;
  in.hold_off = !first_healthy_ || now < *first_healthy_ + options_.timing.retry_period;
  in.defer_to_unseen_announcers =
      !first_healthy_ || now < *first_healthy_ + options_.timing.lease_duration;
  // An agent restart: what the predecessor left stays until this agent is healthy and its own
  // lease is seen as such (its first write may have released it while its kube-proxy check had
  // not passed yet): a lease duration after it is first healthy, and at most an address lifetime
  // after start (then the addresses would have expired anyway).
  if (!started_at_) started_at_ = now;
  if (!adoptable_.empty() && now < *started_at_ + EffectiveAddressLifetime(options_) &&
      (!first_healthy_ || now < *first_healthy_ + options_.timing.lease_duration)) {
    in.keep = &adoptable_;
  }
  in.network = &network_;
  in.config = &config_;
  in.services = &services_in_;
  in.l2advertisements = &l2_in_;
  in.healthy = healthy;
  in.shutting_down = shutting_down;
  in.excluded_nodes = &excluded_nodes_;
  PassResult pass;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RefreshPeerSigns();
    in.peer_signs = &peer_signs_;
    if (ahead_prober_) {
      // What live peers proved free counts as pre-probed here too (the winner of an address is
      // not always the node that probed it ahead: ETP Local, node affinity).
      std::set<net::IpAddress> free_elsewhere;
      for (const auto& [node, ips] : peer_probed_free_) {
        if (!membership_.IsLive(NodeName(node), now)) continue;
        free_elsewhere.insert(ips.begin(), ips.end());
      }
      reconciler_->SetProbeAhead(probe_ahead_candidates_, std::move(free_elsewhere));
    }
    if (hb_) {
      pass = reconciler_->Run(in, membership_, [this](std::span<const net::IpAddress> mine) {
        return hb_->AddressesToYield(mine);
      });
      // Peers heard again after this node heard none (frozen, cut off): what it still holds may
      // have been announced by another node meanwhile, so announce it again (Reconciler).
      const std::uint64_t rejoined = hb_->stats().rejoined;
      if (rejoined != hb_rejoined_seen_) {
        hb_rejoined_seen_ = rejoined;
        reconciler_->ReannounceHeld();
      }
    } else {
      pass = reconciler_->Run(in, membership_);
    }
  }
  if (pass.node_report) {
    // On the Node object, once per change (kubectl describe node); /readyz shows it while it lasts.
    NodeObjectEvent(nodes_->store().Get("", options_.node_name), pass.node_report->warning,
                    pass.node_report->reason, pass.node_report->message);
    const auto& verdict = reconciler_->NodeSysctls();
    std::lock_guard<std::mutex> lock(detail_mu_);
    ready_detail_ = verdict && !verdict->ok() ? "warning: " + verdict->Explain() : "";
  }
  if (hb_) hb_->SetAnnounced(reconciler_->HeldLocal());
  if (ahead_prober_) {
    // Written with the next renewal when it changed (LeaseKeeper drops an unchanged value).
    lease_->SetAnnotation(model::kAnnProbeAhead,
                          model::FormatProbeAhead(reconciler_->ProbeAheadFindings()));
  }
  if (d_.metrics) {
    d_.metrics->Set(kMetricLeaseHealthy, {}, lease_healthy ? 1 : 0);
    d_.metrics->Set(kMetricLeaseQuiet, {}, lease_->mode() == LeaseMode::kQuiet ? 1 : 0);
    d_.metrics->Set(kMetricLeaseRenewals, {{"result", "success"}},
                    static_cast<double>(lease_->renewals()));
    d_.metrics->Set(kMetricLeaseRenewals, {{"result", "failure"}},
                    static_cast<double>(lease_->failures()));
  }
  if (d_.metrics) d_.metrics->Set(kMetricKubeProxyHealthy, {}, kube_proxy_ok ? 1 : 0);
  if (d_.metrics && hb_) {
    d_.metrics->Set(kMetricHeartbeatHealthy, {}, healthy ? 1 : 0);
    std::map<std::string, int> by_state;
    for (auto st : {heartbeat::PeerState::kNeverHeard, heartbeat::PeerState::kAlive,
                    heartbeat::PeerState::kUnhealthy, heartbeat::PeerState::kSilent,
                    heartbeat::PeerState::kDead}) {
      by_state[heartbeat::PeerStateName(st)] = 0;
    }
    for (const auto& p : hb_->Peers()) ++by_state[heartbeat::PeerStateName(p.state)];
    const heartbeat::HeartbeatStats st = hb_->stats();
    auto add = [&](const char* family, const char* label, const char* value, std::uint64_t now_v,
                   std::uint64_t& seen) {
      if (now_v > seen)
        d_.metrics->Add(family, {{label, value}}, static_cast<double>(now_v - seen));
      seen = now_v;
    };
    add(kMetricHeartbeatDatagrams, "direction", "sent", st.sent, hb_seen_.sent);
    add(kMetricHeartbeatDatagrams, "direction", "received", st.received, hb_seen_.received);
    add(kMetricHeartbeatReports, "event", "made", st.reports_made, hb_seen_.reports_made);
    add(kMetricHeartbeatReports, "event", "sent", st.reports_sent, hb_seen_.reports_sent);
    add(kMetricHeartbeatReports, "event", "received", st.reports_received,
        hb_seen_.reports_received);
    for (const auto& [state, n] : by_state) {
      d_.metrics->Set(kMetricHeartbeatPeers, {{"state", state}}, n);
    }
  }
  if (bgp_ && !shutting_down) SyncBgp();
  last_pass_ns_.store(SteadyNanos(d_.clock->Now()));
}

void Agent::SyncBgp() {
  BgpInputs in;
  in.peers = bgp_peers_->store().List();
  in.profiles = bfd_profiles_->store().List();
  in.advertisements = bgp_ads_->store().List();
  in.node = nodes_->store().Get("", options_.node_name);
  in.virtual_interface = network_.virtual_interface;
  // The router id: the node's InternalIP (IPv4) unless its peers set spec.routerID.
  if (in.node) {
    if (const Json* addrs = Find(*in.node, {"status", "addresses"}); addrs && addrs->is_array()) {
      for (const auto& a : *addrs) {
        if (!a.is_object() || FindString(a, {"type"}).value_or("") != "InternalIP") continue;
        auto ip = net::IpAddress::Parse(FindString(a, {"address"}).value_or(""));
        if (ip && ip->family() == net::Family::kV4) {
          in.node_ipv4 = *ip;
          break;
        }
      }
    }
  }
  bgp_->Sync(in);
}

void Agent::Run() {
  while (true) {
    bool refresh = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const SteadyTime now = d_.clock->Now();
      SteadyTime until = now + kRediscoverEvery;
      if (auto t = reconciler_->NextWakeup(membership_); t && *t < until) until = *t;
      if (auto t = lease_->HealthyUntil(); t && *t > now && *t < until) until = *t;
      if (auto t = lease_->QuietAt(); t && *t < until) until = std::max(*t, now);
      if (bgp_ && bgp_->NextPoll() < until) until = std::max(bgp_->NextPoll(), now);
      if (first_healthy_) {
        SteadyTime end = *first_healthy_ + options_.timing.retry_period;
        if (end > now && end < until) until = end;
      }
      // The loop's clock is the injected one, which in production is the system steady clock.
      cv_.wait_for(lock, std::max<Duration>(until - now, Duration(0)),
                   [this] { return stop_ || wake_ || inputs_dirty_; });
      if (stop_) break;
      wake_ = false;
      if (rediscover_) last_discovery_.reset();
      rediscover_ = false;
      refresh = inputs_dirty_;
      inputs_dirty_ = false;
    }
    if (refresh) RefreshInputs();
    OnePass(false);
    if (!ready_.load()) {
      ready_.store(true);
      log::Info("agent ready", {{"node", options_.node_name}});
    }
    if (!adoption_reported_ && first_healthy_) {
      // What the previous agent on this node left and this one kept in place (no move).
      adoption_reported_ = true;
      int adopted = 0;
      const auto held = reconciler_->HeldLocal();
      for (const auto& ip : adoptable_) {
        if (std::find(held.begin(), held.end(), ip) != held.end()) ++adopted;
      }
      if (adopted > 0) {
        log::Info("adopted the addresses the previous agent left",
                  {{"count", std::to_string(adopted)}});
        if (d_.metrics) {
          d_.metrics->Add(kMetricAddressMoves,
                          {{"reason", std::string(MoveReasonName(MoveReason::kRestartAdopted))}},
                          adopted);
        }
      }
    }
  }
  Shutdown();
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
  // This node's URL gives the scheme, port and path: http://127.0.0.1:10256/healthz.
  const std::string& own = options_.kube_proxy.url;
  const auto scheme_end = own.find("://");
  if (scheme_end == std::string::npos) return "";
  const auto path_at = own.find('/', scheme_end + 3);
  const std::string hostport = own.substr(
      scheme_end + 3, path_at == std::string::npos ? std::string::npos : path_at - scheme_end - 3);
  const std::string path = path_at == std::string::npos ? "" : own.substr(path_at);
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos || hostport.find(']', colon) != std::string::npos) return "";
  const std::string port = hostport.substr(colon + 1);
  std::optional<net::IpAddress> v4, v6;
  if (const Json* addrs = Find(node, {"status", "addresses"}); addrs && addrs->is_array()) {
    for (const auto& a : *addrs) {
      if (!a.is_object() || FindString(a, {"type"}).value_or("") != "InternalIP") continue;
      auto ip = net::IpAddress::Parse(FindString(a, {"address"}).value_or(""));
      if (!ip) continue;
      if (ip->is_v4() && !v4) v4 = *ip;
      if (!ip->is_v4() && !v6) v6 = *ip;
    }
  }
  const std::string scheme = own.substr(0, scheme_end);
  if (v4) return scheme + "://" + v4->ToString() + ":" + port + path;
  if (v6) return scheme + "://[" + v6->ToString() + "]:" + port + path;
  return "";
}

StopDecision Agent::DecideStopNow() {
  StopFacts f;
  f.mode = options_.on_sigterm;
  f.in_pod = !options_.pod_name.empty();
  if (f.mode != SigtermMode::kAuto || !f.in_pod) return DecideStop(f);
  auto fail = [&](const std::string& what, const Error& e) {
    f.lookup_failed = true;
    f.lookup_error = what + ": " + e.message();
  };
  const auto node = nodes_ ? nodes_->store().Get("", options_.node_name) : std::nullopt;
  f.node = ParseNodeFacts(node ? &*node : nullptr);
  auto pod = d_.client->Get(PodsResource(), options_.ns, options_.pod_name);
  if (pod) {
    f.pod = ParsePodFacts(&*pod);
  } else if (pod.error().code() != ErrorCode::kNotFound) {
    fail("pod " + options_.pod_name, pod.error());
  }
  if (!f.lookup_failed && f.pod.found && f.pod.deleting && !f.pod.daemonset.empty()) {
    auto ds = d_.client->Get(DaemonSetsResource(), options_.ns, f.pod.daemonset);
    if (ds) {
      f.daemonset = ParseDaemonSetFacts(&*ds);
    } else if (ds.error().code() != ErrorCode::kNotFound) {
      fail("daemonset " + f.pod.daemonset, ds.error());
    }
  }
  return DecideStop(f);
}

void Agent::Shutdown() {
  const StopDecision decision = DecideStopNow();
  ready_.store(false);
  if (decision.restart) {
    log::Info("restarting: the addresses and the lease stay for the next agent on this node",
              {{"node", options_.node_name}, {"why", decision.why}});
    // Peers must know before they miss the heartbeats: one more renewal, with the annotation, and
    // loud (the PURELB_* duration: the heartbeats stop now).
    lease_->Stop();
    lease_->SetHeartbeatsCarryLiveness(false);
    lease_->SetAnnotation(std::string(kRestartingAnnotation),
                          options_.pod_uid.empty() ? std::string("restarting") : options_.pod_uid);
    if (auto st = lease_->RenewOnce(); !st) {
      log::Warn("could not mark the node lease restarting; peers judge this node by the wire",
                {{"error", st.error().message()}});
    }
    // No Leave(): silence, as after a crash, and the peers' wire check finds the node answering.
    // kube-lb0 and everything on it stay for the next agent.
    created_virtual_.clear();
    StopBackground();
    return;
  }
  log::Info("shutting down: withdrawing addresses, then deleting the lease",
            {{"node", options_.node_name}, {"why", decision.why}});
  // BGP first: the router withdraws this node's routes while the sessions are still up and the
  // addresses still answer here; only then do the addresses leave kube-lb0.
  if (bgp_) bgp_->Drain();
  OnePass(true);
  reconciler_->ClearDrains();
  if (hb_) hb_->Leave();
  lease_->Stop();
  if (auto deleted = lease_->Delete(); !deleted) {
    log::Warn("could not delete the node lease", {{"error", deleted.error().message()}});
  } else if (*deleted == LeaseDeleteOutcome::kDeleted) {
    log::Info("node lease deleted", {{"lease", lease_->LeaseName()}});
  }
  DeleteCreatedVirtual();
  StopBackground();
}

void Agent::StopBackground() {
  if (hb_) hb_->Stop();
  if (kube_proxy_) kube_proxy_->Stop();
  if (claim_monitor_) claim_monitor_->Stop();
  link_stop_.store(true);
  if (link_thread_.joinable()) link_thread_.join();
  for (auto& i : informers_) i->Stop();
  writer_->Stop(std::chrono::seconds(2));
}

void Agent::DeleteCreatedVirtual() {
  for (const auto& [name, index] : created_virtual_) {
    auto link = d_.netlink->GetLink(name);
    if (!link) {
      if (link.error().code() != ErrorCode::kNotFound) {
        log::Warn("virtual interface left in place: cannot read it",
                  {{"interface", name}, {"error", link.error().message()}});
      }
      continue;
    }
    if (link->index != index) {
      // Deleted and created again by someone else since: not ours.
      log::Info("virtual interface left in place: not the one this agent created",
                {{"interface", name}});
      continue;
    }
    if (auto st = d_.netlink->DeleteLink(index); !st) {
      log::Warn("could not delete the virtual interface",
                {{"interface", name}, {"error", st.error().message()}});
    } else {
      log::Info("virtual interface deleted", {{"interface", name}});
    }
  }
  created_virtual_.clear();
}

}  // namespace pylon::agent
