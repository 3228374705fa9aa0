// Parsers for the configuration objects, each taking the whole object as the Kubernetes API
// returns it (apiVersion, kind, metadata, spec, status). None throws: every invalid input yields
// an Error (code kInvalidArgument) whose message names the object and the field,
// e.g. "ServiceGroup purelb-system/localdual: spec.local.v4pools[1].pool: 192.168.11.5-192.168.11.9
// is outside subnet 192.168.10.0/24". Pure: no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"

#include "common/clock.h"
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
Result<Group> ParseServiceGroup(const Json& object);

// LoadBalancerClass lace-cni.io/v1alpha1 (cluster-scoped). spec.mode: "l2" (default when absent);
// "l3" is rejected as not implemented. spec.ipv4Pools[]/ipv6Pools[] of {cidr} or {start, end},
// tried in order; at least one list non-empty. A cidr entry is its own subnet for the exclusion
// of network/broadcast addresses; a {start, end} entry is taken as written.
Result<Group> ParseLoadBalancerClass(const Json& object);

// Dispatches on `kind`: ServiceGroup or LoadBalancerClass.
Result<Group> ParseAddressSource(const Json& object);

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

// purelb.io/v2 spec.local.garpConfig (present and enabled). Absent fields take PureLB's CRD
// defaults; a duration that does not parse takes the default too, with a warning.
struct GarpTimings {
  Duration initial_delay = std::chrono::milliseconds(100);  // before the first packet
  int count = 3;                                            // packets per takeover, 1..10
  Duration interval = std::chrono::milliseconds(500);       // between packets
  bool verify_before_send = true;
  friend bool operator==(const GarpTimings&, const GarpTimings&) = default;
};

// purelb.io/v2 spec.local.addressConfig.localInterface / .dummyInterface. Absent fields leave the
// agent's own default (docs/purelb-v2.md).
struct InterfaceAddressConfig {
  // Seconds; 0 = permanent. A non-zero value below 60 is raised to 60 (PureLB), with a warning.
  std::optional<std::uint32_t> valid_lifetime;
  // Seconds; the agent clamps it to the valid lifetime. IPv6 addresses always get 0.
  std::optional<std::uint32_t> preferred_lifetime;
  std::optional<bool> no_prefix_route;  // IFA_F_NOPREFIXROUTE
  friend bool operator==(const InterfaceAddressConfig&, const InterfaceAddressConfig&) = default;
};

struct AddressConfig {
  std::optional<InterfaceAddressConfig> local;  // addresses on announcing (NIC) interfaces
  std::optional<InterfaceAddressConfig> dummy;  // addresses on the dummy (virtual) interface
  friend bool operator==(const AddressConfig&, const AddressConfig&) = default;
};

struct NodeAgentConfig {
  ObjectMeta meta;
  PurelbVersion version = PurelbVersion::kV1;
  // nullopt: "default" -- the interface of the lowest-metric default route.
  std::optional<InterfacePattern> local_interface;
  // A valid Linux interface name (1-15 bytes, not "." or "..", no '/', ':' or whitespace).
  std::string external_interface = "kube-lb0";
  // v1: sendgarp. v2: garpConfig present and enabled.
  bool send_garp = false;
  // v2 with send_garp only: the garpConfig timings.
  std::optional<GarpTimings> garp;
  // v2 only; nullopt when absent.
  std::optional<AddressConfig> address_config;
  // spec.local is present. A v2 object without it configures nothing (it still takes part in the
  // choice of the governing object, agent/node_agent_select.h).
  bool has_local = false;
  // v2 spec.nodeSelector when present and not `{}` (a metav1.LabelSelector, unvalidated: an
  // unusable selector matches no node, which the agent reports). nullopt: every node.
  std::optional<Json> node_selector;
  // Extra interfaces whose subnets count for election.
  std::vector<InterfacePattern> interfaces;
  // Accepted with a change worth telling the user (a lifetime raised to 60 s, an unparseable
  // GARP duration replaced by its default), one "<field path>: <what Pylon does>" each, for logs.
  std::vector<std::string> warnings;

  // GARP/NA is off altogether: a v2 object without garpConfig or with `enabled: false`.
  bool garp_off() const { return version == PurelbVersion::kV2 && !send_garp; }
};

// LBNodeAgent purelb.io/v1 or purelb.io/v2 (namespaced); the version as for ServiceGroups
// (spec.writtenAs, else apiVersion). Missing spec or spec.local means all defaults.
// v1: spec.local{localint, extlbint, sendgarp, interfaces[] (patterns)}; v2 fields ignored.
// v2: spec.local{localInterface (as localint), dummyInterface (as extlbint), interfaces[] (exact
// names, as PureLB v2), garpConfig (send_garp = garpConfig.enabled, default true; absent: false;
// timings in `garp`), addressConfig{localInterface, dummyInterface}{validLifetime,
// preferredLifetime (integers 0..4294967294), noPrefixRoute}}; spec.nodeSelector (an object).
// The v1 names localint/extlbint/sendgarp are refused.
Result<NodeAgentConfig> ParseNodeAgent(const Json& object);

// Linux dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or whitespace.
bool IsValidInterfaceName(std::string_view name);

}  // namespace pylon::config
