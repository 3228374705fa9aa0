// The running agent: wires informers (Services, EndpointSlices, node Leases, ServiceGroups,
// LoadBalancerClasses, LBNodeAgents, L2Advertisements, Nodes), the lease keeper, the kernel
// (Netlink, packet::Announcer) and the Kubernetes writer around the pure core (Planner +
// Reconciler).
//
// Loop: one thread (the caller of Run) makes every decision and every kernel change. Informer
// handlers only mark inputs dirty (and feed node-lease observations into Membership) and wake it.
// It also wakes for time-driven work: announcement bursts, address renewals, a peer's lease
// expiring, this node's own health deadline, and a periodic network rediscovery.
//
// Shutdown (RequestStop, e.g. on SIGTERM) first decides between restart and leave (lifecycle.h
// DecideStop). Leave: a last pass withdraws every address of ours, then the
// lease keeper stops and the lease is deleted (only if it still names this pod, with
// $PURELB_POD_UID: LeaseKeeper::Delete), so peers take over at once without ever seeing two
// holders. Last, as PureLB, the virtual interface (kube-lb0) is deleted -- only a link this run
// of the agent created, still there under the same name and index; one that existed before it
// started (created by someone else, or left by an agent that did not shut down) stays.
// Restart: nothing is withdrawn or deleted; the lease is renewed once more with
// purelb.io/restarting, heartbeats just stop (no "leaving"), and the next agent adopts the
// addresses (the ownership record); peers defer to the node while it answers (takeover.h).
//
// The implementation is split by concept: agent.cc (creation, start, the loop and its pass),
// agent_inputs.cc (informer caches into the planner's inputs, the LBNodeAgent, peers' signs),
// agent_network.cc (discovery, the virtual interface, link notifications), agent_heartbeat.cc
// (heartbeats), agent_stop.cc (restart or leave).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/address_sync.h"
#include "agent/bgp_sync.h"
#include "agent/claim_monitor.h"
#include "agent/garp.h"
#include "agent/kube_proxy_check.h"
#include "agent/kube_writer.h"
#include "agent/lease_keeper.h"
#include "agent/lifecycle.h"
#include "agent/node_agent_select.h"
#include "agent/options.h"
#include "agent/ownership.h"
#include "agent/planner.h"
#include "agent/prober.h"
#include "agent/reconciler.h"
#include "agent/takeover.h"
#include "agent/wire_check.h"
#include "agent/worker_threads.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/worker.h"
#include "config/parse.h"
#include "config/validate.h"
#include "election/membership.h"
#include "heartbeat/service.h"
#include "k8s/client.h"
#include "k8s/event_recorder.h"
#include "k8s/informer.h"
#include "metrics/registry.h"
#include "netlink/netlink.h"
#include "nftables/nftables.h"
#include "packet/announcer.h"

namespace pylon::agent {

struct AgentDeps {
  k8s::Client* client = nullptr;
  k8s::EventRecorder* recorder = nullptr;
  netlink::Netlink* netlink = nullptr;
  packet::Announcer* announcer = nullptr;
  OwnershipStore* ownership = nullptr;
  metrics::Registry* metrics = nullptr;
  const Clock* clock = nullptr;
  // Opens a second Netlink in the calling thread's namespace, for the heartbeat service's own
  // thread (link state). Optional: without it the heartbeat service assumes the link is up.
  std::function<Result<std::unique_ptr<netlink::Netlink>>()> open_netlink;
  // The node's nftables, for the drain of planned moves (drain.h). Null: no drain.
  nftables::Nftables* nftables = nullptr;
};

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> Create(AgentOptions options, AgentDeps deps);
  ~Agent();

  // Loads the ownership record, makes sure the virtual interface exists, discovers the network,
  // starts the informers, the writer and the lease keeper, and waits (up to `sync_timeout`) for
  // the informers' first lists.
  Status Start(Duration sync_timeout = std::chrono::seconds(30));
  // With --heartbeat-key-file it also loads the key file (an error if missing or invalid) and
  // starts the heartbeat service on the announcing interface, publishing its endpoints in the
  // node lease (purelb.io/heartbeat). It subscribes to link notifications so a link going down
  // or up wakes the loop at once.
  //
  // Runs passes until RequestStop(), then shuts down gracefully (withdraw, then delete the lease).
  void Run();
  // Thread-safe; returns at once.
  void RequestStop();

  // Ready once the first pass ran; with BGP on, also only while the routing daemon answers.
  bool Ready() const { return ready_.load() && (!bgp_ || bgp_->DaemonReachable()); }
  // The loop made progress recently (for /healthz).
  bool Alive() const;
  // What /readyz adds to its answer (readiness itself does not depend on it): "warning: ..." while
  // the node lacks a sysctl virtual addresses need (node_sysctls.h), else empty. Thread-safe.
  std::string ReadyDetail() const;

