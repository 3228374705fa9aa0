// The allocator controller: informers on Services, ServiceGroups and LoadBalancerClasses feed a
// rate-limited work queue (an informer on the node Leases of the install namespace keeps the live
// node subnets multi-pool allocates on, node_subnets.h); worker threads run the pure reconcile core
// (reconcile.h) under one lock and do the API writes outside it. Only the leader processes
// (Lead()); a follower keeps its caches warm.
//
// Work (work_item.h): a Service, the config (re-validate every config object), and one config
// object's status write (delayed to batch usage changes).
//
// Restart safety: Lead() processes the config, then rebuilds the pool state from the status of
// every Pylon Service in the synced cache (already-allocated first, oldest first), and only then
// starts the workers. Addresses a Service still shows in its status but no longer holds stay
// reserved ("quarantined") until the status write that removes them has succeeded, so an address
// is never handed to a second Service while the first still shows it.
//
// Writes: status first (PUT /status, conditional on the resourceVersion read), annotations second
// (merge patch); both only when they change something. 409 and other failures requeue the key with
// its rate limit. Events are recorded after the status write.
//
// Threading: informer handlers only enqueue. Workers serialise on `mu_` for the pure part.
//
// Memory: the Service cache keeps each Service trimmed to what the allocator reads
// (TrimServiceForCache) and CBOR-encoded (k8s::StoreOptions::compact): 10^4 Services take a few
// MB. The trimmed object is also the body of the status PUT; that is safe because a status
// update takes only metadata and status from the body (the server keeps its own spec), and the
// trim keeps all of metadata (but managedFields, which the server keeps when omitted) and status.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "allocator/allocator_metrics.h"
#include "allocator/decision.h"
#include "allocator/reconcile.h"
#include "allocator/work_item.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/worker.h"
#include "config/validate.h"
#include "k8s/client.h"
#include "k8s/event_recorder.h"
#include "k8s/informer.h"
#include "k8s/workqueue.h"
#include "pool/allocator.h"

namespace pylon::allocator {

// Drops from a Service what neither model::ParseService nor the writes read: every spec field
// but type, loadBalancerIP, loadBalancerClass, ipFamilies, ipFamilyPolicy, externalTrafficPolicy
// and ports[].{port,protocol}; metadata.managedFields. Keeps apiVersion, kind, the rest of
// metadata and status. A field ParseService starts reading must be added here.
void TrimServiceForCache(Json& service);

struct ControllerOptions {
  std::string install_namespace = "purelb-system";
  int workers = 8;
  // Delay before a config object's status is rewritten after its usage changed (batches bursts).
  Duration config_status_delay = std::chrono::seconds(1);
  k8s::RateLimitOptions rate_limit{std::chrono::milliseconds(5), std::chrono::seconds(30)};
  // Probe ahead (probe_ahead.h): the next addresses per ServiceGroup and family shown in
  // status.probeAhead for the agents to probe in the background. 0 = off.
  std::size_t probe_ahead = 4;
  // Informer watch timeout lower bound (tests may shorten it).
  Duration min_watch_timeout = std::chrono::minutes(5);
};

class Controller {
 public:
  Controller(k8s::Client& client, k8s::EventRecorder& recorder, AllocatorMetrics& metrics,
             ControllerOptions opts, const Clock& clock = SystemClock::Instance());
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informers (caches fill; nothing is processed before Lead()).
  void StartInformers();
  bool WaitForSync(Duration timeout) const;
  bool Synced() const;
  // Becomes the active controller: config, rebuild, enqueue every Service, start the workers.
  // Requires synced informers.
  void Lead();
  // Stops writing at once (leadership lost or shutdown), then stops workers and informers.
  void Stop();

  // Introspection for tests and logs.
  struct Snapshot {
    std::size_t services_holding = 0;
    std::size_t addresses = 0;
    std::size_t rebuild_conflicts = 0;
  };
  Snapshot snapshot() const;

 private:
  // What processing one WorkItem left: done (forget its failures) or retry (rate-limited).
  enum class SyncState { kDone, kRetry };
  void Enqueue(const WorkItem& item);
  void EnqueueService(const Json& obj);
  void WorkerLoop();
  SyncState Process(const WorkItem& item);
  SyncState ProcessService(const ObjectKey& service);
  SyncState ProcessConfig();
  SyncState ProcessConfigStatus(const config::ConfigKey& key);
  void Rebuild();
  // A node lease was added, updated or deleted: re-reads it; when a subnet newly went live,
  // requeues the multi-pool Services.
  void LeaseChanged(const Json& lease, bool deleted);
  // Under mu_: the live node subnets at `now` (recomputed once a lease may have expired).
  const NodeSubnets& NodeSubnetsLocked(WallTime now) PYLON_REQUIRES(mu_);
  // Every cached Service that parses, decoded one at a time (never the whole cache as JSON).
  std::vector<model::Service> ServiceViews() const;

