// The controller's configuration side (controller.h): ServiceGroups and LoadBalancerClasses
// into the config in force and the pool definitions (ProcessConfig), their status writes
// (ProcessConfigStatus), and the node leases multi-pool and probe ahead read (LeaseChanged).
#include <algorithm>

#include "allocator/config_status.h"
#include "allocator/controller.h"
#include "allocator/group_resolution.h"
#include "allocator/multi_pool.h"
#include "allocator/probe_ahead.h"
#include "allocator/rebuild.h"
#include "common/log.h"
#include "common/object_key.h"
#include "common/time.h"
#include "election/node_name.h"
#include "k8s/lease.h"
#include "k8s/retry.h"
#include "model/probe_ahead.h"
#include "model/service.h"

namespace pylon::allocator {

// ---------------------------------------------------------------------------------------------
// Node leases (multi-pool)

void Controller::LeaseChanged(const Json& lease, bool deleted) {
  auto node = election::NodeFromLeaseName(k8s::Name(lease));
  if (!node) return;  // not a node lease (e.g. the allocator's own leader-election lease)
  std::optional<NodeLease> read;
  if (!deleted) {
    auto spec = k8s::ParseLeaseSpec(lease);
    const k8s::LeaseSpec read_spec = spec ? *spec : k8s::LeaseSpec{};  // unreadable: not live
    read = ReadNodeLease(
        node->str(), read_spec.holder_identity, read_spec.lease_duration_seconds,
        read_spec.renew_time,
        FindString(lease, {"metadata", "annotations", election::kSubnetsAnnotation}).value_or(""));
    read->probe_ahead_annotation =
        FindString(lease, {"metadata", "annotations", model::kAnnProbeAhead}).value_or("");
    if (!spec) {
      read->issues.push_back("lease of node " + node->str() +
                             ": spec unreadable, not live: " + spec.error().message());
    }
  }
  std::vector<std::string> retry;
  bool grew = false;
  {
    MutexLock lock(mu_);
    auto it =
        std::lower_bound(node_leases_.begin(), node_leases_.end(), node->str(),
                         [](const NodeLease& l, const std::string& name) { return l.node < name; });
    const bool known = it != node_leases_.end() && it->node == node->str();
    // Problems are logged when they first appear, not on every renewal.
    if (read && (!known || it->issues != read->issues)) {
      for (const auto& issue : read->issues) log::Warn("node lease", {{"issue", issue}});
    }
    const std::vector<net::Prefix> before = NodeSubnetsLocked(clock_.WallNow()).live;
    const std::string probed_before = known ? it->probe_ahead_annotation : std::string();
    const std::string probed_after = read ? read->probe_ahead_annotation : std::string();
    if (read && known) {
      *it = std::move(*read);
    } else if (read) {
      node_leases_.insert(it, std::move(*read));
    } else if (known) {
      node_leases_.erase(it);
    }
    node_subnets_dirty_ = true;
    for (const auto& p : NodeSubnetsLocked(clock_.WallNow()).live) {
      if (std::find(before.begin(), before.end(), p) == before.end()) grew = true;
    }
    // Only when a list of found-taken addresses or the live nodes changed (a renewal is neither).
    if (probed_before != probed_after ||
        NodeSubnetsLocked(clock_.WallNow()).live_nodes != taken_live_nodes_) {
      SyncTakenAheadLocked(&retry);
    }
  }
  if (leading_.load()) {
    for (const auto& k : retry) queue_.Add(WorkItem::ServiceNamed(k));
  }
  if (!grew || !leading_.load()) return;
  // A range may have become active: the multi-pool Services get their address from it.
  const std::vector<model::Service> views = ServiceViews();
  MutexLock lock(mu_);
  std::size_t n = 0;
  for (const model::Service& v : views) {
    if (model::SelectOwner(v).owner != model::Owner::kServiceGroup) continue;
    auto skey = pool::ServiceKey::Make(v.ns, v.name);
    if (!skey) continue;
    GroupResolution res =
        ResolveServiceGroup(v, config_, opts_.install_namespace,
                            HeldServiceGroup(*skey, pool_, config_, opts_.install_namespace));
    const config::Group* g = config_.FindServiceGroup(opts_.install_namespace, res.name);
    if (g == nullptr || !MultiPoolInEffect(v, *g)) continue;
    queue_.Add(WorkItem::ServiceNamed(v.Key()));
    ++n;
  }
  log::Info("node subnets went live; multi-pool Services requeued",
            {{"services", std::to_string(n)}});
}

void Controller::SyncTakenAheadLocked(std::vector<std::string>* retry) {
  taken_live_nodes_ = NodeSubnetsLocked(clock_.WallNow()).live_nodes;
  std::set<std::string> changed, freed;
  ApplyTakenAhead(TakenFromLeases(node_leases_, clock_.WallNow()), config_, ctx_.conflict_hold,
                  conflicts_, pool_, &changed, &freed);
  std::set<std::string> pools = changed;
  pools.insert(freed.begin(), freed.end());
  for (const auto& p : pools) PoolChangedLocked(p, freed.count(p) > 0, retry);
}

const NodeSubnets& Controller::NodeSubnetsLocked(WallTime now) {
  if (node_subnets_dirty_ || (node_subnets_.next_expiry && now >= *node_subnets_.next_expiry)) {
    node_subnets_ = LiveNodeSubnets(node_leases_, now);
    node_subnets_dirty_ = false;
  }
  return node_subnets_;
}

// ---------------------------------------------------------------------------------------------
// Config

Controller::SyncState Controller::ProcessConfig() {
  std::vector<Json> candidates = groups_->store().List();
  for (auto& c : classes_->store().List()) candidates.push_back(std::move(c));
  for (auto& c : candidates) {
    // List items from the cache may lack kind/apiVersion; the parser checks them when present.
    if (!c.contains("kind")) {
      c["kind"] = FindString(c, {"metadata", "namespace"}) ? "ServiceGroup" : "LoadBalancerClass";
    }
  }
  std::set<std::string> changed_pools;
  std::set<std::string> new_pools;  // not in force before
  std::vector<WorkItem> status_keys;
  std::vector<pool::Eviction> evictions;
  std::vector<std::string> retry;
  // For the adoption of what Services show in a pool that comes (back) into force. At Lead() the
  // rebuild does it.
  const std::vector<model::Service> latest =
      leading_.load() ? LatestServiceViews() : std::vector<model::Service>{};
  {
    MutexLock lock(mu_);
    config::ValidationResult vr = config::ValidateConfig(candidates, config_);
    for (const auto& [k, g] : config_.groups()) {
      const config::Group* ng = vr.config.Find(k);
      if (ng == nullptr || !ng->SameContent(g)) changed_pools.insert(PoolKey(k));
    }
    for (const auto& [k, g] : vr.config.groups()) {
      const config::Group* og = config_.Find(k);
      if (og == nullptr) {
        changed_pools.insert(PoolKey(k));
        new_pools.insert(PoolKey(k));
      }
    }
    std::map<config::ConfigKey, config::ObjectStatus> statuses;
    for (auto& st : vr.statuses) {
      if (!st.valid) {
        log::Warn("config rejected", {{"object", st.key.ToString()}, {"message", st.message}});
      }
      status_keys.push_back(WorkItem::ConfigStatus(st.key));
      statuses[st.key] = std::move(st);
    }
    statuses_ = std::move(statuses);
    // Pools no longer in force lose their metrics.
    for (const auto& [pk, ok] : pool_objects_) {
      if (vr.config.Find(ok) == nullptr) metrics_.RemovePool(config::KindName(ok.kind), ok.name);
    }
    config_ = std::move(vr.config);
    pool_objects_.clear();
    for (const auto& [k, g] : config_.groups()) pool_objects_[PoolKey(k)] = k;
    if (!changed_pools.empty()) {
      auto ev = pool_.SetPools(PoolDefinitions(config_));
      if (!ev) {
        log::Error("pool definitions rejected", {{"error", ev.error().message()}});
      } else {
        evictions = std::move(*ev);
        if (!new_pools.empty() && leading_.load()) AdoptShownLocked(latest, new_pools);
      }
      SyncTakenAheadLocked(&retry);
      for (const auto& [pk, ok] : pool_objects_) UpdatePoolMetricsLocked(pk);
      for (const auto& [pk, keys] : refused_) {
        for (const auto& k : keys) retry.push_back(k);
      }
      for (const auto& k : kept_) retry.push_back(k);
    }
  }
  if (!changed_pools.empty()) {
    log::Info("config in force changed", {{"changed", std::to_string(changed_pools.size())},
                                          {"evicted", std::to_string(evictions.size())}});
  }
  for (const auto& k : status_keys) queue_.Add(k);
  if (!leading_.load()) return SyncState::kDone;
  for (const auto& e : evictions) queue_.Add(WorkItem::ServiceNamed(e.service.ToString()));
  for (const auto& k : retry) queue_.Add(WorkItem::ServiceNamed(k));
  if (!changed_pools.empty()) {
    // Services selecting a changed (or new, or removed) group or class. A config change is rare;
    // per-Service events never come here.
    // ServiceGroup Services are resolved against the new config (purelb.io/v2 namespaces may
    // move an unannotated Service's choice) and also requeued when the pool they hold changed.
    const std::vector<model::Service> views = ServiceViews();
    MutexLock lock(mu_);
    for (const model::Service& v : views) {
      model::Selection sel = model::SelectOwner(v);
      if (sel.owner == model::Owner::kNone) continue;
      auto skey = pool::ServiceKey::Make(v.ns, v.name);
      if (!skey) continue;
      if (auto held = pool_.PoolOf(*skey); held && changed_pools.count(*held)) {
        queue_.Add(WorkItem::ServiceNamed(v.Key()));
        continue;
      }
      config::ConfigKey k;
      if (sel.owner == model::Owner::kServiceGroup) {
        GroupResolution res =
            ResolveServiceGroup(v, config_, opts_.install_namespace,
                                HeldServiceGroup(*skey, pool_, config_, opts_.install_namespace));
        k = {config::ObjectKind::kServiceGroup, opts_.install_namespace, res.name};
      } else {
        k = {config::ObjectKind::kLoadBalancerClass, "", sel.name};
      }
      if (changed_pools.count(PoolKey(k))) queue_.Add(WorkItem::ServiceNamed(v.Key()));
    }
  }
  return SyncState::kDone;
}

Controller::SyncState Controller::ProcessConfigStatus(const config::ConfigKey& okey) {
  const bool is_group = okey.kind == config::ObjectKind::kServiceGroup;
  const k8s::Resource& res =
      is_group ? k8s::resources::ServiceGroups() : k8s::resources::LoadBalancerClasses();
  std::optional<Json> obj = is_group ? groups_->store().Get(okey.namespace_, okey.name)
                                     : classes_->store().Get("", okey.name);
  if (!obj) return SyncState::kDone;
  config::ObjectStatus st;
  PoolUsage usage;
  {
    MutexLock lock(mu_);
    auto it = statuses_.find(okey);
    if (it == statuses_.end()) return SyncState::kDone;
    st = it->second;
    if (st.in_force_generation) {
      const std::string pk = PoolKey(okey);
      if (auto v4 = pool_.Stats(pk, net::Family::kV4)) usage.in_use_v4 = v4->in_use;
      if (auto v6 = pool_.Stats(pk, net::Family::kV6)) usage.in_use_v6 = v6->in_use;
      usage.conflicts = conflicts_.ForPool(pk);
      if (const config::Group* g = config_.Find(okey)) {
        usage.in_force = *g;
        // Probe ahead: pools of local addresses (virtual addresses are never probed).
        if (opts_.probe_ahead > 0 && ProbedAhead(*g)) {
          usage.probe_ahead = true;
          if (auto n = pool_.NextFree(pk, net::Family::kV4, opts_.probe_ahead)) usage.next_v4 = *n;
          if (auto n = pool_.NextFree(pk, net::Family::kV6, opts_.probe_ahead)) usage.next_v6 = *n;
        }
      }
    }
  }
  // The status describes the version it was computed from; a newer one is re-validated first.
  if (FindInt(*obj, {"metadata", "generation"}).value_or(0) != st.observed_generation) {
    return SyncState::kDone;
  }
  if (!Writing()) return SyncState::kDone;
  // Planned against the cached object first; on 409 (the cache is behind the server, e.g. our
  // previous status write has not come back through a cut or relisting watch yet) against the
  // object read from the server, so a stale cache can never hold the status back. The informer
  // does not requeue a status-only change, and a conflict retried with the cache's version would
  // only grow the key's backoff (the status inUse stayed 0 in allocator_chaos_test).
  Json current = std::move(*obj);
  ConfigStatusWrite w;
  bool stale_generation = false;
  Status written = k8s::RetryOnConflict([&]() -> Status {
    w = PlanConfigStatus(current, st, usage, Now());
    if (!w.object) return Ok();
    auto r = client_.UpdateStatus(res, *w.object);
    if (r) {
      log::Debug("config status written", {{"object", okey.ToString()}});
      return Ok();
    }
    CountApiError("update_config_status", r.error());
    log::Debug("config status write failed",
               {{"object", okey.ToString()}, {"error", r.error().message()}});
    if (r.error().code() != ErrorCode::kConflict) return Fail(r.error());
    auto fresh = client_.Get(res, okey.namespace_, okey.name);
    if (!fresh) {
      CountApiError("get_config", fresh.error());
      log::Debug("config object read failed",
                 {{"object", okey.ToString()}, {"error", fresh.error().message()}});
      return Fail(fresh.error());
    }
    if (FindInt(*fresh, {"metadata", "generation"}).value_or(0) != st.observed_generation) {
      stale_generation = true;  // a newer version is re-validated first (the informer sees it)
      return Ok();
    }
    current = std::move(*fresh);
    return Fail(r.error());
  });
  if (stale_generation) return SyncState::kDone;
  if (!written) return SyncState::kRetry;
  if (w.event) {
    recorder_.Event(k8s::ObjectReference::For(res, current), k8s::EventLevel::kWarning,
                    w.event->reason, w.event->message);
  }
  return SyncState::kDone;
}

}  // namespace pylon::allocator