 private:
  Agent(AgentOptions options, AgentDeps deps, Planner planner);
  void Wake(bool inputs_changed);
  void OnLease(const Json& obj, bool deleted);
  void RefreshInputs();
  // Chooses the governing LBNodeAgent (node_agent_select.h), reports what changed and applies its
  // GARP and address settings.
  void RefreshNodeAgent();
  // An event on this node's Node object (kubectl describe node): the LBNodeAgent verdicts and
  // the node-sysctl verdict, as documented. `node` is the cached Node, if any (its uid goes into
  // the reference).
  void NodeObjectEvent(const std::optional<Json>& node, bool warning, const std::string& reason,
                       const std::string& message);
  void RefreshNetwork();
  // Creates (or adopts) the virtual interface `name`; false when that failed (logged once).
  bool EnsureVirtual(const std::string& name);
  // Shutdown: deletes the virtual interfaces this run created (created_virtual_).
  void DeleteCreatedVirtual();
  // One pass: rediscover the network, judge this node's health, plan and apply, publish.
  void OnePass(bool shutting_down);
  // This pass's verdict on this node (OnePass).
  struct SelfHealth {
    bool lease_healthy = false;
    bool kube_proxy_ok = false;  // passes its check, or the check is off
    bool healthy = false;        // fit to announce: lease (or heartbeats) and kube-proxy
  };
  // From the lease, the heartbeats (which also set the quiet lease's pace) and kube-proxy;
  // releases the lease while kube-proxy fails; logs a change.
  SelfHealth EvaluateSelfHealth(bool shutting_down);
  // The planner's inputs: hold-off after the first healthy pass, the predecessor's addresses
  // kept while adoption lasts, the inputs of the last RefreshInputs.
  PlanInputs BuildPlanInputs(bool healthy, bool shutting_down, SteadyTime now);
  // Runs the Reconciler under mu_ with the peers' signs, what live peers probed free, and the
  // heartbeats' yield; re-announces what it holds when peers are heard again.
  PassResult Reconcile(PlanInputs& in, SteadyTime now);
  // The node-sysctl report (event, /readyz), the announced set for heartbeats, and the
  // probe-ahead annotation.
  void PublishPassResults(const PassResult& pass);
  // The lease and kube-proxy gauges, and with heartbeats ExportHeartbeatMetrics.
  void ExportPassMetrics(const SelfHealth& health);
  // The heartbeat gauges, and the counters' increase since the last pass (hb_seen_).
  void ExportHeartbeatMetrics(bool healthy);
  // With BGP on: hands the BGP objects and this node to BgpSync (loop thread).
  void SyncBgp();
  void Shutdown();
  // Once, after the first healthy pass: how many of the predecessor's addresses this agent kept
  // (log, address-moves counter).
  void ReportAdoption();
  // The last step of both ways out (restart and leave): heartbeats, the kube-proxy check, the
  // claim monitor, the link follower, the informers and the writer stop.
  void StopBackground();
  // Restart or leave (lifecycle.h): reads this agent's Pod and DaemonSet when it must.
  StopDecision DecideStopNow();
  // What peers' wire checks need beyond the Membership (loop thread).
  void RefreshPeerSigns() PYLON_REQUIRES(mu_);
  // The URL of `node`'s kube-proxy /healthz: this node's --kube-proxy-healthz port and path at
  // the node's InternalIP; "" when the check is off or the node has no address.
  std::string PeerKubeProxyUrl(const Json& node) const;
  // `api_timeout`: how long to wait for the API when the key comes from the Secret.
  Status StartHeartbeat(Duration api_timeout);
  // --kube-proxy-check=on: starts the checker (kube_proxy_check.h).
  Status StartKubeProxyCheck();
  // Drains the checker's verdict changes: log, node event, transition counter (loop thread).
  void ReportKubeProxyTransitions();
  // Recomputes this node's heartbeat endpoints and publishes them in the lease annotation.
  void PublishHeartbeatEndpoints();
  // Publishes the MACs of the announcing interfaces in the lease (purelb.io/macs), so that
  // peers' duplicate-address probes do not take this node for a foreign host.
  void PublishMacs();
  // The link-notification thread: wakes the loop (forcing a rediscovery) on every link change.
  void WatchLinks();
  std::string HeartbeatInterface() const;

  // The network is rediscovered at least this often (and at once on a link notification).
  static constexpr Duration kRediscoverEvery = std::chrono::seconds(2);

