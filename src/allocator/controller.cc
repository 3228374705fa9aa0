#include "allocator/controller.h"

#include <algorithm>

#include "allocator/rebuild.h"
#include "allocator/service_writes.h"
#include "common/log.h"
#include "common/object_key.h"
#include "common/time.h"
#include "k8s/field_mask.h"
#include "model/service.h"

namespace pylon::allocator {

namespace {

// True when an update of a config object changed something other than its status.
bool ConfigSpecChanged(const Json& a, const Json& b) {
  auto spec = [](const Json& o) -> Json {
    auto it = o.find("spec");
    return it == o.end() ? Json() : *it;
  };
  auto gen = [](const Json& o) { return FindInt(o, {"metadata", "generation"}); };
  return spec(a) != spec(b) || gen(a) != gen(b) || k8s::Uid(a) != k8s::Uid(b);
}

}  // namespace

void TrimServiceForCache(Json& service) {
  static const k8s::FieldMask mask = k8s::FieldMask::Of(
      {"apiVersion", "kind", "metadata", "status", "spec.type", "spec.loadBalancerIP",
       "spec.loadBalancerClass", "spec.ipFamilies", "spec.ipFamilyPolicy",
       "spec.externalTrafficPolicy", "spec.ports.port", "spec.ports.protocol"});
  mask.Apply(service);
  if (auto it = service.find("metadata"); it != service.end() && it->is_object()) {
    it->erase("managedFields");
  }
}

Controller::Controller(k8s::Client& client, k8s::EventRecorder& recorder, AllocatorMetrics& metrics,
                       ControllerOptions opts, const Clock& clock)
    : client_(client),
      recorder_(recorder),
      metrics_(metrics),
      opts_(std::move(opts)),
      clock_(clock),
      ctx_{opts_.install_namespace},
      queue_(clock, opts_.rate_limit) {
  auto make = [&](const k8s::Resource& res, const std::string& ns, bool services) {
    k8s::InformerOptions io;
    io.resource = res;
    io.ns = ns;
    io.min_watch_timeout = opts_.min_watch_timeout;
    if (services) {
      io.transform = TrimServiceForCache;
      io.compact = true;
    }
    return std::make_unique<k8s::Informer>(client_, io, clock_);
  };
  services_ = make(k8s::resources::Services(), "", true);
  groups_ = make(k8s::resources::ServiceGroups(), opts_.install_namespace, false);
  classes_ = make(k8s::resources::LoadBalancerClasses(), "", false);
  leases_ = make(k8s::resources::Leases(), opts_.install_namespace, false);

  services_->AddHandlers({
      [this](const Json& o) { EnqueueService(o); },
      [this](const Json&, const Json& o) { EnqueueService(o); },
      [this](const Json& o) { EnqueueService(o); },
  });
  // A spec change re-validates everything. A status-only change (ours coming back, or another
  // writer's) re-checks that object's status: the status is planned against the cached object, so
  // a cache that catches up with a status other than the one in force must be corrected, never
  // taken as the last word (the soak saw a status left stale after a leader change).
  auto config_handlers = [this](config::ObjectKind kind) {
    return k8s::EventHandlers{
        [this](const Json&) { Enqueue(WorkItem::Config()); },
        [this, kind](const Json& a, const Json& b) {
          if (ConfigSpecChanged(a, b)) {
            Enqueue(WorkItem::Config());
          } else {
            const ObjectKey k = k8s::KeyOf(b);
            Enqueue(WorkItem::ConfigStatus({kind, k.ns, k.name}));
          }
        },
        [this](const Json&) { Enqueue(WorkItem::Config()); },
    };
  };
  groups_->AddHandlers(config_handlers(config::ObjectKind::kServiceGroup));
  classes_->AddHandlers(config_handlers(config::ObjectKind::kLoadBalancerClass));
  leases_->AddHandlers({
      [this](const Json& o) { LeaseChanged(o, false); },
      [this](const Json&, const Json& o) { LeaseChanged(o, false); },
      [this](const Json& o) { LeaseChanged(o, true); },
  });
}

Controller::~Controller() { Stop(); }

void Controller::StartInformers() {
  groups_->Start();
  classes_->Start();
  leases_->Start();
  services_->Start();
}

bool Controller::Synced() const {
  return services_->HasSynced() && groups_->HasSynced() && classes_->HasSynced() &&
         leases_->HasSynced();
}

bool Controller::WaitForSync(Duration timeout) const {
  const SteadyTime deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto* inf : {groups_.get(), classes_.get(), leases_.get(), services_.get()}) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left < Duration::zero() || !inf->WaitForSync(left)) return false;
  }
  return true;
}

