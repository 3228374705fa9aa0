// The agent's way out: restart or leave (lifecycle.h), then the background threads stop.
#include "agent/agent.h"
#include "common/log.h"
#include "k8s/resource.h"

namespace pylon::agent {

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
  auto pod = d_.client->Get(k8s::resources::Pods(), options_.ns, options_.pod_name);
  if (pod) {
    f.pod = ParsePodFacts(&*pod);
  } else if (pod.error().code() != ErrorCode::kNotFound) {
    fail("pod " + options_.pod_name, pod.error());
  }
  if (!f.lookup_failed && f.pod.found && f.pod.deleting && !f.pod.daemonset.empty()) {
    auto ds = d_.client->Get(k8s::resources::DaemonSets(), options_.ns, f.pod.daemonset);
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
  link_worker_.Stop();
  for (auto& i : informers_) i->Stop();
  writer_->Stop(std::chrono::seconds(2));
}

}  // namespace pylon::agent
