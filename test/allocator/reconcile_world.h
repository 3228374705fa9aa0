// The allocator's reconcile core driven the way the controller drives it, for scenario tests: one
// config and pool state, each Service reconciled as the API would show it after the previous
// reconciles' writes.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "allocator/conflict_book.h"
#include "allocator/rebuild.h"
#include "allocator/reconcile.h"
#include "allocator/service_writes.h"
#include "config/validate.h"
#include "test_objects.h"

namespace pylon::allocator::testing {

using json = nlohmann::json;

class World {
 public:
  explicit World(std::initializer_list<json> config_objects) {
    SetConfig(std::vector<json>(config_objects));
  }

  void SetConfig(std::vector<json> objects) {
    auto result = config::ValidateConfig(objects, config_);
    config_ = std::move(result.config);
    statuses_ = std::move(result.statuses);
    auto ev = pool_.SetPools(PoolDefinitions(config_));
    ASSERT_TRUE(ev.has_value()) << ev.error().message();
  }

  // Reconciles the Service as the API would show it after the previous reconciles' writes: the
  // spec from `s`, the status as last written (unless `s.ingress` overrides it).
  Decision Run(SvcSpec s) {
    const std::string key = s.ns + "/" + s.name;
    json obj = testing::ServiceJson(s);
    if (s.ingress.empty() && shown_.count(key)) obj["status"] = shown_[key];
    auto view = model::ParseService(obj);
    EXPECT_TRUE(view.has_value());
    ServiceInput in{&*view, CurrentCondition(obj)};
    in.node_subnets = &subnets_;
    Decision d = Reconcile(in, config_, pool_, ctx_);
    ServiceWrites w = PlanServiceWrites(obj, d, "2024-06-01T00:00:00Z");
    if (w.status) shown_[key] = (*w.status)["status"];
    last_writes_ = std::move(w);
    return d;
  }
  Decision Delete(const std::string& ns, const std::string& name) {
    shown_.erase(ns + "/" + name);
    return ReconcileGone(*pool::ServiceKey::Make(ns, name), pool_);
  }

  // The live node subnets multi-pool sees, e.g. {"192.0.2.0/24"}.
  void SetLiveSubnets(const std::vector<std::string>& prefixes) {
    subnets_ = {};
    for (const auto& p : prefixes) subnets_.live.push_back(*net::Prefix::Parse(p));
  }
  // Forgets the pool state and rebuilds it from what the Services show, as a restart does.
  std::size_t Restart(const std::vector<SvcSpec>& services) {
    std::vector<model::Service> views;
    for (const SvcSpec& s : services) {
      json obj = testing::ServiceJson(s);
      if (shown_.count(s.ns + "/" + s.name)) obj["status"] = shown_[s.ns + "/" + s.name];
      views.push_back(*model::ParseService(obj));
    }
    std::vector<const model::Service*> ptrs;
    for (const auto& v : views) ptrs.push_back(&v);
    auto records = RebuildRecords(StartupOrder(ptrs), config_);
    EXPECT_TRUE(pool_.Rebuild(records).empty());
    return records.size();
  }
  const ServiceWrites& last_writes() const { return last_writes_; }

  pool::Allocator& pool() { return pool_; }
  const config::InForceConfig& config() const { return config_; }
  const std::vector<config::ObjectStatus>& statuses() const { return statuses_; }

 private:
  config::InForceConfig config_;
  std::vector<config::ObjectStatus> statuses_;
  pool::Allocator pool_;
  ReconcileContext ctx_;
  std::map<std::string, json> shown_;
  NodeSubnets subnets_;
  ServiceWrites last_writes_;
};

// SmallDefaultGroup's config and pool, a ConflictBook and the default context (conflict hold: 5
// minutes): the conflict and probe-ahead scenarios reconcile Services over it at given wall times.
class ConflictWorld {
 public:
  ConflictWorld() {
    std::vector<json> objects = {SmallDefaultGroup()};
    config_ = config::ValidateConfig(objects, config_).config;
    EXPECT_TRUE(pool_.SetPools(PoolDefinitions(config_)).has_value());
  }
  // Reconciles the Service `obj` at wall time `now`.
  Decision ReconcileAt(const json& obj, WallTime now) {
    auto view = model::ParseService(obj);
    EXPECT_TRUE(view.has_value());
    ServiceInput in{&*view, CurrentCondition(obj), &book_, now};
    return Reconcile(in, config_, pool_, ctx_);
  }

  config::InForceConfig config_;
  pool::Allocator pool_;
  ConflictBook book_;
  ReconcileContext ctx_;
};

// The status of a valid object at generation 1, message "ok".
inline config::ObjectStatus ValidStatus() {
  config::ObjectStatus st;
  st.valid = true;
  st.message = "ok";
  st.observed_generation = 1;
  return st;
}

inline std::vector<std::string> Ips(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& ip : d.ingress) out.push_back(ip.ToString());
  return out;
}

inline std::vector<std::string> EventReasons(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& e : d.events) out.push_back(e.reason);
  return out;
}

struct Row {
  std::string what;
  SvcSpec svc;
  Outcome outcome;
  Reason reason;
  std::vector<std::string> ingress;  // for kAllocated
  bool gone = false;                 // the Service is deleted instead of reconciled
};

inline Row R(std::string what, SvcSpec svc, Outcome outcome, Reason reason = Reason::kNone,
             std::vector<std::string> ingress = {}, bool gone = false) {
  return Row{std::move(what), std::move(svc), outcome, reason, std::move(ingress), gone};
}

inline void Walk(World& w, const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Decision d = r.gone ? w.Delete(r.svc.ns, r.svc.name) : w.Run(r.svc);
    EXPECT_EQ(OutcomeName(d.outcome), OutcomeName(r.outcome)) << d.message;
    EXPECT_EQ(ReasonName(d.reason), ReasonName(r.reason)) << d.message;
    if (r.outcome == Outcome::kAllocated) {
      EXPECT_EQ(Ips(d), r.ingress);
    }
    if (r.outcome == Outcome::kRefused) {
      EXPECT_TRUE(d.ingress.empty());
      ASSERT_TRUE(d.condition.has_value());
      EXPECT_FALSE(d.condition->status);
      EXPECT_EQ(d.condition->reason, ReasonName(r.reason));
      // No half-allocation: nothing is held after a refusal.
      EXPECT_TRUE(w.pool().AddressesOf(*pool::ServiceKey::Make(r.svc.ns, r.svc.name)).empty());
    }
  }
}

inline SvcSpec Dual(std::string name, std::string policy = "RequireDualStack") {
  SvcSpec s;
  s.name = std::move(name);
  s.families = {"IPv4", "IPv6"};
  s.policy = std::move(policy);
  s.annotations = {{"purelb.io/service-group", "localdual"}};
  return s;
}

inline SvcSpec Lace(std::string name, std::string ips = "") {
  SvcSpec s;
  s.name = std::move(name);
  s.cls = "lace-cni.io/public";
  s.families = {"IPv4", "IPv6"};
  s.policy = "PreferDualStack";
  if (!ips.empty()) s.annotations["loadbalancer.lace-cni.io/loadBalancerIPs"] = ips;
  return s;
}

}  // namespace pylon::allocator::testing
