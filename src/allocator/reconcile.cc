#include "allocator/reconcile.h"

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>

#include "common/time.h"
#include "model/conflicts.h"
#include "pool/families.h"
#include "pool/requested.h"

namespace pylon::allocator {

using net::Family;
using net::IpAddress;

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kIgnored:
      return "Ignored";
    case Outcome::kAllocated:
      return "Allocated";
    case Outcome::kRefused:
      return "Refused";
    case Outcome::kReleased:
      return "Released";
    case Outcome::kKept:
      return "Kept";
  }
  return "?";
}

std::string_view ReasonName(Reason r) {
  switch (r) {
    case Reason::kNone:
      return "";
    case Reason::kAddressInUse:
      return "AddressInUse";
    case Reason::kOutsidePools:
      return "OutsidePools";
    case Reason::kNoSuchClass:
      return "NoSuchClass";
    case Reason::kNoSuchGroup:
      return "NoSuchServiceGroup";
    case Reason::kFamilyUnavailable:
      return "FamilyUnavailable";
    case Reason::kPoolExhausted:
      return "PoolExhausted";
    case Reason::kSharingConflict:
      return "SharingConflict";
    case Reason::kInvalidAnnotation:
      return "InvalidAnnotation";
    case Reason::kInvalidService:
      return "InvalidService";
    case Reason::kNamespaceDenied:
      return "NamespaceDenied";
    case Reason::kAmbiguousNamespaceDefault:
      return "AmbiguousNamespaceDefault";
    case Reason::kAddressConflict:
      return "AddressConflict";
    case Reason::kMultiPoolRefused:
      return "MultiPoolRefused";
  }
  return "?";
}

namespace {

std::string JoinIps(const std::vector<IpAddress>& ips) {
  std::string out;
  for (const auto& ip : ips) {
    if (!out.empty()) out += ", ";
    out += ip.ToString();
  }
  return out;
}

// `a` minus `b`, keeping a's order.
std::vector<IpAddress> Minus(const std::vector<IpAddress>& a, const std::vector<IpAddress>& b) {
  std::vector<IpAddress> out;
  for (const auto& x : a) {
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  }
  return out;
}

struct Refusal {
  Reason reason;
  std::string message;
};

// Requested addresses: the lace annotation or purelb.io/addresses (both present must agree),
// else spec.loadBalancerIP.
Result<pool::RequestedAddresses> RequestedOf(const model::Service& svc) {
  std::optional<pool::RequestedAddresses> from_annotation;
  std::string from_name;
  for (const char* ann : {model::kAnnLaceAddresses, model::kAnnAddresses}) {
    const std::string* v = svc.Annotation(ann);
    if (v == nullptr) continue;
    auto parsed = pool::ParseRequestedAddresses(*v);
    if (!parsed) return Fail(parsed.error().Wrap(std::string("annotation ") + ann));
    if (from_annotation && !(*from_annotation == *parsed)) {
      return Fail(ErrorCode::kInvalidArgument, std::string("annotations ") + from_name + " and " +
                                                   ann + " request different addresses");
    }
    from_annotation = *parsed;
    from_name = ann;
  }
  if (from_annotation) return *from_annotation;
  if (!svc.load_balancer_ip.empty()) {
    auto parsed = pool::ParseRequestedAddresses(svc.load_balancer_ip);
    if (!parsed) return Fail(parsed.error().Wrap("spec.loadBalancerIP"));
    return *parsed;
  }
  return pool::RequestedAddresses{};
}

Result<std::vector<pool::PortKey>> PortsOf(const model::Service& svc) {
  std::vector<pool::PortKey> out;
  for (const auto& p : svc.ports) {
    auto proto = pool::ParseProtocol(p.protocol);
    if (!proto) return Fail(proto.error().Wrap("spec.ports"));
    if (p.port < 1 || p.port > 65535) {
      return Fail(ErrorCode::kInvalidArgument,
                  "spec.ports: port " + std::to_string(p.port) + " is not in 1..65535");
    }
    out.push_back(pool::PortKey{*proto, static_cast<std::uint16_t>(p.port)});
  }
  return out;
}

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

constexpr char kReservationNs[] = "pylon.conflict";

std::string ConflictText(const ConflictReport& c) {
  return c.address.ToString() + " is in use on the network by another host (MAC " + c.mac +
         ", answered the probe of node " + c.node +
         (c.interface.empty() ? std::string() : " on " + c.interface) + " at " +
         FormatTime(c.since) + ")";
}

// The conflicts in force for one Service, the reservations they imply, and the recheck time.
struct ConflictState {
  std::vector<ConflictReport> active;
  std::optional<ConflictReport> requested;  // a requested address in conflict (refusal)
  std::set<IpAddress> avoid;                // addresses the Service must not keep
  std::optional<std::chrono::nanoseconds> recheck_after;
};

ConflictState ActiveConflicts(const model::Service& svc, const pool::RequestedAddresses& requested,
                              const config::Group& group, const config::InForceConfig& config,
                              const ServiceInput& in, const ReconcileContext& ctx) {
  ConflictState st;
  for (const auto& e : model::ParseAddressConflicts(svc.annotations).entries) {
    auto match = config.FindAddress(e.address);
    if (!match || match->group != &group) continue;  // not this pool's business
    const WallTime since = std::min(e.since, in.now);
    const WallTime until =
        since + std::chrono::duration_cast<WallTime::duration>(ctx.conflict_hold);
    if (in.now >= until) continue;  // hold over: the address may be tried again
    ConflictReport r{e.address, e.mac, e.node, e.interface, svc.Key(), since, until, false};
    const auto& want = requested.For(e.address.family());
    r.requested = want && *want == e.address;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - in.now);
    if (!st.recheck_after || left < *st.recheck_after) st.recheck_after = left;
    if (r.requested && !st.requested) st.requested = r;
    st.avoid.insert(e.address);
    st.active.push_back(std::move(r));
  }
  // A requested address that another Service's report keeps out of the pool is in conflict for
  // this Service too (the allocator knows without a probe).
  for (const auto& want : {requested.v4, requested.v6}) {
    if (!want || st.avoid.count(*want) || in.conflicts == nullptr) continue;
    auto other = in.conflicts->ReservationOf(*want);
    if (!other || other->service == svc.Key() || in.now >= other->until) continue;
    ConflictReport r = *other;
    r.service = svc.Key();
    r.requested = true;
    r.skipped = false;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(r.until - in.now);
    if (!st.recheck_after || left < *st.recheck_after) st.recheck_after = left;
    if (!st.requested) st.requested = r;
    st.avoid.insert(r.address);
    st.active.push_back(std::move(r));
  }
  return st;
}