void Controller::Enqueue(const WorkItem& item) {
  if (!leading_.load()) return;  // Lead() enqueues everything it finds
  queue_.Add(item);
}

void Controller::EnqueueService(const Json& obj) { Enqueue(WorkItem::Service(k8s::KeyOf(obj))); }

void Controller::Lead() {
  MutexLock life(life_mu_);
  if (stopping_.load() || leading_.load()) return;
  log::Info("leading: rebuilding state from Service status");
  ProcessConfig();
  Rebuild();
  leading_.store(true);
  metrics_.SetLeader(true);
  // Every Service, already-allocated first, oldest first; then the config statuses.
  std::vector<model::Service> views = ServiceViews();
  std::vector<const model::Service*> ptrs;
  for (const auto& v : views) ptrs.push_back(&v);
  for (const model::Service* s : StartupOrder(ptrs)) queue_.Add(WorkItem::ServiceNamed(s->Key()));
  {
    MutexLock lock(mu_);
    for (const auto& [k, st] : statuses_) queue_.Add(WorkItem::ConfigStatus(k));
  }
  queue_.Add(WorkItem::Config());
  for (int i = 0; i < std::max(1, opts_.workers); ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->Start([this] { WorkerLoop(); });
  }
  log::Info("leading: workers started", {{"services", std::to_string(views.size())}});
}

std::vector<model::Service> Controller::LatestServiceViews() {
  std::vector<std::string> keys;
  services_->store().ForEach([&](const Json& o) { keys.push_back(k8s::KeyOf(o).String()); });
  std::vector<model::Service> views;
  views.reserve(keys.size());
  for (const auto& k : keys) {
    std::optional<Json> o = ServiceObject(k);
    if (!o) continue;
    if (auto v = model::ParseService(*o)) views.push_back(std::move(*v));
  }
  return views;
}

void Controller::AdoptShownLocked(const std::vector<model::Service>& views,
                                  const std::set<std::string>& pools) {
  std::vector<const model::Service*> ptrs;
  for (const auto& v : views) {
    auto k = pool::ServiceKey::Make(v.ns, v.name);
    if (k && !pool_.PoolOf(*k)) ptrs.push_back(&v);
  }
  std::vector<pool::ExistingRecord> records = RebuildRecords(StartupOrder(ptrs), config_);
  std::erase_if(records, [&](const pool::ExistingRecord& r) { return !pools.count(r.pool); });
  if (records.empty()) return;
  const auto conflicts = pool_.Adopt(records);
  for (const auto& c : conflicts) {
    log::Warn("adopt: address not restored", {{"service", c.record.service.ToString()},
                                              {"address", c.record.address.ToString()},
                                              {"error", c.error.message()}});
  }
  log::Info("config: addresses Services show held again in pools back in force",
            {{"records", std::to_string(records.size())},
             {"conflicts", std::to_string(conflicts.size())}});
}

std::vector<model::Service> Controller::ServiceViews() const {
  std::vector<model::Service> views;
  views.reserve(services_->store().Size());
  services_->store().ForEach([&](const Json& o) {
    if (auto v = model::ParseService(o)) views.push_back(std::move(*v));
  });
  return views;
}

void Controller::Rebuild() {
  std::vector<model::Service> views = ServiceViews();
  std::vector<const model::Service*> ptrs;
  for (const auto& v : views) ptrs.push_back(&v);
  MutexLock lock(mu_);
  auto records = RebuildRecords(StartupOrder(ptrs), config_);
  auto conflicts = pool_.Rebuild(records);
  quarantine_.clear();
  rebuild_conflicts_ = conflicts.size();
  std::vector<std::string> unused;  // every Service is enqueued after the rebuild
  SyncTakenAheadLocked(&unused);
  for (const auto& c : conflicts) {
    log::Warn("rebuild: address not restored", {{"service", c.record.service.ToString()},
                                                {"address", c.record.address.ToString()},
                                                {"error", c.error.message()}});
  }
  for (const auto& [pk, obj] : pool_objects_) UpdatePoolMetricsLocked(pk);
  log::Info("rebuild done", {{"records", std::to_string(records.size())},
                             {"conflicts", std::to_string(conflicts.size())},
                             {"addresses", std::to_string(pool_.address_count())}});
}

void Controller::Stop() {
  const bool was = stopping_.exchange(true);
  leading_.store(false);
  if (!was) metrics_.SetLeader(false);
  queue_.ShutDown();
  MutexLock life(life_mu_);
  for (auto& w : workers_) w->Stop();  // each returns once the queue is shut down
  workers_.clear();
  if (services_) services_->Stop();
  if (groups_) groups_->Stop();
  if (classes_) classes_->Stop();
  if (leases_) leases_->Stop();
}