  AgentOptions options_;
  AgentDeps d_;
  Planner planner_;
  GarpScheduler garp_;
  std::unique_ptr<AddressSync> sync_;
  std::unique_ptr<KubeWriter> writer_;
  std::unique_ptr<ThreadProber> prober_;         // null: probing off
  std::unique_ptr<ClaimMonitor> claim_monitor_;  // null: probing off
  std::unique_ptr<ThreadWireChecker> wire_;      // null: --takeover-check=off
  std::unique_ptr<ThreadProber> ahead_prober_;   // null: probe ahead off (background probes)
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<LeaseKeeper> lease_;
  std::unique_ptr<heartbeat::HeartbeatService> hb_;  // null: heartbeats off
  std::uint64_t hb_rejoined_seen_ = 0;  // hb_->stats().rejoined at the last pass (OnePass)
  heartbeat::HeartbeatStats hb_seen_;   // hb_->stats() as last exported to the metrics
  std::unique_ptr<KubeProxyChecker> kube_proxy_;       // null: --kube-proxy-check=off
  std::unique_ptr<BgpSync> bgp_;                       // null: no --bird-socket
  std::string hb_interface_;                           // the interface hb_ is bound to
  std::unique_ptr<netlink::EventSource> link_events_;  // WatchLinks thread only, once started
  Worker link_worker_;                                 // runs WatchLinks
  std::vector<std::unique_ptr<k8s::Informer>> informers_;
  k8s::Informer* services_ = nullptr;
  k8s::Informer* slices_ = nullptr;
  k8s::Informer* leases_ = nullptr;
  k8s::Informer* groups_ = nullptr;
  k8s::Informer* classes_ = nullptr;
  k8s::Informer* node_agents_ = nullptr;
  k8s::Informer* l2advs_ = nullptr;
  k8s::Informer* nodes_ = nullptr;
  k8s::Informer* bgp_peers_ = nullptr;  // these three with BGP on only
  k8s::Informer* bfd_profiles_ = nullptr;
  k8s::Informer* bgp_ads_ = nullptr;

  // Loop state (loop thread only).
  NodeNetwork network_;
  std::optional<SteadyTime> last_discovery_;
  config::InForceConfig config_;
  std::optional<config::NodeAgentConfig> node_agent_;  // the governing LBNodeAgent
  NodeAgentState node_agent_state_ = NodeAgentState::kDefault;
  std::vector<std::string> node_agent_reported_;  // notes and verdict last logged (dedup)
  std::vector<ServiceInput> services_in_;
  std::vector<L2Advertisement> l2_in_;
  std::vector<NodeName> excluded_nodes_;
  // Probe ahead: the allocator's next addresses (status.probeAhead of ServiceGroups and
  // LoadBalancerClasses).
  std::vector<net::IpAddress> probe_ahead_candidates_;
  std::set<std::string> virtual_tried_;  // virtual interface names that could not be created
  // The state purelb_lbnodeagent_selector_state shows (set when it changes; none before the
  // first read of the LBNodeAgents).
  std::optional<NodeAgentState> selector_state_reported_;
  std::map<std::string, int> created_virtual_;  // virtual interfaces this run created: ifindex
  std::optional<SteadyTime> first_healthy_;     // start of the hold-off (planner.h)
  std::set<net::IpAddress>
      adoptable_;  // recorded as ours and on the NIC at start (PlanInputs::keep)
  std::optional<SteadyTime> started_at_;  // the first pass
  bool adoption_reported_ = false;
  std::map<NodeName, std::string> peer_kube_proxy_;  // node -> its kube-proxy URL (inputs)
  std::map<NodeName, HolderSigns> peer_signs_;       // rebuilt every pass
  // The addresses each peer published as proven free (purelb.io/probe-ahead).
  std::map<std::string, std::set<net::IpAddress>> peer_probed_free_ PYLON_GUARDED_BY(mu_);
  bool last_healthy_ = true;  // for logging health transitions

  // Shared with informer threads.
  mutable Mutex mu_;
  std::condition_variable cv_;
  election::Membership membership_ PYLON_GUARDED_BY(mu_);
  // Leases with purelb.io/restarting.
  std::set<NodeName> restarting_ PYLON_GUARDED_BY(mu_);
  // Other nodes' heartbeat endpoint addresses (their lease's purelb.io/heartbeat): where the
  // drain forwards (HolderSigns::addresses).
  std::map<NodeName, std::vector<net::IpAddress>> peer_addresses_ PYLON_GUARDED_BY(mu_);
  // Leases with a purelb.io/heartbeat annotation (the quiet lease's lease-only test).
  std::set<NodeName> heartbeat_annotated_ PYLON_GUARDED_BY(mu_);
  bool inputs_dirty_ PYLON_GUARDED_BY(mu_) = true;
  // A link changed: rediscover the network on the next pass.
  bool rediscover_ PYLON_GUARDED_BY(mu_) = false;
  bool wake_ PYLON_GUARDED_BY(mu_) = false;
  bool stop_ PYLON_GUARDED_BY(mu_) = false;
  std::atomic<bool> ready_{false};
  std::atomic<std::int64_t> last_pass_ns_{0};
  mutable Mutex detail_mu_;
  std::string ready_detail_ PYLON_GUARDED_BY(detail_mu_);
};

}  // namespace pylon::agent
