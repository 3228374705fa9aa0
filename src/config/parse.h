// Parsers for the configuration objects, each taking the whole object as the Kubernetes API
// returns it (apiVersion, kind, metadata, spec, status). None throws: every invalid input yields
// an Error (code kInvalidArgument) whose message names the object and the field,
// e.g. "ServiceGroup purelb-system/localdual: spec.local.v4pools[1].pool: 192.168.11.5-192.168.11.9
// is outside subnet 192.168.10.0/24". Pure: no I/O.
#pragma once

#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "config/group.h"
#include "config/object_meta.h"

namespace pylon::config {

// ServiceGroup purelb.io/v1 or purelb.io/v2 (namespaced). Which version's rules apply:
// spec.writtenAs
// ("v1" | "v2", set by the CRD default of the version the object was written as), else the
// object's apiVersion (docs/purelb-v2.md).
//
// v1: spec.local holds, per family, in the order tried: the single `v4pool`/`v6pool` object, then
// `v4pools[]`/`v6pools[]`, then the legacy flat `pool`/`subnet`/`aggregation` (its family taken
// from the addresses); mode kLocalOrVirtual. spec.netbox, spec.remote and spec.external are
// rejected; other v2 fields are ignored.
// v2: exactly one of spec.local (mode kLocal), spec.remote (kRemote) or spec.external (rejected:
// "not supported"); per family `v4pools[]` then the single `v4pool` (PureLB's order); the flat
// form is rejected; local.skipIPv6DAD, multiPool,
// balancePools; spec.namespaces (DNS labels, de-duplicated, sorted), enforceNamespaces and
// namespaceDefault (both need a non-empty namespaces).
// Both: each entry needs `pool` (CIDR, "a-b" inclusive range, or one address) inside `subnet`
// (CIDR); `aggregation` is "default" (also: absent or "") or "/N" with 8 <= N <= 32 (IPv4) or 128
// (IPv6) -- PureLB's own rule; N may be shorter than the subnet (PureLB documents supernetting).
// The group must end up with at least one entry; no two allocatable ranges may overlap.
Result<Group> ParseServiceGroup(const nlohmann::json& object);

// LoadBalancerClass lace-cni.io/v1alpha1 (cluster-scoped). spec.mode: "l2" (default when absent);
// "l3" is rejected as not implemented. spec.ipv4Pools[]/ipv6Pools[] of {cidr} or {start, end},
// tried in order; at least one list non-empty. A cidr entry is its own subnet for the exclusion
// of network/broadcast addresses; a {start, end} entry is taken as written.
Result<Group> ParseLoadBalancerClass(const nlohmann::json& object);

// Dispatches on `kind`: ServiceGroup or LoadBalancerClass.
Result<Group> ParseAddressSource(const nlohmann::json& object);

// A `localint` / `interfaces[]` pattern. Matching follows PureLB (Go regexp MatchString): the
// ECMAScript regex is searched anywhere in the interface name; write ^name$ for an exact match.
class InterfacePattern {
 public:
  static Result<InterfacePattern> Compile(std::string_view text);
  const std::string& text() const { return text_; }
  bool Matches(std::string_view ifname) const;
  friend bool operator==(const InterfacePattern& a, const InterfacePattern& b) {
    return a.text_ == b.text_;
  }

 private:
  std::string text_;
  std::shared_ptr<const std::regex> regex_;  // shared: patterns are immutable once compiled
};

struct NodeAgentConfig {
  ObjectMeta meta;
  PurelbVersion version = PurelbVersion::kV1;
  // nullopt: "default" -- the interface of the lowest-metric default route.
  std::optional<InterfacePattern> local_interface;
  // A valid Linux interface name (1-15 bytes, not "." or "..", no '/', ':' or whitespace).
  std::string external_interface = "kube-lb0";
  bool send_garp = false;
  // Extra interfaces whose subnets count for election.
  std::vector<InterfacePattern> interfaces;
  // purelb.io/v2 settings read but not acted upon (nodeSelector, addressConfig, the garpConfig
  // timings), one "<field path>: <what Pylon does instead>" each, for logs.
  std::vector<std::string> warnings;
};

// LBNodeAgent purelb.io/v1 or purelb.io/v2 (namespaced); the version as for ServiceGroups
// (spec.writtenAs, else apiVersion). Missing spec or spec.local means all defaults.
// v1: spec.local{localint, extlbint, sendgarp, interfaces[] (patterns)}; v2 fields ignored.
// v2: spec.local{localInterface (as localint), dummyInterface (as extlbint), interfaces[] (exact
// names, as PureLB v2), garpConfig (send_garp = garpConfig.enabled, default true; absent: false),
// addressConfig}; spec.nodeSelector. The v1 names localint/extlbint/sendgarp are refused.
// nodeSelector, addressConfig and the garpConfig timings are accepted with a warning each.
Result<NodeAgentConfig> ParseNodeAgent(const nlohmann::json& object);

// Linux dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or whitespace.
bool IsValidInterfaceName(std::string_view name);

}  // namespace pylon::config