  // ServiceViews with our own writes the cache has not caught up with yet (ServiceObject).
  std::vector<model::Service> LatestServiceViews();
  // Under mu_: holds the addresses Services show in the pools of `pools` (just come into force)
  // for every Service holding nothing yet, oldest first, before anything else is allocated there.
  void AdoptShownLocked(const std::vector<model::Service>& views,
                        const std::set<std::string>& pools) PYLON_REQUIRES(mu_);
  // The Service as last known: our own last write if the cache has not caught up with it yet.
  std::optional<Json> ServiceObject(const std::string& key);
  void RememberWrite(const std::string& key, const std::string& rv_before, const Json& obj);
  // Under mu_: quarantine helpers.
  // Frees the Service's quarantined addresses; adds their pool keys to `pools`.
  void ReleaseQuarantineLocked(const std::string& svc_key, std::set<std::string>* pools)
      PYLON_REQUIRES(mu_);
  void QuarantineLocked(const std::string& svc_key, const net::IpAddress& ip) PYLON_REQUIRES(mu_);
  // Under mu_: metrics and a delayed status write for a pool whose usage changed; when addresses
  // were freed there, appends the Services refused in that pool to `retry`.
  void PoolChangedLocked(const std::string& pool_key, bool freed, std::vector<std::string>* retry)
      PYLON_REQUIRES(mu_);
  void UpdatePoolMetricsLocked(const std::string& pool_key) PYLON_REQUIRES(mu_);
  // Under mu_: the refusal and kept bookkeeping (refused_, refused_pool_, kept_) for the
  // Service's new decision.
  void NoteOutcomeLocked(const std::string& key, const Decision& d) PYLON_REQUIRES(mu_);
  // Under mu_: keeps out of the pools the addresses live nodes found taken ahead of any Service
  // (probe_ahead.h); schedules the status of the pools that changed.
  void SyncTakenAheadLocked(std::vector<std::string>* retry) PYLON_REQUIRES(mu_);
  std::string Now() const;
  bool Writing() const { return leading_.load() && !stopping_.load(); }
  void CountApiError(const char* verb, const Error& e);

  k8s::Client& client_;
  k8s::EventRecorder& recorder_;
  AllocatorMetrics& metrics_;
  const ControllerOptions opts_;
  const Clock& clock_;
  const ReconcileContext ctx_;

  k8s::BasicWorkQueue<WorkItem> queue_;
  std::unique_ptr<k8s::Informer> services_;
  std::unique_ptr<k8s::Informer> groups_;
  std::unique_ptr<k8s::Informer> classes_;
  std::unique_ptr<k8s::Informer> leases_;
  std::vector<std::unique_ptr<Worker>> workers_ PYLON_GUARDED_BY(life_mu_);
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};

  Mutex life_mu_;     // serialises Lead() and Stop() (workers_)
  mutable Mutex mu_;  // guards everything below
  config::InForceConfig config_ PYLON_GUARDED_BY(mu_);
  std::map<config::ConfigKey, config::ObjectStatus> statuses_ PYLON_GUARDED_BY(mu_);
  // Pool key -> its object.
  std::map<std::string, config::ConfigKey> pool_objects_ PYLON_GUARDED_BY(mu_);
  pool::Allocator pool_ PYLON_GUARDED_BY(mu_);
  // Address conflicts reported by the agents (conflict_book.h).
  ConflictBook conflicts_ PYLON_GUARDED_BY(mu_);
  // Services refused while their group/class exists, per pool key: retried on a release there.
  std::map<std::string, std::set<std::string>> refused_ PYLON_GUARDED_BY(mu_);
  // Service key -> pool key in refused_.
  std::map<std::string, std::string> refused_pool_ PYLON_GUARDED_BY(mu_);
  // Services that keep what they show while their group/class is not in force (Outcome::kKept):
  // requeued on every config change.
  std::set<std::string> kept_ PYLON_GUARDED_BY(mu_);
  // Addresses a Service still shows but no longer holds, held as pool reservations of kind
  // kQuarantine (pool/reservation.h).
  std::map<std::string, std::vector<net::IpAddress>> quarantine_ PYLON_GUARDED_BY(mu_);
  struct Written {
    std::set<std::string> superseded;  // RVs the cache may still show
    k8s::PackedJson object;            // trimmed like the cache
  };
  std::map<std::string, Written> written_ PYLON_GUARDED_BY(mu_);
  std::size_t rebuild_conflicts_ PYLON_GUARDED_BY(mu_) = 0;
  // Node leases, sorted by node name, and the live subnets computed from them.
  std::vector<NodeLease> node_leases_ PYLON_GUARDED_BY(mu_);
  NodeSubnets node_subnets_ PYLON_GUARDED_BY(mu_);
  bool node_subnets_dirty_ PYLON_GUARDED_BY(mu_) = true;
  // The live nodes when the found-taken addresses were last applied (SyncTakenAheadLocked).
  std::vector<std::string> taken_live_nodes_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon::allocator
