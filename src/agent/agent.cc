#include "agent/agent.h"

#include <algorithm>
#include <map>
#include <utility>

#include "agent/agent_inputs.h"
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
  link_worker_.Stop();
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
  MutexLock lock(mu_);
  if (inputs_changed) inputs_dirty_ = true;
  wake_ = true;
  cv_.notify_all();
}

void Agent::RequestStop() {
  MutexLock lock(mu_);
  stop_ = true;
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
    link_worker_.Start([this] { WatchLinks(); });
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
  groups_ = add(k8s::resources::ServiceGroups(), options_.ns, false);
  classes_ = add(k8s::resources::LoadBalancerClasses(), "", false);
  // Every namespace, as PureLB (the install namespace's objects take precedence on a tie:
  // node_agent_select.h).
  node_agents_ = add(k8s::resources::LBNodeAgents(), "", false);
  l2advs_ = add(k8s::resources::L2Advertisements(), "", false);
  nodes_ = add(k8s::resources::Nodes(), "", false);
  if (options_.bgp.enabled()) {
    bgp_peers_ = add(k8s::resources::BGPPeers(), "", false);
    bfd_profiles_ = add(k8s::resources::BFDProfiles(), "", false);
    bgp_ads_ = add(k8s::resources::BGPAdvertisements(), "", false);
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

std::string Agent::ReadyDetail() const {
  MutexLock lock(detail_mu_);
  return ready_detail_;
}

Agent::SelfHealth Agent::EvaluateSelfHealth(bool shutting_down) {
  SelfHealth h;
  h.lease_healthy = lease_->Healthy();
  // This node's kube-proxy (--kube-proxy-check): while it fails, the node is not eligible. The
  // same path as an unhealthy lease locally (no local address, no writes), plus what peers see:
  // the lease released (holderIdentity "") and, with heartbeats, "not eligible" in them.
  const std::optional<KubeProxyHealth> kube_proxy =
      kube_proxy_ ? std::optional(kube_proxy_->health()) : std::nullopt;
  h.kube_proxy_ok = !kube_proxy || kube_proxy->eligible();
  lease_->SetReleased(!h.kube_proxy_ok);
  h.healthy = h.lease_healthy;
  std::string health_name = h.healthy ? "healthy" : "lease-unhealthy";
  HeartbeatLivenessFacts liveness;
  if (hb_) {
    MutexLock lock(mu_);
    auto r = hb_->Sync(membership_, {h.lease_healthy, false, !shutting_down && h.kube_proxy_ok});
    h.healthy = r.health == heartbeat::SelfHealth::kHealthy;
    health_name = heartbeat::SelfHealthName(r.health);
    liveness = LivenessFacts(hb_->Peers(), heartbeat_annotated_, membership_,
                             NodeName(options_.node_name), d_.clock->Now());
    liveness.legacy_peers = hb_->LegacyPeers() > 0;
  }
  // The quiet lease (lease_pacing.h): a change of pace is written at once.
  lease_->SetHeartbeatsCarryLiveness(HeartbeatsCarryLiveness(liveness));
  if (h.healthy && !h.kube_proxy_ok) {
    h.healthy = false;
    health_name = "kube-proxy-" + std::string(KubeProxyStateName(kube_proxy->state()));
  }
  if (h.healthy != last_healthy_) {
    log::Info("self health", {{"health", health_name}});
    last_healthy_ = h.healthy;
  }
  return h;
}

PlanInputs Agent::BuildPlanInputs(bool healthy, bool shutting_down, SteadyTime now) {
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
  return in;
}

PassResult Agent::Reconcile(PlanInputs& in, SteadyTime now) {
  MutexLock lock(mu_);
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
  if (!hb_) return reconciler_->Run(in, membership_);
  PassResult pass = reconciler_->Run(in, membership_, [this](std::span<const net::IpAddress> mine) {
    return hb_->AddressesToYield(mine);
  });
  // Peers heard again after this node heard none (frozen, cut off): what it still holds may
  // have been announced by another node meanwhile, so announce it again (Reconciler).
  const std::uint64_t rejoined = hb_->stats().rejoined;
  if (rejoined != hb_rejoined_seen_) {
    hb_rejoined_seen_ = rejoined;
    reconciler_->ReannounceHeld();
  }
  return pass;
}

void Agent::PublishPassResults(const PassResult& pass) {
  if (pass.node_report) {
    // On the Node object, once per change (kubectl describe node); /readyz shows it while it lasts.
    NodeObjectEvent(nodes_->store().Get("", options_.node_name), pass.node_report->warning,
                    pass.node_report->reason, pass.node_report->message);
    const auto& verdict = reconciler_->NodeSysctls();
    MutexLock lock(detail_mu_);
    ready_detail_ = verdict && !verdict->ok() ? "warning: " + verdict->Explain() : "";
  }
  if (hb_) hb_->SetAnnounced(reconciler_->HeldLocal());
  if (ahead_prober_) {
    // Written with the next renewal when it changed (LeaseKeeper drops an unchanged value).
    lease_->SetAnnotation(model::kAnnProbeAhead,
                          model::FormatProbeAhead(reconciler_->ProbeAheadFindings()));
  }
}

void Agent::ExportPassMetrics(const SelfHealth& health) {
  if (!d_.metrics) return;
  d_.metrics->Set(kMetricLeaseHealthy, {}, health.lease_healthy ? 1 : 0);
  d_.metrics->Set(kMetricLeaseQuiet, {}, lease_->pacing().mode() == LeaseMode::kQuiet ? 1 : 0);
  d_.metrics->Set(kMetricLeaseRenewals, {{"result", "success"}},
                  static_cast<double>(lease_->renewals()));
  d_.metrics->Set(kMetricLeaseRenewals, {{"result", "failure"}},
                  static_cast<double>(lease_->failures()));
  d_.metrics->Set(kMetricKubeProxyHealthy, {}, health.kube_proxy_ok ? 1 : 0);
  if (hb_) ExportHeartbeatMetrics(health.healthy);
}

void Agent::OnePass(bool shutting_down) {
  RefreshNetwork();
  ReportKubeProxyTransitions();
  const SelfHealth health = EvaluateSelfHealth(shutting_down);
  const SteadyTime now = d_.clock->Now();
  PlanInputs in = BuildPlanInputs(health.healthy, shutting_down, now);
  const PassResult pass = Reconcile(in, now);
  PublishPassResults(pass);
  ExportPassMetrics(health);
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
    for (const auto& ip : NodeInternalIps(*in.node)) {
      if (ip.family() == net::Family::kV4) {
        in.node_ipv4 = ip;
        break;
      }
    }
  }
  bgp_->Sync(in);
}

void Agent::ReportAdoption() {
  // What the previous agent on this node left and this one kept in place (no move).
  adoption_reported_ = true;
  int adopted = 0;
  const auto held = reconciler_->HeldLocal();
  for (const auto& ip : adoptable_) {
    if (std::find(held.begin(), held.end(), ip) != held.end()) ++adopted;
  }
  if (adopted == 0) return;
  log::Info("adopted the addresses the previous agent left", {{"count", std::to_string(adopted)}});
  if (d_.metrics) {
    d_.metrics->Add(kMetricAddressMoves,
                    {{"reason", std::string(MoveReasonName(MoveReason::kRestartAdopted))}},
                    adopted);
  }
}

void Agent::Run() {
  while (true) {
    bool refresh = false;
    {
      MutexLock lock(mu_);
      const SteadyTime now = d_.clock->Now();
      SteadyTime until = now + kRediscoverEvery;
      if (auto t = reconciler_->NextWakeup(membership_); t && *t < until) until = *t;
      if (auto t = lease_->HealthyUntil(); t && *t > now && *t < until) until = *t;
      if (auto t = lease_->pacing().QuietAt(); t && *t < until) until = std::max(*t, now);
      if (bgp_ && bgp_->NextPoll() < until) until = std::max(bgp_->NextPoll(), now);
      if (first_healthy_) {
        SteadyTime end = *first_healthy_ + options_.timing.retry_period;
        if (end > now && end < until) until = end;
      }
      // The loop's clock is the injected one, which in production is the system steady clock.
      const auto deadline =
          std::chrono::steady_clock::now() + std::max<Duration>(until - now, Duration(0));
      while (!stop_ && !wake_ && !inputs_dirty_) {
        if (lock.WaitUntil(cv_, deadline) == std::cv_status::timeout) break;
      }
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
    if (!adoption_reported_ && first_healthy_) ReportAdoption();
  }
  Shutdown();
}

}  // namespace pylon::agent