Controller::Snapshot Controller::snapshot() const {
  MutexLock lock(mu_);
  return Snapshot{pool_.service_count(), pool_.address_count(), rebuild_conflicts_};
}

void Controller::WorkerLoop() {
  while (auto key = queue_.Get()) {
    if (stopping_.load()) {
      queue_.Done(*key);
      continue;
    }
    const SyncState r = Process(*key);
    if (r == SyncState::kRetry && !stopping_.load()) {
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
    }
    queue_.Done(*key);
    metrics_.SetQueueDepth(queue_.Len() + queue_.WaitingLen());
  }
}

Controller::SyncState Controller::Process(const WorkItem& item) {
  switch (item.kind) {
    case WorkItem::Kind::kConfig:
      return ProcessConfig();
    case WorkItem::Kind::kConfigStatus:
      return ProcessConfigStatus(item.config);
    case WorkItem::Kind::kService:
      return ProcessService(item.service);
  }
  return SyncState::kDone;
}

std::string Controller::Now() const { return FormatTime(clock_.WallNow()); }

void Controller::CountApiError(const char* verb, const Error& e) {
  if (e.code() == ErrorCode::kConflict) {
    metrics_.Conflict();
  } else {
    metrics_.ApiError(verb, ErrorCodeName(e.code()));
  }
}

// ---------------------------------------------------------------------------------------------
// Services

std::optional<Json> Controller::ServiceObject(const std::string& key) {
  std::optional<Json> cached = services_->store().Get(key);
  MutexLock lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  if (cached && it->second.superseded.count(k8s::ResourceVersion(*cached))) {
    return it->second.object.Unpack();
  }
  written_.erase(it);
  return cached;
}

void Controller::RememberWrite(const std::string& key, const std::string& rv_before,
                               const Json& obj) {
  Json trimmed = obj;
  TrimServiceForCache(trimmed);
  k8s::PackedJson packed = k8s::PackedJson::Pack(trimmed);
  MutexLock lock(mu_);
  Written& w = written_[key];
  w.superseded.insert(rv_before);
  w.superseded.erase(k8s::ResourceVersion(obj));
  w.object = std::move(packed);
}

void Controller::ReleaseQuarantineLocked(const std::string& svc_key, std::set<std::string>* pools) {
  auto it = quarantine_.find(svc_key);
  if (it == quarantine_.end()) return;
  for (const auto& ip : it->second) {
    const std::string id = svc_key + "@" + ip.ToString();
    if (auto p = pool_.PoolOf(pool::ReservationHolder(pool::ReservationKind::kQuarantine, id))) {
      pools->insert(*p);
    }
    pool_.Unreserve(pool::ReservationKind::kQuarantine, id);
  }
  quarantine_.erase(it);
}

void Controller::QuarantineLocked(const std::string& svc_key, const net::IpAddress& ip) {
  auto match = config_.FindAddress(ip);
  if (!match || match->group == nullptr) return;
  if (pool_.Reserve(pool::ReservationKind::kQuarantine, svc_key + "@" + ip.ToString(),
                    PoolKey(match->group->key()), ip)) {
    quarantine_[svc_key].push_back(ip);
  }
}

void Controller::UpdatePoolMetricsLocked(const std::string& pool_key) {
  auto it = pool_objects_.find(pool_key);
  if (it == pool_objects_.end()) return;
  for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
    if (auto st = pool_.Stats(pool_key, f)) {
      metrics_.SetPool(config::KindName(it->second.kind), it->second.name, f, st->size, st->in_use);
    }
  }
}

void Controller::PoolChangedLocked(const std::string& pool_key, bool freed,
                                   std::vector<std::string>* retry) {
  if (pool_key.empty()) return;
  UpdatePoolMetricsLocked(pool_key);
  auto it = pool_objects_.find(pool_key);
  if (it != pool_objects_.end()) {
    queue_.AddAfter(WorkItem::ConfigStatus(it->second), opts_.config_status_delay);
  }
  if (!freed) return;
  auto r = refused_.find(pool_key);
  if (r == refused_.end()) return;
  for (const auto& k : r->second) retry->push_back(k);
}

void Controller::NoteOutcomeLocked(const std::string& key, const Decision& d) {
  if (auto rp = refused_pool_.find(key); rp != refused_pool_.end()) {
    refused_[rp->second].erase(key);
    refused_pool_.erase(rp);
  }
  if (d.outcome == Outcome::kRefused && !d.pool_key.empty()) {
    refused_[d.pool_key].insert(key);
    refused_pool_[key] = d.pool_key;
  }
  if (d.outcome == Outcome::kKept) {
    kept_.insert(key);
  } else {
    kept_.erase(key);
  }
}

