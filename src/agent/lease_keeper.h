// Keeps this node's Lease `purelb-node-<node>` in the install namespace: creates it, renews it
// (spec.renewTime, holderIdentity = the node, leaseDurationSeconds) and keeps its
// `purelb.io/subnets` annotation equal to the node's subnets. The pace is LeasePacing's
// (lease_pacing.h): loud = every retry period with the PURELB_* duration; quiet = every 10 s with
// 40 s, while the agent says heartbeats carry liveness (SetHeartbeatsCarryLiveness); a mode change
// renews at once. Health per LeaseHealth: a node whose renewals keep failing for the deadline of
// the duration it last wrote is unhealthy and must withdraw its local addresses (the agent loop
// asks Healthy()). Each renewal is one Update of the object as last written (a Get only after a
// conflict or deletion): nodes / renew period writes per second.
//
// Threading: one worker thread (Start/Stop); Healthy(), SetSubnets() and the callback's caller are
// thread-safe. The callback (health changed or renewed) runs on the worker; it must not block.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/lease_health.h"
#include "agent/lease_pacing.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/worker.h"
#include "election/node_name.h"
#include "k8s/client.h"
#include "net/ip.h"

namespace pylon::agent {

// The agent pod's UID (PURELB_POD_UID), so an agent deletes only a lease it still owns.
inline constexpr std::string_view kInstanceAnnotation = "purelb.io/instance";

enum class LeaseDeleteOutcome : std::uint8_t {
  kDeleted,
  kAbsent,         // nothing to delete
  kOtherInstance,  // purelb.io/instance names another pod (its successor): left alone
};

class LeaseKeeper {
 public:
  // Starts loud; `quiet` says whether and how it may turn quiet (never without
  // SetHeartbeatsCarryLiveness(true)).
  LeaseKeeper(k8s::Client& client, std::string ns, election::NodeName node, LeaseTiming timing,
              const Clock& clock, std::function<void()> on_change, QuietLeaseOptions quiet = {});
  ~LeaseKeeper();

  // The subnets to publish; a change is written at the next renewal (made due at once).
  void SetSubnets(std::vector<net::Prefix> subnets);
  // An extra annotation to publish (e.g. purelb.io/heartbeat); an empty value removes it. A
  // change is written at the next renewal (made due at once).
  void SetAnnotation(const std::string& key, std::string value);
  // Removes `key` from the lease at the next renewal (made due at once), even if another writer
  // (a previous agent) put it there.
  void ClearAnnotation(const std::string& key);
  // While released, renewals write holderIdentity "" (the lease's "released" form): peers see
  // this node as a member that is not live (election/membership.h) and re-elect its addresses at
  // once, without waiting for the lease to expire. Used while this node is not eligible (e.g. its
  // kube-proxy fails its health check, kube_proxy_health.h). A change is written at once.
  void SetReleased(bool released);
  // This agent's pod UID: published as purelb.io/instance and checked by Delete(). Call before
  // Start(); "" (the default) = no annotation, Delete() unconditional.
  void SetInstance(std::string uid);
  // Whether heartbeats carry this node's liveness now (lease_pacing.h HeartbeatsCarryLiveness),
  // once per agent pass and again at pacing().QuietAt(). Returns whether the pace changed: then the
  // worker renews at once with the new duration.
  bool SetHeartbeatsCarryLiveness(bool carried);
  // A copy of the pacing, taken under one lock: its mode() and, if the condition still holds,
  // when the lease turns quiet (LeasePacing::QuietAt).
  LeasePacing pacing() const;
  void Start();
  // Stops renewing (joins the worker). Idempotent.
  void Stop();
  // Deletes the lease so peers see this node leave at once (graceful shutdown, after withdrawal).
  // With an instance: only while the lease's purelb.io/instance is this instance, with the
  // resourceVersion just read as a precondition (a lease rewritten meanwhile is read again, once).
  Result<LeaseDeleteOutcome> Delete();
  // One renewal attempt now, at the current pace (also what the worker runs every renew period).
  // Returns its outcome.
  Status RenewOnce();

  bool Healthy() const;
  // When Healthy() turns false without a further successful renewal (for the loop's wakeup).
  std::optional<SteadyTime> HealthyUntil() const;
  std::string LeaseName() const { return election::LeaseNameFor(node_); }
  std::int64_t renewals() const { return renewals_.load(); }
  std::int64_t failures() const { return failures_.load(); }

 private:
  k8s::Client& client_;
  const std::string ns_;
  const election::NodeName node_;
  const Clock& clock_;
  std::function<void()> on_change_;

  mutable Mutex mu_;
  LeaseHealth health_ PYLON_GUARDED_BY(mu_);
  LeasePacing pacing_ PYLON_GUARDED_BY(mu_);
  bool last_ok_ PYLON_GUARDED_BY(mu_) =
      true;  // the last renewal succeeded (or none yet): the worker's next wait
  std::string subnets_annotation_ PYLON_GUARDED_BY(mu_);
  std::map<std::string, std::string> extra_annotations_ PYLON_GUARDED_BY(mu_);  // value "" = remove
  bool released_ PYLON_GUARDED_BY(mu_) = false;
  std::string instance_ PYLON_GUARDED_BY(mu_);
  std::optional<Json> last_written_;  // renewing thread only (RenewOnce is not reentrant)
  std::atomic<std::int64_t> renewals_{0};
  std::atomic<std::int64_t> failures_{0};
  Worker worker_;  // renews every period, or at once when a change is written (last: stops first)
};

}  // namespace pylon::agent
