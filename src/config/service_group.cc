// ServiceGroup (purelb.io/v1 and v2): ParseServiceGroup (parse.h).
#include "config/parse.h"

#include "config/json_util.h"
#include "config/parse_util.h"

namespace pylon::config {

using namespace detail;  // this module's internal helpers (parse_util.h)
using net::Family;

namespace {

// Reads {pool, subnet, aggregation} at `path` into a PoolSpec.
Result<detail::PoolSpec> ReadPurelbPool(const Json& entry, const std::string& path,
                                        std::optional<Family> family) {
  if (auto s = detail::ExpectObject(entry, path); !s) return Fail(s.error());
  detail::PoolSpec spec;
  spec.entry_path = path;
  spec.pool_path = Child(path, "pool");
  spec.subnet_path = Child(path, "subnet");
  spec.aggregation_path = Child(path, "aggregation");
  spec.list_family = family;
  auto pool = detail::RequiredString(entry, "pool", spec.pool_path);
  if (!pool) return Fail(pool.error());
  spec.pool = *pool;
  auto subnet = detail::RequiredString(entry, "subnet", spec.subnet_path);
  if (!subnet) return Fail(subnet.error());
  spec.subnet = *subnet;
  auto ag = detail::OptionalString(entry, "aggregation", spec.aggregation_path);
  if (!ag) return Fail(ag.error());
  spec.aggregation = *ag;
  return spec;
}

// The pool fields of spec.local / spec.remote for one family. v1 order: the single `v4pool`
// first, then `v4pools[]`; v2 order (PureLB v2): `v4pools[]` first, the single one appended.
Status ParsePoolFields(const Json& parent, const std::string& base, Family family,
                       bool single_first, Group* g) {
  const bool v4 = family == Family::kV4;
  const std::string single = v4 ? "v4pool" : "v6pool";
  const std::string list = v4 ? "v4pools" : "v6pools";
  const std::string single_path = Child(base, single);
  auto one = detail::OptionalObject(parent, single, single_path);
  if (!one) return Fail(one.error());
  auto add_single = [&]() -> Status {
    if (*one == nullptr) return Ok();
    auto spec = ReadPurelbPool(**one, single_path, family);
    if (!spec) return Fail(spec.error());
    return AddEntry(g, *spec);
  };
  if (single_first) {
    if (auto s = add_single(); !s) return s;
  }
  const std::string list_path = Child(base, list);
  auto arr = detail::OptionalArray(parent, list, list_path);
  if (!arr) return Fail(arr.error());
  if (*arr != nullptr) {
    std::size_t i = 0;
    for (const Json& item : **arr) {
      auto spec = ReadPurelbPool(item, Index(list_path, i++), family);
      if (!spec) return Fail(spec.error());
      if (auto s = AddEntry(g, *spec); !s) return s;
    }
  }
  if (!single_first) return add_single();
  return Ok();
}

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

Result<bool> ReadFlag(const Json& parent, std::string_view key, const std::string& path) {
  auto b = detail::OptionalBool(parent, key, path);
  if (!b) return Fail(b.error());
  return b->value_or(false);
}

// purelb.io/v1: spec.local only (local-or-virtual), with the legacy flat single-pool form.
Status ParseServiceGroupV1Spec(const Json& spec, Group& g) {
  if (Find(spec, {"netbox"}) != nullptr) {
    return FieldError("spec.netbox", "Netbox IPAM is not supported; use spec.local");
  }
  for (const char* v2_only : {"remote", "external"}) {
    if (Find(spec, {v2_only}) != nullptr) {
      return FieldError(Child("spec", v2_only),
                        "is a purelb.io/v2 field, and this object follows purelb.io/v1 "
                        "(spec.writtenAs); write it as apiVersion purelb.io/v2");
    }
  }
  g.mode = AnnounceMode::kLocalOrVirtual;
  auto local = detail::RequiredObject(spec, "local", "spec.local");
  if (!local) return Fail(local.error());
  const Json& l = **local;
  // Validate the legacy flat fields' types before the lists so errors come in field order.
  auto pool = detail::OptionalString(l, "pool", "spec.local.pool");
  if (!pool) return Fail(pool.error());
  auto subnet = detail::OptionalString(l, "subnet", "spec.local.subnet");
  if (!subnet) return Fail(subnet.error());
  auto ag = detail::OptionalString(l, "aggregation", "spec.local.aggregation");
  if (!ag) return Fail(ag.error());
  if (auto s = ParsePoolFields(l, "spec.local", Family::kV4, true, &g); !s) return s;
  if (auto s = ParsePoolFields(l, "spec.local", Family::kV6, true, &g); !s) return s;
  if (pool->has_value() || subnet->has_value() || ag->has_value()) {
    auto legacy = ReadPurelbPool(l, "spec.local", std::nullopt);
    if (!legacy) return Fail(legacy.error());
    if (auto s = AddEntry(&g, *legacy); !s) return s;
  }
  if (g.v4.empty() && g.v6.empty()) {
    return FieldError("spec.local",
                      "no address pools (set v4pools, v6pools, v4pool, v6pool, or pool and "
                      "subnet)");
  }
  return Ok();
}

// purelb.io/v2 (PureLB 0.15-0.17): exactly one of local (NIC only), remote (kube-lb0 on every
// node) or external (refused: Pylon has no external IPAM); namespaces scoping.
Status ParseServiceGroupV2Spec(const Json& spec, Group& g) {
  std::vector<std::string> present;
  for (const char* k : {"local", "remote", "external", "netbox"}) {
    if (Find(spec, {k}) != nullptr) present.emplace_back(k);
  }
  if (present.size() != 1) {
    std::string found;
    for (const auto& p : present) found += (found.empty() ? "" : ", ") + p;
    return FieldError("spec", "exactly one of local, remote or external must be set (found " +
                                  (found.empty() ? std::string("none") : found) + ")");
  }
  const std::string& which = present[0];
  const std::string base = Child("spec", which);
  auto part = detail::RequiredObject(spec, which, base);
  if (!part) return Fail(part.error());
  const Json& p = **part;
  if (which == "netbox") {
    return FieldError(base,
                      "Netbox IPAM is not supported (PureLB 0.17 replaced it by "
                      "spec.external, which Pylon does not support either); use "
                      "spec.local or spec.remote");
  }
  if (which == "external") {
    auto provider = detail::OptionalString(p, "provider", Child(base, "provider"));
    std::string name = provider && provider->has_value() ? (*provider)->substr(0, 100) : "";
    return FieldError(base, "external IPAM" + (name.empty() ? "" : " (provider " + name + ")") +
                                " is not supported by Pylon; use spec.local or spec.remote");
  }
  g.mode = which == "local" ? AnnounceMode::kLocal : AnnounceMode::kRemote;
  for (const char* legacy : {"pool", "subnet", "aggregation"}) {
    if (Find(p, {legacy}) != nullptr) {
      return FieldError(Child(base, legacy),
                        "the single-pool form is purelb.io/v1 only; use v4pools / v6pools");
    }
  }
  if (auto s = ParsePoolFields(p, base, Family::kV4, false, &g); !s) return s;
  if (auto s = ParsePoolFields(p, base, Family::kV6, false, &g); !s) return s;
  if (g.v4.empty() && g.v6.empty()) {
    return FieldError(base, "no address pools (set v4pools, v6pools, v4pool or v6pool)");
  }
  if (which == "local") {
    auto dad = ReadFlag(p, "skipIPv6DAD", Child(base, "skipIPv6DAD"));
    if (!dad) return Fail(dad.error());
    g.skip_ipv6_dad = *dad;
  }
  auto multi = ReadFlag(p, "multiPool", Child(base, "multiPool"));
  if (!multi) return Fail(multi.error());
  g.multi_pool = *multi;
  auto balance = ReadFlag(p, "balancePools", Child(base, "balancePools"));
  if (!balance) return Fail(balance.error());
  g.balance_pools = *balance;
  if (g.multi_pool && g.balance_pools) {
    g.warnings.push_back(Child(base, "multiPool") +
                         ": multiPool and balancePools are mutually exclusive; a Service with "
                         "multi-pool in effect is refused (annotate it purelb.io/multi-pool: "
                         "\"false\" to get one balanced address)");
  }

  constexpr std::size_t kMaxNamespaces = 1024;
  Status nss = detail::ForEachString(
      spec, "namespaces", "spec.namespaces",
      [&](const std::string& ns, const std::string& path) -> Status {
        if (g.namespaces.size() == kMaxNamespaces) {
          return FieldError("spec.namespaces",
                            "more than " + std::to_string(kMaxNamespaces) + " entries");
        }
        if (!IsDnsLabel(ns)) {
          return FieldError(path, "\"" + ns.substr(0, 100) +
                                      "\" is not a namespace name (a DNS label: at most 63 of a-z, "
                                      "0-9 and '-', starting and ending alphanumeric)");
        }
        g.namespaces.push_back(ns);
        return Ok();
      });
  if (!nss) return nss;
  std::sort(g.namespaces.begin(), g.namespaces.end());
  g.namespaces.erase(std::unique(g.namespaces.begin(), g.namespaces.end()), g.namespaces.end());
  auto enforce = ReadFlag(spec, "enforceNamespaces", "spec.enforceNamespaces");
  if (!enforce) return Fail(enforce.error());
  g.enforce_namespaces = *enforce;
  auto def = ReadFlag(spec, "namespaceDefault", "spec.namespaceDefault");
  if (!def) return Fail(def.error());
  g.namespace_default = *def;
  if (g.enforce_namespaces && g.namespaces.empty()) {
    return FieldError("spec.enforceNamespaces",
                      "requires a non-empty spec.namespaces (it would enforce nothing)");
  }
  if (g.namespace_default && g.namespaces.empty()) {
    return FieldError("spec.namespaceDefault",
                      "requires a non-empty spec.namespaces (it would default nothing)");
  }
  return Ok();
}

Status ParseServiceGroupSpec(const Json& object, Group& g) {
  auto read = detail::ReadVersionedSpec(object, detail::SpecPresence::kRequired);
  if (!read) return Fail(read.error());
  g.version = read->version;
  return g.version == PurelbVersion::kV1 ? ParseServiceGroupV1Spec(*read->spec, g)
                                         : ParseServiceGroupV2Spec(*read->spec, g);
}

}  // namespace

Result<Group> ParseServiceGroup(const Json& object) {
  return detail::ParsePoolGroup(object, ObjectKind::kServiceGroup, ParseServiceGroupSpec);
}

}  // namespace pylon::config