Controller::SyncState Controller::ProcessService(const ObjectKey& service) {
  const std::string key = service.String();
  std::optional<Json> obj = ServiceObject(key);
  auto skey = pool::ServiceKey::Make(service.ns, service.name);
  if (!skey) return SyncState::kDone;

  std::vector<std::string> retry;  // refused Services to retry after a release
  Decision d;
  std::optional<model::Service> view;
  {
    MutexLock lock(mu_);
    std::set<std::string> touched;  // pools whose usage may have changed
    if (auto p = pool_.PoolOf(*skey)) touched.insert(*p);
    const std::size_t before = pool_.address_count();
    ReleaseQuarantineLocked(key, &touched);
    if (!obj) {
      d = ReconcileGone(*skey, pool_, &conflicts_);
    } else {
      auto parsed = model::ParseService(*obj);
      if (!parsed) {
        log::Warn("skipping malformed Service",
                  {{"service", key}, {"error", parsed.error().message()}});
        return SyncState::kDone;
      }
      view = std::move(*parsed);
      const WallTime now = clock_.WallNow();
      ServiceInput in{&*view, CurrentCondition(*obj), &conflicts_, now};
      in.node_subnets = &NodeSubnetsLocked(now);
      d = Reconcile(in, config_, pool_, ctx_);
      // What the Service still shows but nobody holds now stays reserved until it is written
      // away.
      for (const auto& ip : view->ingress) {
        if (!pool_.Lookup(ip)) QuarantineLocked(key, ip);
      }
    }
    if (!d.pool_key.empty()) touched.insert(d.pool_key);
    NoteOutcomeLocked(key, d);
    const bool freed = !d.released.empty() || pool_.address_count() < before;
    const bool changed =
        freed || !d.acquired.empty() || pool_.address_count() != before || d.conflicts_changed;
    if (changed) {
      for (const auto& p : touched) PoolChangedLocked(p, freed, &retry);
    }
  }
  if (!d.acquired.empty()) metrics_.Allocation();
  if (!d.released.empty()) metrics_.Release();
  if (d.outcome == Outcome::kRefused) metrics_.Rejection(ReasonName(d.reason));
  if (d.recheck_after) queue_.AddAfter(WorkItem::Service(service), *d.recheck_after);
  for (const auto& k : retry) {
    if (k != key) queue_.Add(WorkItem::ServiceNamed(k));
  }
  retry.clear();
  if (d.outcome != Outcome::kIgnored) {
    log::Debug("reconciled", {{"service", key},
                              {"outcome", std::string(OutcomeName(d.outcome))},
                              {"reason", std::string(ReasonName(d.reason))},
                              {"message", d.message}});
  }
  if (!obj) return SyncState::kDone;
  if (!Writing()) return SyncState::kDone;

  ServiceWrites w = PlanServiceWrites(*obj, d, Now());
  Json current = *obj;
  const k8s::ObjectReference ref = k8s::ObjectReference::For(k8s::resources::Services(), *obj);
  if (w.status) {
    const std::string rv_before = k8s::ResourceVersion(current);
    auto r = client_.UpdateStatus(k8s::resources::Services(), *w.status);
    if (!r) {
      CountApiError("update_status", r.error());
      log::Debug("status write failed", {{"service", key}, {"error", r.error().message()}});
      return SyncState::kRetry;
    }
    current = std::move(*r);
    RememberWrite(key, rv_before, current);
    log::Debug("status written",
               {{"service", key}, {"outcome", std::string(OutcomeName(d.outcome))}});
  }
  if (w.status) {
    // The status no longer shows what is quarantined for this Service.
    MutexLock lock(mu_);
    std::set<std::string> pools;
    ReleaseQuarantineLocked(key, &pools);
    for (const auto& p : pools) PoolChangedLocked(p, true, &retry);
  }
  for (const auto& k : retry) {
    if (k != key) queue_.Add(WorkItem::ServiceNamed(k));
  }
  if (w.status) {
    for (const auto& e : d.events) {
      recorder_.Event(ref, e.warning ? k8s::EventLevel::kWarning : k8s::EventLevel::kNormal,
                      e.reason, e.message);
    }
  }
  if (w.annotations && Writing()) {
    const std::string rv_before = k8s::ResourceVersion(current);
    auto r = client_.Patch(k8s::resources::Services(), service.ns, service.name,
                           k8s::PatchType::kMerge, *w.annotations, "");
    if (!r) {
      CountApiError("patch", r.error());
      log::Debug("annotation write failed", {{"service", key}, {"error", r.error().message()}});
      return SyncState::kRetry;
    }
    RememberWrite(key, rv_before, *r);
  }
  return SyncState::kDone;
}

}  // namespace pylon::allocator