// Records the Service's conflicts in the book and makes the pool match: every non-requested
// address in conflict is held under its reservation key (unless another Service holds it), and
// reservations nobody needs any more are freed.
void ApplyConflicts(ConflictBook& book, const pool::ServiceKey& key, const std::string& pool_key,
                    const std::vector<ConflictReport>& active, pool::Allocator& pool, Decision& d) {
  bool changed = false;
  for (const IpAddress& ip : book.Set(key.ToString(), {pool_key, active}, &changed)) {
    pool.Release(ReservationKey(ip));
  }
  d.conflicts_changed = changed;
  for (const auto& r : active) {
    if (r.requested) continue;
    auto holders = pool.HoldersOf(r.address);
    if (!holders.empty()) continue;  // reserved already, or another Service holds it
    pool::AssignRequest req;
    req.service = ReservationKey(r.address);
    req.pool = pool_key;
    req.families = {r.address.family()};
    req.requested.For(r.address.family()) = r.address;
    (void)pool.Assign(req);  // only fails if the address left the pool: nothing to keep out
  }
}

bool HasOwnTraces(const model::Service& svc, const ServiceInput& in) {
  return in.current_condition.has_value() || svc.Annotation(model::kAnnAllocatedBy) != nullptr ||
         svc.Annotation(model::kAnnAllocatedFrom) != nullptr;
}

}  // namespace

std::string PoolKey(const config::ConfigKey& key) { return key.ToString(); }

bool MultiPoolInEffect(const model::Service& svc, const config::Group& group) {
  if (group.key().kind != config::ObjectKind::kServiceGroup ||
      group.version != config::PurelbVersion::kV2) {
    return false;
  }
  if (const std::string* ann = svc.Annotation(model::kAnnMultiPool)) return *ann == "true";
  return group.multi_pool;
}

bool ActiveEntry(const config::Group& group, const config::PoolEntry& entry,
                 const NodeSubnets* node_subnets) {
  if (group.mode == config::AnnounceMode::kRemote) return true;
  return entry.subnet && node_subnets != nullptr && node_subnets->Has(*entry.subnet);
}

pool::ServiceKey ReservationKey(const net::IpAddress& address) {
  return *pool::ServiceKey::Make(kReservationNs, address.ToString());
}

