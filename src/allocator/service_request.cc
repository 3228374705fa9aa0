// Phase 2 of the reconcile (reconcile_phases.h): what the Service asks of its group or class.
#include <algorithm>

#include "allocator/multi_pool.h"
#include "allocator/reconcile_phases.h"
#include "pool/families.h"

namespace pylon::allocator {

using net::Family;
using net::IpAddress;

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

namespace {

// The families the Service gets from `group`, or why none: ipFamilies/ipFamilyPolicy against the
// families the group offers, and the requested addresses against both.
std::optional<std::vector<Family>> FamiliesOf(const model::Service& svc, const Owner& owner,
                                              const pool::RequestedAddresses& requested,
                                              pool::IpFamilyPolicy policy, ParsedRequest& out) {
  const config::Group& group = *owner.group;
  std::vector<Family> offered;
  for (Family f : {Family::kV4, Family::kV6}) {
    if (group.HasFamily(f)) offered.push_back(f);
  }
  pool::FamilySelection fs;
  fs.service_families = svc.ip_families;
  fs.policy = policy;
  fs.offered = offered;
  fs.pool_name = owner.group_word;
  auto families = pool::SelectFamilies(fs);
  if (!families) {
    Reason r = families.error().code() == ErrorCode::kUnsupported ? Reason::kFamilyUnavailable
                                                                  : Reason::kInvalidService;
    out.refusal = Refusal{r, families.error().message()};
    return std::nullopt;
  }
  // A requested address of a family the pools lack is outside them; one of an offered family the
  // Service does not get is a contradiction in the Service.
  for (const auto& want : {requested.v4, requested.v6}) {
    if (want && !group.HasFamily(want->family())) {
      out.refusal =
          Refusal{Reason::kOutsidePools,
                  "requested " + want->ToString() + " is outside " + owner.group_word +
                      ", which has no " + std::string(net::FamilyName(want->family())) + " pool"};
      out.unpooled = true;
      return std::nullopt;
    }
  }
  if (auto ok = pool::CheckRequestedFamilies(requested, *families); !ok) {
    out.refusal = Refusal{Reason::kInvalidAnnotation, ok.error().message()};
    return std::nullopt;
  }
  return *families;
}

// Adoption of a PureLB-branded Service: PureLB ignored the policy, so a PreferDualStack Service
// it gave one family keeps exactly the families its status shows instead of growing a second
// address.
std::vector<Family> AdoptedFamilies(const model::Service& svc, std::vector<Family> fams) {
  std::vector<Family> held;
  for (const auto& ip : svc.ingress) {
    if (std::find(fams.begin(), fams.end(), ip.family()) != fams.end()) {
      held.push_back(ip.family());
    }
  }
  if (held.empty()) return fams;
  std::vector<Family> ordered;
  for (Family f : fams) {
    if (std::find(held.begin(), held.end(), f) != held.end()) ordered.push_back(f);
  }
  return ordered;
}

}  // namespace

ParsedRequest ParseRequest(const model::Service& svc, const Owner& owner) {
  ParsedRequest out;
  ServiceRequest& sr = out.request;
  auto requested = RequestedOf(svc);
  if (!requested) {
    out.refusal = Refusal{Reason::kInvalidAnnotation, requested.error().message()};
    return out;
  }
  sr.requested = *requested;
  auto policy = pool::ParseIpFamilyPolicy(svc.ip_family_policy);
  if (!policy) {
    out.refusal =
        Refusal{Reason::kInvalidService, "spec.ipFamilyPolicy: " + policy.error().message()};
    return out;
  }
  auto ports = PortsOf(svc);
  if (!ports) {
    out.refusal = Refusal{Reason::kInvalidService, ports.error().message()};
    return out;
  }
  sr.ports = std::move(*ports);
  auto families = FamiliesOf(svc, owner, sr.requested, *policy, out);
  if (!families) return out;

  const std::string* sharing_ann = svc.Annotation(model::kAnnSharing);
  sr.sharing_key = sharing_ann ? *sharing_ann : std::string();
  const std::string* by = svc.Annotation(model::kAnnAllocatedBy);
  sr.purelb_branded = by != nullptr && *by == model::kAllocatedByPureLB;
  sr.families = sr.purelb_branded && *policy == pool::IpFamilyPolicy::kPreferDualStack
                    ? AdoptedFamilies(svc, *families)
                    : *families;

  // Multi-pool: refused with balancePools or a sharing key; pinned addresses are claimed the
  // ordinary way.
  const bool multi_in_effect = MultiPoolInEffect(svc, *owner.group);
  if (multi_in_effect && owner.group->balance_pools) {
    out.refusal = Refusal{
        Reason::kMultiPoolRefused,
        "multi-pool and balancePools allocation are mutually exclusive for pool " + owner.name};
    return out;
  }
  if (multi_in_effect && !sr.sharing_key.empty()) {
    out.refusal = Refusal{Reason::kMultiPoolRefused,
                          "multi-pool and allow-shared-ip (" + std::string(model::kAnnSharing) +
                              ") are mutually exclusive for pool " + owner.name};
    return out;
  }
  sr.multi = multi_in_effect && sr.requested.empty();
  return out;
}

}  // namespace pylon::allocator
