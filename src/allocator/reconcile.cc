// The Service reconcile: ReconcileService runs the phases of reconcile_phases.h and turns their
// result (or the refusal, release or kept status one of them stops at) into the Decision.
#include "allocator/reconcile.h"

#include <algorithm>

#include "allocator/group_resolution.h"
#include "allocator/rebuild.h"
#include "allocator/reconcile_phases.h"
#include "common/time.h"

namespace pylon::allocator {

using net::IpAddress;

std::string JoinIps(const std::vector<IpAddress>& ips) {
  std::string out;
  for (const auto& ip : ips) {
    if (!out.empty()) out += ", ";
    out += ip.ToString();
  }
  return out;
}

std::vector<IpAddress> Minus(const std::vector<IpAddress>& a, const std::vector<IpAddress>& b) {
  std::vector<IpAddress> out;
  for (const auto& x : a) {
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  }
  return out;
}

std::string FormatIngressGo(const std::vector<IpAddress>& ips) {
  std::string out = "{Ingress:[";
  for (std::size_t i = 0; i < ips.size(); ++i) {
    if (i > 0) out += ' ';
    out += "{IP:" + ips[i].ToString() + " Hostname: Ports:[]}";
  }
  return out + "]}";
}

bool IsPylons(const model::Service& svc) {
  return !svc.deleting && model::SelectOwner(svc).owner != model::Owner::kNone;
}

namespace {

// Maps an Assign error to a refusal reason. A conflict on a requested address is a sharing
// conflict when the holder shares under the Service's own key (so only ports overlap).
Reason ReasonForAssignError(const Error& e, const pool::RequestedAddresses& requested,
                            const std::string& sharing_key, const pool::ServiceKey& self,
                            const pool::Allocator& pool) {
  switch (e.code()) {
    case ErrorCode::kOutOfRange:
      return Reason::kOutsidePools;
    case ErrorCode::kExhausted:
      return Reason::kPoolExhausted;
    case ErrorCode::kConflict:
      for (const auto& want : {requested.v4, requested.v6}) {
        if (!want) continue;
        auto info = pool.Lookup(*want);
        if (!info) continue;
        bool others = std::any_of(info->holders.begin(), info->holders.end(),
                                  [&](const pool::ServiceKey& k) { return !(k == self); });
        if (!others) continue;
        if (!sharing_key.empty() && info->sharing_key == sharing_key) {
          return Reason::kSharingConflict;
        }
        return Reason::kAddressInUse;
      }
      return Reason::kAddressInUse;
    case ErrorCode::kUnsupported:
      return Reason::kFamilyUnavailable;
    default:
      return Reason::kInvalidAnnotation;
  }
}

// Refused: releases everything the Service holds; warns once per new refusal (decided against the
// condition the Service shows) and says what its status loses.
Decision Refuse(const model::Service& svc, const pool::ServiceKey& key, const ServiceInput& in,
                pool::Allocator& pool, Refusal r) {
  Decision d;
  d.outcome = Outcome::kRefused;
  d.reason = r.reason;
  d.message = r.message;
  d.released = pool.Release(key);
  d.condition = Condition{false, std::string(ReasonName(r.reason)), r.message};
  if (!(in.current_condition == d.condition)) {
    d.events.push_back({true, kEventFailed, "Failed to allocate address: " + r.message});
  }
  if (!svc.ingress.empty()) {
    d.events.push_back({false, kEventReleased, "Released " + JoinIps(svc.ingress)});
  }
  return d;
}

// The Service's group or class is not in force. A Service that shows addresses from it keeps them:
// configuration Pylon cannot read (deleted, invalid at a restart, CRD not served) never takes an
// address away. Only a Service that now names another group or class than the one its addresses
// came from (purelb.io/allocated-from) asked for the change, and is refused (released) as before.
// The pool state usually holds nothing for a kept Service (no pool of that name is in force); what
// it does hold (its addresses adopted into an overlapping group's pool) stays held. When the group
// comes back the controller adopts the addresses before anything else is allocated from it
// (Controller::ProcessConfig).
std::optional<Decision> KeepUnconfigured(const model::Service& svc, const ServiceInput& in,
                                         const std::string& selected, const Refusal& r) {
  if (svc.ingress.empty()) return std::nullopt;
  const std::string* from = svc.Annotation(model::kAnnAllocatedFrom);
  if (from != nullptr && *from != selected) return std::nullopt;
  Decision d;
  d.outcome = Outcome::kKept;
  d.reason = r.reason;
  d.ingress = svc.ingress;
  d.message = r.message + "; keeping " + JoinIps(svc.ingress) +
              " as they are, nothing new can be allocated until it is valid again";
  d.condition = Condition{false, std::string(ReasonName(r.reason)), d.message};
  if (!(in.current_condition == d.condition)) {
    d.events.push_back({true, kEventFailed, d.message});
  }
  return d;
}

bool HasOwnTraces(const model::Service& svc, const ServiceInput& in) {
  return in.current_condition.has_value() || svc.Annotation(model::kAnnAllocatedBy) != nullptr ||
         svc.Annotation(model::kAnnAllocatedFrom) != nullptr;
}

// Not (or no longer) Pylon's: frees what it held and its conflicts. A foreign-class LoadBalancer
// Service is never written to; one that left LoadBalancer gets Pylon's traces removed. A Service
// being deleted is not written to either.
Decision ReleaseNotPylons(const model::Service& svc, const pool::ServiceKey& key,
                          const ServiceInput& in, pool::Allocator& pool) {
  Decision d;
  if (in.conflicts != nullptr) {
    d.conflicts_changed = SetConflicts(*in.conflicts, key.ToString(), {}, pool);
  }
  d.released = pool.Release(key);
  const bool foreign_lb = svc.type == "LoadBalancer";
  const bool cleanup = !svc.deleting && !foreign_lb && HasOwnTraces(svc, in);
  if (d.released.empty() && !cleanup) return d;  // kIgnored
  d.outcome = Outcome::kReleased;
  d.cleanup = cleanup;
  d.message = svc.deleting ? "being deleted" : "no longer a Pylon LoadBalancer";
  if (!d.released.empty() && !svc.deleting) {
    d.events.push_back({false, kEventReleased, "Released " + JoinIps(d.released)});
  }
  return d;
}

// The decision of a Service whose owner did not resolve (phase 1 stopped).
Decision StopAtOwner(const model::Service& svc, const pool::ServiceKey& key, const Owner& owner,
                     const ServiceInput& in, pool::Allocator& pool) {
  switch (owner.status) {
    case Owner::Status::kNotPylons:
      return ReleaseNotPylons(svc, key, in, pool);
    case Owner::Status::kDenied: {
      Decision d = Refuse(svc, key, in, pool, *owner.refusal);
      d.pool_key = owner.pool_key;
      return d;
    }
    case Owner::Status::kUnconfigured:
    case Owner::Status::kResolved:
      break;
  }
  if (auto kept = KeepUnconfigured(svc, in, owner.name, *owner.refusal)) return *kept;
  return Refuse(svc, key, in, pool, *owner.refusal);
}

// Builds the decision of an allocation (or its refusal): annotations, condition, events; every
// decision carries the conflicts phase's changed flag and recheck time.
Decision FinishAllocated(const model::Service& svc, const pool::ServiceKey& key,
                         const ServiceInput& in, const Owner& owner, const ServiceRequest& req,
                         const ConflictPhase& cp, Allocation a, pool::Allocator& pool) {
  if (a.refusal) {
    for (const auto& c : cp.conflicts.active) {
      a.refusal->message += "; " + ConflictText(c) + ", kept out of the pool";
    }
    Decision d = Refuse(svc, key, in, pool, std::move(*a.refusal));
    d.pool_key = owner.pool_key;
    d.conflicts_changed = cp.changed;
    d.recheck_after = cp.recheck_after;
    return d;
  }
  const config::Group& group = *owner.group;
  Decision d;
  d.conflicts_changed = cp.changed;
  d.recheck_after = cp.recheck_after;
  d.outcome = Outcome::kAllocated;
  d.ingress = std::move(a.ingress);
  d.acquired = std::move(a.acquired);
  d.released = std::move(a.released);
  d.pool_key = owner.pool_key;
  d.allocated_by = req.purelb_branded ? model::kAllocatedByPureLB : model::kAllocatedByPylon;
  d.allocated_from = owner.name;
  if (owner.kind == model::Owner::kServiceGroup && group.version == config::PurelbVersion::kV2) {
    d.pool_type = group.mode == config::AnnounceMode::kRemote ? "remote" : "local";
    d.skip_ipv6_dad = group.skip_ipv6_dad;
  }
  d.message = std::move(a.message);
  d.condition = Condition{true, kConditionReasonAllocated, d.message};
  const auto gone = Minus(svc.ingress, d.ingress);
  const auto added = Minus(d.ingress, svc.ingress);
  for (const auto& c : cp.conflicts.active) {
    if (std::find(gone.begin(), gone.end(), c.address) == gone.end()) continue;
    d.events.push_back({true, kEventConflict,
                        ConflictText(c) + "; assigned " + JoinIps(d.ingress) +
                            " instead (the address is kept out of the pool until " +
                            FormatTime(c.until) + ")"});
  }
  if (!gone.empty()) d.events.push_back({false, kEventReleased, "Released " + JoinIps(gone)});
  if (!added.empty()) {
    if (owner.warning) d.events.push_back({true, kEventConfigWarning, *owner.warning});
    d.events.push_back({false, kEventAssigned, a.assigned_event});
  }
  return d;
}

}  // namespace

Owner ResolveOwner(const model::Service& svc, const pool::ServiceKey& key,
                   const config::InForceConfig& config, const pool::Allocator& pool,
                   const std::string& install_namespace) {
  Owner o;
  const model::Selection sel = model::SelectOwner(svc);
  if (svc.deleting || sel.owner == model::Owner::kNone) return o;  // kNotPylons
  o.kind = sel.owner;
  if (sel.owner == model::Owner::kServiceGroup) {
    std::optional<std::string> held = HeldServiceGroup(key, pool, config, install_namespace);
    if (!held && !pool.PoolOf(key) && !svc.ingress.empty()) {
      // Shows addresses of a group not in force (deleted, invalid since a restart): that group
      // stays its choice, so that it keeps them (KeepUnconfigured), whatever the rest resolves to.
      const std::string* from = svc.Annotation(model::kAnnAllocatedFrom);
      if (from != nullptr && config.FindServiceGroup(install_namespace, *from) == nullptr) {
        held = *from;
      }
    }
    GroupResolution res = ResolveServiceGroup(svc, config, install_namespace, held);
    o.name = res.name;
    o.warning = res.warning;
    if (res.denied) {
      o.status = Owner::Status::kDenied;
      o.refusal = Refusal{res.reason, *res.denied};
      if (const config::Group* g = config.FindServiceGroup(install_namespace, res.name)) {
        o.pool_key = PoolKey(g->key());
      }
      return o;
    }
    o.group = config.FindServiceGroup(install_namespace, o.name);
    if (o.group == nullptr) {
      o.status = Owner::Status::kUnconfigured;
      o.refusal = Refusal{Reason::kNoSuchGroup, "ServiceGroup " + install_namespace + "/" + o.name +
                                                    " does not exist or is not valid"};
      return o;
    }
  } else {
    o.name = sel.name;
    o.group = config.FindClass(sel.name);
    if (o.group == nullptr) {
      o.status = Owner::Status::kUnconfigured;
      o.refusal = Refusal{Reason::kNoSuchClass, "LoadBalancerClass \"" + sel.name + "\" (class " +
                                                    *svc.load_balancer_class +
                                                    ") does not exist or is not valid"};
      return o;
    }
  }
  o.status = Owner::Status::kResolved;
  o.pool_key = PoolKey(o.group->key());
  o.group_word =
      (sel.owner == model::Owner::kServiceGroup ? "ServiceGroup " : "LoadBalancerClass ") + o.name;
  return o;
}

ConflictPhase ApplyServiceConflicts(const ServiceInput& in, const pool::ServiceKey& key,
                                    const Owner& owner, const ServiceRequest& req,
                                    const std::vector<IpAddress>& held,
                                    const config::InForceConfig& config, pool::Allocator& pool,
                                    const ReconcileContext& ctx) {
  ConflictPhase cp;
  if (in.conflicts == nullptr) return cp;
  cp.conflicts = ActiveConflicts(*in.service, req.requested, *owner.group, config, in.conflicts,
                                 in.now, ctx.conflict_hold);
  cp.recheck_after = cp.conflicts.recheck_after;
  const ConflictBook::Entry entry{owner.pool_key, cp.conflicts.active};
  if (cp.conflicts.requested) {
    cp.changed = SetConflicts(*in.conflicts, key.ToString(), entry, pool);
    const ConflictReport& c = *cp.conflicts.requested;
    cp.refusal = Refusal{Reason::kAddressConflict, "requested address " + ConflictText(c) +
                                                       "; not taken (tried again after " +
                                                       FormatTime(c.until) + ")"};
    return cp;
  }
  // The Service lets go of what it holds in conflict first, so that Assign picks another (a
  // multi-pool Service keeps the rest).
  for (const IpAddress& ip : pool.AddressesOf(key)) {
    if (!cp.conflicts.avoid.count(ip)) continue;
    pool::MultiAssignRequest rest{key, owner.pool_key, {}, {}, req.ports};
    for (const IpAddress& h : held) {
      if (!cp.conflicts.avoid.count(h)) rest.keep.push_back(h);
    }
    if (!req.multi || !pool.AssignMulti(rest)) pool.Release(key);
    break;
  }
  cp.changed = RecordConflicts(*in.conflicts, key.ToString(), entry, pool);
  return cp;
}

Allocation AllocateSingle(const model::Service& svc, const pool::ServiceKey& key,
                          const Owner& owner, const ServiceRequest& sr,
                          const ConflictState& conflicts, pool::Allocator& pool) {
  const std::vector<net::Family>& fams = sr.families;
  pool::AssignRequest req{key, owner.pool_key, fams, sr.requested, sr.sharing_key, sr.ports};
  Result<pool::AssignOutcome> result = Fail(ErrorCode::kInternal, "not assigned");
  // Keep what the status shows when nothing is held here yet and nothing specific is requested
  // (restart without a rebuild record, a status written by PureLB, a record lost to a conflict
  // that has since gone away). Falls back to a fresh assignment if not possible.
  if (sr.requested.empty() && pool.AddressesOf(key).empty() && !svc.ingress.empty()) {
    pool::AssignRequest keep = req;
    for (const IpAddress& ip : svc.ingress) {
      if (std::find(fams.begin(), fams.end(), ip.family()) == fams.end()) continue;
      if (conflicts.avoid.count(ip)) continue;
      if (!keep.requested.For(ip.family())) keep.requested.For(ip.family()) = ip;
    }
    if (!keep.requested.empty()) {
      auto kept = pool.Assign(keep);
      if (kept && kept->addresses.size() == fams.size()) result = std::move(kept);
      // A partial keep holds every family already (Assign covers all of `fams`); any error
      // leaves the state unchanged.
    }
  }
  if (!result) result = pool.Assign(req);
  Allocation a;
  if (!result) {
    a.refusal =
        Refusal{ReasonForAssignError(result.error(), sr.requested, sr.sharing_key, key, pool),
                result.error().message()};
    return a;
  }
  a.ingress = result->addresses;
  a.acquired = result->acquired;
  a.released = result->released;
  a.message = "Assigned " + JoinIps(a.ingress) + " from " + owner.group_word;
  a.assigned_event = "Assigned " + FormatIngressGo(a.ingress) + " from pool " + owner.name;
  return a;
}

namespace {

Decision ReconcileService(const ServiceInput& in, const config::InForceConfig& config,
                          pool::Allocator& pool, const ReconcileContext& ctx) {
  const model::Service& svc = *in.service;
  auto key_or = pool::ServiceKey::Make(svc.ns, svc.name);
  if (!key_or) return Decision{};
  const pool::ServiceKey& key = *key_or;

  // 1. The group or class.
  const Owner owner = ResolveOwner(svc, key, config, pool, ctx.install_namespace);
  if (owner.status != Owner::Status::kResolved) return StopAtOwner(svc, key, owner, in, pool);
  auto refuse = [&](const Refusal& r) {
    Decision d = Refuse(svc, key, in, pool, r);
    d.pool_key = owner.pool_key;
    return d;
  };

  // 2. What the Service asks for.
  const ParsedRequest parsed = ParseRequest(svc, owner);
  if (parsed.refusal) {
    return parsed.unpooled ? Refuse(svc, key, in, pool, *parsed.refusal) : refuse(*parsed.refusal);
  }
  const ServiceRequest& req = parsed.request;
  std::vector<IpAddress> held;  // what the Service holds in this group now
  if (pool.PoolOf(key) == owner.pool_key) held = pool.AddressesOf(key);

  // 3. The address conflicts reported by the agents.
  const ConflictPhase cp = ApplyServiceConflicts(in, key, owner, req, held, config, pool, ctx);
  if (cp.refusal) {
    Decision d = refuse(*cp.refusal);
    d.conflicts_changed = cp.changed;
    d.recheck_after = cp.recheck_after;
    return d;
  }

  // 4. The addresses.
  Allocation a =
      req.multi ? AllocateMultiPool(svc, key, owner, req, held, in.node_subnets, cp.conflicts, pool)
                : AllocateSingle(svc, key, owner, req, cp.conflicts, pool);
  return FinishAllocated(svc, key, in, owner, req, cp, std::move(a), pool);
}

}  // namespace

Decision Reconcile(const ServiceInput& in, const config::InForceConfig& config,
                   pool::Allocator& pool, const ReconcileContext& ctx) {
  Decision d = ReconcileService(in, config, pool, ctx);
  const std::string* re = in.service->Annotation(model::kAnnReEvaluate);
  if (re != nullptr && *re == "true" &&
      (d.outcome == Outcome::kAllocated || d.outcome == Outcome::kRefused)) {
    d.clear_re_evaluate = true;  // this reconcile was the re-run it asked for
  }
  return d;
}

Decision ReconcileGone(const pool::ServiceKey& key, pool::Allocator& pool,
                       ConflictBook* conflicts) {
  Decision d;
  if (conflicts != nullptr)
    d.conflicts_changed = SetConflicts(*conflicts, key.ToString(), {}, pool);
  d.released = pool.Release(key);
  d.outcome = d.released.empty() ? Outcome::kIgnored : Outcome::kReleased;
  return d;
}

}  // namespace pylon::allocator