std::vector<ConflictReport> ConflictBook::ForPool(const std::string& pool_key) const {
  std::vector<ConflictReport> out;
  for (const auto& [svc, e] : by_service_) {
    if (e.pool_key != pool_key) continue;
    out.insert(out.end(), e.reports.begin(), e.reports.end());
  }
  std::sort(out.begin(), out.end(), [](const ConflictReport& a, const ConflictReport& b) {
    return std::tie(a.address, a.service) < std::tie(b.address, b.service);
  });
  return out;
}

bool ConflictBook::Reserves(const net::IpAddress& address) const {
  return ReservationOf(address).has_value();
}

std::optional<ConflictReport> ConflictBook::ReservationOf(const net::IpAddress& address) const {
  for (const auto& [svc, e] : by_service_) {
    for (const auto& r : e.reports) {
      if (!r.requested && r.address == address) return r;
    }
  }
  return std::nullopt;
}

std::vector<net::IpAddress> ConflictBook::Set(const std::string& service, Entry entry,
                                              bool* changed) {
  std::vector<net::IpAddress> before;
  auto it = by_service_.find(service);
  if (it != by_service_.end()) {
    for (const auto& r : it->second.reports) {
      if (!r.requested) before.push_back(r.address);
    }
  }
  const bool same = it == by_service_.end() ? entry.reports.empty()
                                            : (it->second.pool_key == entry.pool_key &&
                                               it->second.reports == entry.reports);
  if (changed) *changed = !same;
  if (entry.reports.empty()) {
    if (it != by_service_.end()) by_service_.erase(it);
  } else {
    by_service_[service] = std::move(entry);
  }
  std::vector<net::IpAddress> freed;
  for (const auto& ip : before) {
    if (!Reserves(ip)) freed.push_back(ip);
  }
  return freed;
}

std::vector<pool::PoolDefinition> PoolDefinitions(const config::InForceConfig& config) {
  std::vector<pool::PoolDefinition> out;
  for (const auto& [key, group] : config.groups()) {
    if (key.kind == config::ObjectKind::kLBNodeAgent) continue;
    pool::PoolDefinition def;
    def.key = PoolKey(key);
    def.v4 = group.Ranges(Family::kV4);
    def.v6 = group.Ranges(Family::kV6);
    def.balance = group.balance_pools;
    out.push_back(std::move(def));
  }
  return out;
}

bool IsPylons(const model::Service& svc) {
  return !svc.deleting && model::SelectOwner(svc).owner != model::Owner::kNone;
}

std::vector<const model::Service*> StartupOrder(std::vector<const model::Service*> services) {
  std::stable_sort(
      services.begin(), services.end(), [](const model::Service* a, const model::Service* b) {
        return std::make_tuple(a->ingress.empty(), a->creation_timestamp, a->ns, a->name) <
               std::make_tuple(b->ingress.empty(), b->creation_timestamp, b->ns, b->name);
      });
  return services;
}

std::vector<pool::ExistingRecord> RebuildRecords(const std::vector<const model::Service*>& ordered,
                                                 const config::InForceConfig& config) {
  std::vector<pool::ExistingRecord> out;
  for (const model::Service* svc : ordered) {
    // A Service being deleted still shows its addresses: they stay held until it is gone.
    if (model::SelectOwner(*svc).owner == model::Owner::kNone || svc->ingress.empty()) continue;
    auto key = pool::ServiceKey::Make(svc->ns, svc->name);
    if (!key) continue;
    std::vector<pool::PortKey> ports;
    if (auto p = PortsOf(*svc)) ports = std::move(*p);
    const std::string* sharing = svc->Annotation(model::kAnnSharing);
    // A multi-pool Service holds every address it shows in the group of its first one.
    const config::Group* multi = nullptr;
    for (const IpAddress& ip : svc->ingress) {
      auto match = config.FindAddress(ip);
      if (!match || match->group == nullptr) continue;
      if (sharing == nullptr && MultiPoolInEffect(*svc, *match->group)) multi = match->group;
      break;
    }
    bool seen_v4 = false, seen_v6 = false;
    std::vector<IpAddress> taken;
    for (const IpAddress& ip : svc->ingress) {
      if (multi != nullptr) {
        auto match = config.FindAddress(ip);
        if (!match || match->group != multi) continue;
        if (std::find(taken.begin(), taken.end(), ip) != taken.end()) continue;
        taken.push_back(ip);
        out.push_back(
            pool::ExistingRecord{*key, PoolKey(multi->key()), ip, std::string(), ports, true});
        continue;
      }
      bool& seen = ip.is_v4() ? seen_v4 : seen_v6;
      if (seen) continue;
      seen = true;
      auto match = config.FindAddress(ip);
      if (!match || match->group == nullptr) continue;  // outside every pool: nothing to hold
      out.push_back(pool::ExistingRecord{*key, PoolKey(match->group->key()), ip,
                                         sharing ? *sharing : std::string(), ports});
    }
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

Decision ReconcileGone(const pool::ServiceKey& key, pool::Allocator& pool,
                       ConflictBook* conflicts) {
  Decision d;
  if (conflicts != nullptr) {
    bool changed = false;
    for (const IpAddress& ip : conflicts->Set(key.ToString(), {}, &changed)) {
      pool.Release(ReservationKey(ip));
    }
    d.conflicts_changed = changed;
  }
  d.released = pool.Release(key);
  d.outcome = d.released.empty() ? Outcome::kIgnored : Outcome::kReleased;
  return d;
}

namespace {

std::string JoinNames(const std::vector<const config::Group*>& groups) {
  std::string out;
  for (const config::Group* g : groups) out += (out.empty() ? "" : ", ") + g->key().name;
  return out;
}

std::string JoinStrings(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::optional<std::string> HeldServiceGroup(const pool::ServiceKey& key,
                                            const pool::Allocator& pool,
                                            const config::InForceConfig& config,
                                            const std::string& install_namespace) {
  auto held = pool.PoolOf(key);
  if (!held) return std::nullopt;
  for (const auto& [k, g] : config.groups()) {
    if (k.kind == config::ObjectKind::kServiceGroup && k.namespace_ == install_namespace &&
        PoolKey(k) == *held) {
      return k.name;
    }
  }
  return std::nullopt;
}

GroupResolution ResolveServiceGroup(const model::Service& svc, const config::InForceConfig& config,
                                    const std::string& install_namespace,
                                    const std::optional<std::string>& held) {
  std::vector<const config::Group*> listing;  // in-force groups listing the namespace
  bool enforcing = false;                     // the namespace is enforced by some group
  for (const auto& [k, g] : config.groups()) {
    if (k.kind != config::ObjectKind::kServiceGroup || k.namespace_ != install_namespace) continue;
    if (!g.ListsNamespace(svc.ns)) continue;
    listing.push_back(&g);
    enforcing = enforcing || g.enforce_namespaces;
  }
  GroupResolution r;
  const std::string* ann = svc.Annotation(model::kAnnServiceGroup);
  // PureLB v2: a requested address (purelb.io/addresses, spec.loadBalancerIP) picks the v2
  // group that contains it.
  std::optional<std::string> by_address;
  if (auto req = RequestedOf(svc); req) {
    for (const auto& ip : {req->v4, req->v6}) {
      if (!ip || by_address) continue;
      auto m = config.FindAddress(*ip);
      if (m && m->group != nullptr && m->group->key().kind == config::ObjectKind::kServiceGroup &&
          m->group->key().namespace_ == install_namespace &&
          m->group->version == config::PurelbVersion::kV2) {
        by_address = m->group->key().name;
      }
    }
  }
  if (ann != nullptr && !ann->empty()) {
    r.name = *ann;
  } else if (by_address) {
    r.name = *by_address;
  } else if (held) {
    r.name = *held;  // never retroactive: an unannotated Service keeps its group
  } else if (listing.size() == 1) {
    r.name = listing[0]->key().name;
  } else if (listing.size() > 1) {
    std::vector<const config::Group*> marked;
    for (const config::Group* g : listing) {
      if (g->namespace_default) marked.push_back(g);
    }
    if (marked.size() == 1) {
      r.name = marked[0]->key().name;
    } else if (enforcing) {
      r.reason = Reason::kAmbiguousNamespaceDefault;
      r.denied = "ambiguous namespace default: ServiceGroups " + JoinNames(listing) +
                 " list namespace " + svc.ns + " and " +
                 (marked.empty() ? "none" : "more than one") +
                 " of them sets namespaceDefault; set it on one, or annotate the Service with " +
                 model::kAnnServiceGroup;
      r.name = model::kDefaultServiceGroup;
      return r;
    } else {
      r.name = model::kDefaultServiceGroup;
      r.warning = "ServiceGroups " + JoinNames(listing) + " list namespace " + svc.ns + " and " +
                  (marked.empty() ? "none" : "more than one") +
                  " of them sets namespaceDefault; used ServiceGroup default";
    }
  } else {
    r.name = model::kDefaultServiceGroup;
  }
  // The boundary, checked when the Service takes addresses from the group, never on what it
  // already holds there.
  if (held && *held == r.name) return r;
  const config::Group* g = config.FindServiceGroup(install_namespace, r.name);
  if (g == nullptr || g->ListsNamespace(svc.ns)) return r;
  if (enforcing) {
    r.reason = Reason::kNamespaceDenied;
    r.denied = "namespace " + svc.ns + " is enforced (enforceNamespaces) by ServiceGroups " +
               JoinNames(listing) + " and may use only ServiceGroups that list it; ServiceGroup " +
               r.name + " does not";
    return r;
  }
  for (const std::string& ns : g->namespaces) {
    for (const auto& [k, other] : config.groups()) {
      if (k.kind != config::ObjectKind::kServiceGroup || k.namespace_ != install_namespace) {
        continue;
      }
      if (other.enforce_namespaces && other.ListsNamespace(ns)) {
        r.reason = Reason::kNamespaceDenied;
        r.denied = "ServiceGroup " + r.name + " serves only namespaces " +
                   JoinStrings(g->namespaces) + " (namespace " + ns +
                   " is enforced by ServiceGroup " + k.name + "), not " + svc.ns;
        return r;
      }
    }
  }
  return r;
}

namespace {

// What an allocation path produced, before the common decision is built from it.
struct Allocation {
  std::optional<Refusal> refusal;
  std::vector<IpAddress> ingress, acquired, released;
  std::string message;         // the condition's
  std::string assigned_event;  // the AddressAssigned event's, when addresses were added
};

// Builds the decision of an allocation (or its refusal): annotations, condition, events.
Decision FinishAllocated(const model::Service& svc, const config::Group* group,
                         const model::Selection& sel, bool purelb_branded,
                         const std::optional<std::string>& resolution_warning,
                         const ConflictState& conflicts, const Decision& cd, Allocation a,
                         const std::function<Decision(Refusal)>& refuse) {
  if (a.refusal) {
    for (const auto& c : conflicts.active) {
      a.refusal->message += "; " + ConflictText(c) + ", kept out of the pool";
    }
    Decision d = refuse(std::move(*a.refusal));
    d.conflicts_changed = cd.conflicts_changed;
    d.recheck_after = cd.recheck_after;
    return d;
  }
  Decision d;
  d.conflicts_changed = cd.conflicts_changed;
  d.recheck_after = cd.recheck_after;
  d.outcome = Outcome::kAllocated;
  d.ingress = std::move(a.ingress);
  d.acquired = std::move(a.acquired);
  d.released = std::move(a.released);
  d.pool_key = PoolKey(group->key());
  d.allocated_by = purelb_branded ? model::kAllocatedByPureLB : model::kAllocatedByPylon;
  d.allocated_from = sel.name;
  if (sel.owner == model::Owner::kServiceGroup && group->version == config::PurelbVersion::kV2) {
    d.pool_type = group->mode == config::AnnounceMode::kRemote ? "remote" : "local";
    d.skip_ipv6_dad = group->skip_ipv6_dad;
  }
  d.message = std::move(a.message);
  d.condition = Condition{true, kConditionReasonAllocated, d.message};
  const auto gone = Minus(svc.ingress, d.ingress);
  const auto added = Minus(d.ingress, svc.ingress);
  for (const auto& c : conflicts.active) {
    if (std::find(gone.begin(), gone.end(), c.address) == gone.end()) continue;
    d.events.push_back({true, kEventConflict,
                        ConflictText(c) + "; assigned " + JoinIps(d.ingress) +
                            " instead (the address is kept out of the pool until " +
                            FormatTime(c.until) + ")"});
  }
  if (!gone.empty()) d.events.push_back({false, kEventReleased, "Released " + JoinIps(gone)});
  if (!added.empty()) {
    if (resolution_warning) d.events.push_back({true, kEventConfigWarning, *resolution_warning});
    d.events.push_back({false, kEventAssigned, a.assigned_event});
  }
  return d;
}

struct MultiPoolInput {
  const model::Service& svc;
  const config::Group& group;
  const std::string& name;        // the group's name (events)
  const std::string& group_word;  // "ServiceGroup <name>" (condition)
  const std::string& pool_key;
  const std::vector<Family>& fams;
  const std::vector<pool::PortKey>& ports;
  const std::vector<IpAddress>& held;  // held in this group before the reconcile
};

// The group's entry holding `ip`: (family position in `fams`, entry index), or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> EntryOf(const config::Group& group,
                                                           const std::vector<Family>& fams,
                                                           const IpAddress& ip) {
  auto f = std::find(fams.begin(), fams.end(), ip.family());
  if (f == fams.end()) return std::nullopt;
  const auto& entries = group.entries(ip.family());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (const auto& r : entries[i].ranges) {
      if (r.Contains(ip)) return std::make_pair(static_cast<std::size_t>(f - fams.begin()), i);
    }
  }
  return std::nullopt;
}

// Multi-pool (PureLB v2 §9.4): keeps what the Service holds (and, after a restart, what its
// status shows) in the group, one address per range, and adds one address from every active
// range of each family that has none yet. Exhausted ranges are skipped (named in the event);
// refused only when the Service would hold nothing.
Allocation AllocateMultiPool(const MultiPoolInput& mi, const pool::ServiceKey& key,
                             const ServiceInput& in, const ConflictState& conflicts,
                             pool::Allocator& pool) {
  Allocation a;
  pool::MultiAssignRequest req{key, mi.pool_key, {}, {}, mi.ports};
  std::set<std::pair<std::size_t, std::size_t>> represented;
  std::vector<IpAddress> candidates = mi.held;
  candidates.insert(candidates.end(), mi.svc.ingress.begin(), mi.svc.ingress.end());
  for (const IpAddress& ip : candidates) {
    if (conflicts.avoid.count(ip)) continue;
    auto e = EntryOf(mi.group, mi.fams, ip);
    if (!e || !represented.insert(*e).second) continue;  // another family, or range has one
    req.keep.push_back(ip);
  }
  std::vector<const config::PoolEntry*> slot_entries;
  std::size_t active = 0;
  for (std::size_t fi = 0; fi < mi.fams.size(); ++fi) {
    const auto& entries = mi.group.entries(mi.fams[fi]);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (!ActiveEntry(mi.group, entries[i], in.node_subnets)) continue;
      ++active;
      if (represented.count({fi, i})) continue;
      req.slots.push_back(entries[i].ranges);
      slot_entries.push_back(&entries[i]);
    }
  }
  auto describe_live = [&] {
    if (in.node_subnets == nullptr || in.node_subnets->live.empty()) {
      return std::string("no live node advertises a subnet");
    }
    std::string out = "live node subnets: ";
    for (std::size_t i = 0; i < in.node_subnets->live.size(); ++i) {
      out += (i ? ", " : "") + in.node_subnets->live[i].ToString();
    }
    return out;
  };
  if (req.keep.empty() && active == 0) {
    a.refusal = Refusal{Reason::kPoolExhausted,
                        "multi-pool: no range of " + mi.group_word +
                            " is active (its subnet is advertised by no live node; " +
                            describe_live() + ")"};
    return a;
  }
  auto r = pool.AssignMulti(req);
  if (!r) {
    a.refusal = Refusal{r.error().code() == ErrorCode::kExhausted ? Reason::kPoolExhausted
                                                                  : Reason::kInvalidService,
                        "multi-pool: " + r.error().message()};
    return a;
  }
  a.ingress = r->assigned.addresses;
  std::stable_sort(a.ingress.begin(), a.ingress.end(), [&](const IpAddress& x, const IpAddress& y) {
    return EntryOf(mi.group, mi.fams, x) < EntryOf(mi.group, mi.fams, y);
  });
  a.acquired = r->assigned.acquired;
  a.released = r->assigned.released;
  a.message = "Assigned " + JoinIps(a.ingress) + " from " + mi.group_word + " (multi-pool)";
  const std::size_t added = Minus(a.ingress, mi.svc.ingress).size();
  a.assigned_event =
      mi.svc.ingress.empty()
          ? "Multi-pool: assigned " + std::to_string(added) + " IPs from pool " + mi.name
          : "Incremental multi-pool: added " + std::to_string(added) + " IPs (total " +
                std::to_string(a.ingress.size()) + ") from pool " + mi.name;
  for (std::size_t i : r->exhausted) {
    a.assigned_event +=
        (i == r->exhausted.front() ? "; no free address in " : ", ") + slot_entries[i]->written;
  }
  return a;
}

}  // namespace

namespace {

Decision ReconcileService(const ServiceInput& in, const config::InForceConfig& config,
                          pool::Allocator& pool, const ReconcileContext& ctx) {
  const model::Service& svc = *in.service;
  auto key_or = pool::ServiceKey::Make(svc.ns, svc.name);
  if (!key_or) return Decision{};
  const pool::ServiceKey& key = *key_or;

  model::Selection sel = model::SelectOwner(svc);
  if (svc.deleting || sel.owner == model::Owner::kNone) {
    Decision d;
    if (in.conflicts != nullptr) {
      bool changed = false;
      for (const IpAddress& ip : in.conflicts->Set(key.ToString(), {}, &changed)) {
        pool.Release(ReservationKey(ip));
      }
      d.conflicts_changed = changed;
    }
    d.released = pool.Release(key);
    // A foreign-class LoadBalancer Service is never written to; one that left LoadBalancer gets
    // Pylon's traces removed. A Service being deleted is not written to either.
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

  // The group or class.
  const config::Group* group = nullptr;
  std::optional<std::string> resolution_warning;
  if (sel.owner == model::Owner::kServiceGroup) {
    std::optional<std::string> held = HeldServiceGroup(key, pool, config, ctx.install_namespace);
    if (!held && !pool.PoolOf(key) && !svc.ingress.empty()) {
      // Shows addresses of a group not in force (deleted, invalid since a restart): that group
      // stays its choice, so that it keeps them (KeepUnconfigured), whatever the rest resolves to.
      const std::string* from = svc.Annotation(model::kAnnAllocatedFrom);
      if (from != nullptr && config.FindServiceGroup(ctx.install_namespace, *from) == nullptr) {
        held = *from;
      }
    }
    GroupResolution res = ResolveServiceGroup(svc, config, ctx.install_namespace, held);
    sel.name = res.name;
    resolution_warning = res.warning;
    if (res.denied) {
      Decision d = Refuse(svc, key, in, pool, {res.reason, *res.denied});
      if (const config::Group* g = config.FindServiceGroup(ctx.install_namespace, res.name)) {
        d.pool_key = PoolKey(g->key());
      }
      return d;
    }
    group = config.FindServiceGroup(ctx.install_namespace, sel.name);
    if (group == nullptr) {
      Refusal r{Reason::kNoSuchGroup, "ServiceGroup " + ctx.install_namespace + "/" + sel.name +
                                          " does not exist or is not valid"};
      if (auto kept = KeepUnconfigured(svc, in, sel.name, r)) return *kept;
      return Refuse(svc, key, in, pool, std::move(r));
    }
  } else {
    group = config.FindClass(sel.name);
    if (group == nullptr) {
      Refusal r{Reason::kNoSuchClass, "LoadBalancerClass \"" + sel.name + "\" (class " +
                                          *svc.load_balancer_class +
                                          ") does not exist or is not valid"};
      if (auto kept = KeepUnconfigured(svc, in, sel.name, r)) return *kept;
      return Refuse(svc, key, in, pool, std::move(r));
    }
  }
  const std::string pool_key = PoolKey(group->key());
  auto refuse = [&](Refusal r) {
    Decision d = Refuse(svc, key, in, pool, std::move(r));
    d.pool_key = pool_key;
    return d;
  };
  const std::string group_word =
      (sel.owner == model::Owner::kServiceGroup ? "ServiceGroup " : "LoadBalancerClass ") +
      sel.name;

  auto requested = RequestedOf(svc);
  if (!requested) {
    return refuse({Reason::kInvalidAnnotation, requested.error().message()});
  }
  auto policy = pool::ParseIpFamilyPolicy(svc.ip_family_policy);
  if (!policy) {
    return refuse({Reason::kInvalidService, "spec.ipFamilyPolicy: " + policy.error().message()});
  }
  auto ports = PortsOf(svc);
  if (!ports) return refuse({Reason::kInvalidService, ports.error().message()});

  std::vector<Family> offered;
  for (Family f : {Family::kV4, Family::kV6}) {
    if (group->HasFamily(f)) offered.push_back(f);
  }
  pool::FamilySelection fs;
  fs.service_families = svc.ip_families;
  fs.policy = *policy;
  fs.offered = offered;
  fs.pool_name = group_word;
  auto families = pool::SelectFamilies(fs);
  if (!families) {
    Reason r = families.error().code() == ErrorCode::kUnsupported ? Reason::kFamilyUnavailable
                                                                  : Reason::kInvalidService;
    return refuse({r, families.error().message()});
  }
  // A requested address of a family the pools lack is outside them; one of an offered family the
  // Service does not get is a contradiction in the Service.
  for (const auto& want : {requested->v4, requested->v6}) {
    if (want && !group->HasFamily(want->family())) {
      return Refuse(
          svc, key, in, pool,
          {Reason::kOutsidePools, "requested " + want->ToString() + " is outside " + group_word +
                                      ", which has no " +
                                      std::string(net::FamilyName(want->family())) + " pool"});
    }
  }
  if (auto ok = pool::CheckRequestedFamilies(*requested, *families); !ok) {
    return refuse({Reason::kInvalidAnnotation, ok.error().message()});
  }

  const std::string* sharing_ann = svc.Annotation(model::kAnnSharing);
  const std::string sharing_key = sharing_ann ? *sharing_ann : std::string();
  const std::string* by = svc.Annotation(model::kAnnAllocatedBy);
  const bool purelb_branded = by != nullptr && *by == model::kAllocatedByPureLB;

  // Adoption of a PureLB-branded Service: PureLB ignored the policy, so a PreferDualStack
  // Service it gave one family keeps exactly the families its status shows instead of growing a
  // second address.
  std::vector<Family> fams = *families;
  if (purelb_branded && *policy == pool::IpFamilyPolicy::kPreferDualStack) {
    std::vector<Family> held;
    for (const auto& ip : svc.ingress) {
      if (std::find(fams.begin(), fams.end(), ip.family()) != fams.end()) {
        held.push_back(ip.family());
      }
    }
    if (!held.empty()) {
      std::vector<Family> ordered;
      for (Family f : fams) {
        if (std::find(held.begin(), held.end(), f) != held.end()) ordered.push_back(f);
      }
      fams = ordered;
    }
  }

  // Multi-pool: refused with balancePools or a sharing key; pinned addresses are claimed the
  // ordinary way.
  const bool multi_in_effect = MultiPoolInEffect(svc, *group);
  if (multi_in_effect && group->balance_pools) {
    return refuse(
        {Reason::kMultiPoolRefused,
         "multi-pool and balancePools allocation are mutually exclusive for pool " + sel.name});
  }
  if (multi_in_effect && !sharing_key.empty()) {
    return refuse({Reason::kMultiPoolRefused, "multi-pool and allow-shared-ip (" +
                                                  std::string(model::kAnnSharing) +
                                                  ") are mutually exclusive for pool " + sel.name});
  }
  const bool multi = multi_in_effect && requested->empty();
  std::vector<IpAddress> held;  // what the Service holds in this group now
  if (pool.PoolOf(key) == pool_key) held = pool.AddressesOf(key);

  // Address conflicts reported by the agents.
  ConflictState conflicts;
  Decision cd;  // carries conflicts_changed / recheck_after into whichever decision is returned
  if (in.conflicts != nullptr) {
    conflicts = ActiveConflicts(svc, *requested, *group, config, in, ctx);
    if (conflicts.requested) {
      bool changed = false;
      for (const IpAddress& ip :
           in.conflicts->Set(key.ToString(), {pool_key, conflicts.active}, &changed)) {
        pool.Release(ReservationKey(ip));
      }
      Decision d = refuse(
          {Reason::kAddressConflict, "requested address " + ConflictText(*conflicts.requested) +
                                         "; not taken (tried again after " +
                                         FormatTime(conflicts.requested->until) + ")"});
      d.conflicts_changed = changed;
      d.recheck_after = conflicts.recheck_after;
      return d;
    }
    // The Service lets go of what it holds in conflict first, so that Assign picks another (a
    // multi-pool Service keeps the rest).
    for (const IpAddress& ip : pool.AddressesOf(key)) {
      if (!conflicts.avoid.count(ip)) continue;
      pool::MultiAssignRequest rest{key, pool_key, {}, {}, *ports};
      for (const IpAddress& h : held) {
        if (!conflicts.avoid.count(h)) rest.keep.push_back(h);
      }
      if (!multi || !pool.AssignMulti(rest)) pool.Release(key);
      break;
    }
    ApplyConflicts(*in.conflicts, key, pool_key, conflicts.active, pool, cd);
    cd.recheck_after = conflicts.recheck_after;
  }

  if (multi) {
    MultiPoolInput mi{svc, *group, sel.name, group_word, pool_key, fams, *ports, held};
    return FinishAllocated(svc, group, sel, purelb_branded, resolution_warning, conflicts, cd,
                           AllocateMultiPool(mi, key, in, conflicts, pool), refuse);
  }

  pool::AssignRequest req{key, pool_key, fams, *requested, sharing_key, *ports};
  Result<pool::AssignOutcome> result = Fail(ErrorCode::kInternal, "not assigned");
  // Keep what the status shows when nothing is held here yet and nothing specific is requested
  // (restart without a rebuild record, a status written by PureLB, a record lost to a conflict
  // that has since gone away). Falls back to a fresh assignment if not possible.
  if (requested->empty() && pool.AddressesOf(key).empty() && !svc.ingress.empty()) {
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
    a.refusal = Refusal{ReasonForAssignError(result.error(), *requested, sharing_key, key, pool),
                        result.error().message()};
  } else {
    a.ingress = result->addresses;
    a.acquired = result->acquired;
    a.released = result->released;
    a.message = "Assigned " + JoinIps(a.ingress) + " from " + group_word;
    a.assigned_event = "Assigned " + FormatIngressGo(a.ingress) + " from pool " + sel.name;
  }
  return FinishAllocated(svc, group, sel, purelb_branded, resolution_warning, conflicts, cd,
                         std::move(a), refuse);
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

}  // namespace pylon::allocator
