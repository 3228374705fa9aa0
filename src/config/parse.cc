#include "config/parse.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "common/duration.h"
#include "config/json_util.h"

namespace pylon::config {

using detail::Child;
using detail::FieldError;
using detail::Index;
using net::Family;

namespace {

// Runs `body`; anything thrown (a bug, or bad_alloc) becomes an Error instead of escaping.
template <typename T, typename F>
Result<T> Guard(ObjectKind kind, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kInternal,
                std::string(KindName(kind)) + ": internal error while parsing: " + e.what());
  } catch (...) {
    return Fail(ErrorCode::kInternal, std::string(KindName(kind)) + ": internal error");
  }
}

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

Status AddEntry(Group* g, const detail::PoolSpec& spec) {
  auto e = detail::BuildPoolEntry(spec, &g->warnings);
  if (!e) return Fail(e.error());
  (e->family() == Family::kV4 ? g->v4 : g->v6).push_back(std::move(*e));
  return Ok();
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

// spec.writtenAs ("v1" | "v2"), else the object's apiVersion.
Result<PurelbVersion> ReadVersion(const Json& object, const Json* spec) {
  if (spec != nullptr && spec->is_object()) {
    auto w = detail::OptionalString(*spec, "writtenAs", "spec.writtenAs");
    if (!w) return Fail(w.error());
    if (w->has_value()) {
      if (**w == "v1") return PurelbVersion::kV1;
      if (**w == "v2") return PurelbVersion::kV2;
      return FieldError("spec.writtenAs", "\"" + (*w)->substr(0, 100) + "\" is not v1 or v2");
    }
  }
  const Json* av = Find(object, {"apiVersion"});
  if (av != nullptr && av->is_string() && av->get_ref<const std::string&>() == "purelb.io/v2") {
    return PurelbVersion::kV2;
  }
  return PurelbVersion::kV1;
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

  auto nss = detail::OptionalArray(spec, "namespaces", "spec.namespaces");
  if (!nss) return Fail(nss.error());
  if (*nss != nullptr) {
    if ((*nss)->size() > 1024) return FieldError("spec.namespaces", "more than 1024 entries");
    std::size_t i = 0;
    for (const Json& item : **nss) {
      const std::string path = Index("spec.namespaces", i++);
      if (!item.is_string()) {
        return FieldError(path, "must be a string, got " + std::string(detail::TypeName(item)));
      }
      const auto& ns = item.get_ref<const std::string&>();
      if (!IsDnsLabel(ns)) {
        return FieldError(path, "\"" + ns.substr(0, 100) +
                                    "\" is not a namespace name (a DNS label: at most 63 of a-z, "
                                    "0-9 and '-', starting and ending alphanumeric)");
      }
      g.namespaces.push_back(ns);
    }
    std::sort(g.namespaces.begin(), g.namespaces.end());
    g.namespaces.erase(std::unique(g.namespaces.begin(), g.namespaces.end()), g.namespaces.end());
  }
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

Result<Group> ParseServiceGroupUnguarded(const Json& object) {
  auto meta = ParseObjectMeta(object, ObjectKind::kServiceGroup);
  if (!meta) return Fail(meta.error());
  Group g;
  g.meta = std::move(*meta);
  auto body = [&]() -> Status {
    auto spec = detail::RequiredObject(object, "spec", "spec");
    if (!spec) return Fail(spec.error());
    auto version = ReadVersion(object, *spec);
    if (!version) return Fail(version.error());
    g.version = *version;
    Status s = g.version == PurelbVersion::kV1 ? ParseServiceGroupV1Spec(**spec, g)
                                               : ParseServiceGroupV2Spec(**spec, g);
    if (!s) return s;
    return detail::CheckNoInternalOverlap(g);
  };
  if (auto s = body(); !s) return Fail(InObject(g.meta.key, s.error()));
  return g;
}

Status ParseClassList(const Json& spec, Family family, Group* g) {
  const bool v4 = family == Family::kV4;
  const std::string key = v4 ? "ipv4Pools" : "ipv6Pools";
  const std::string path = Child("spec", key);
  auto arr = detail::OptionalArray(spec, key, path);
  if (!arr) return Fail(arr.error());
  if (*arr == nullptr) return Ok();
  std::size_t i = 0;
  for (const Json& item : **arr) {
    const std::string ipath = Index(path, i++);
    if (auto s = detail::ExpectObject(item, ipath); !s) return s;
    auto cidr = detail::OptionalString(item, "cidr", Child(ipath, "cidr"));
    if (!cidr) return Fail(cidr.error());
    auto start = detail::OptionalString(item, "start", Child(ipath, "start"));
    if (!start) return Fail(start.error());
    auto end = detail::OptionalString(item, "end", Child(ipath, "end"));
    if (!end) return Fail(end.error());
    detail::PoolSpec ps;
    ps.entry_path = ipath;
    ps.list_family = family;
    if (cidr->has_value()) {
      if (start->has_value() || end->has_value()) {
        return FieldError(ipath, "has both cidr and start/end; set one");
      }
      ps.pool_path = Child(ipath, "cidr");
      ps.pool = **cidr;
      if (ps.pool.empty()) return FieldError(ps.pool_path, "required");
      ps.pool_is_subnet = true;
      ps.noun = "cidr";
    } else {
      if (!start->has_value() && !end->has_value()) {
        return FieldError(ipath, "needs cidr, or start and end");
      }
      if (!start->has_value() || (*start)->empty()) {
        return FieldError(Child(ipath, "start"), "required");
      }
      if (!end->has_value() || (*end)->empty()) return FieldError(Child(ipath, "end"), "required");
      ps.is_start_end = true;
      ps.start = **start;
      ps.end = **end;
    }
    if (auto s = AddEntry(g, ps); !s) return s;
  }
  return Ok();
}

Result<Group> ParseLoadBalancerClassUnguarded(const Json& object) {
  auto meta = ParseObjectMeta(object, ObjectKind::kLoadBalancerClass);
  if (!meta) return Fail(meta.error());
  Group g;
  g.meta = std::move(*meta);
  g.mode = AnnounceMode::kL2;
  auto body = [&]() -> Status {
    auto spec = detail::RequiredObject(object, "spec", "spec");
    if (!spec) return Fail(spec.error());
    auto mode = detail::OptionalString(**spec, "mode", "spec.mode");
    if (!mode) return Fail(mode.error());
    if (mode->has_value()) {
      if (**mode == "l3") {
        g.mode = AnnounceMode::kL3;
      } else if (**mode != "l2") {
        return FieldError("spec.mode",
                          "unknown mode \"" + (*mode)->substr(0, 100) + "\" (want l2 or l3)");
      }
    }
    if (auto s = ParseClassList(**spec, Family::kV4, &g); !s) return s;
    if (auto s = ParseClassList(**spec, Family::kV6, &g); !s) return s;
    if (g.v4.empty() && g.v6.empty()) {
      return FieldError("spec", "at least one of ipv4Pools and ipv6Pools must be non-empty");
    }
    return detail::CheckNoInternalOverlap(g);
  };
  if (auto s = body(); !s) return Fail(InObject(g.meta.key, s.error()));
  return g;
}

constexpr std::size_t kMaxPatternLength = 256;

Result<InterfacePattern> ReadPattern(const Json& parent, std::string_view key,
                                     const std::string& path) {
  auto text = detail::RequiredString(parent, key, path);
  if (!text) return Fail(text.error());
  auto p = InterfacePattern::Compile(*text);
  if (!p) return FieldError(path, p.error().message());
  return p;
}

Status ReadInterfaceName(const Json& l, std::string_view key, const std::string& path,
                         std::string* out) {
  auto ext = detail::OptionalString(l, key, path);
  if (!ext) return Fail(ext.error());
  if (ext->has_value() && !(*ext)->empty()) {
    if (!IsValidInterfaceName(**ext)) {
      return FieldError(path, "\"" + (*ext)->substr(0, 100) +
                                  "\" is not a valid interface name (1-15 characters, no '/', ':' "
                                  "or whitespace, not \".\" or \"..\")");
    }
    *out = **ext;
  }
  return Ok();
}

Status ReadLocalInterface(const Json& l, std::string_view key, const std::string& path,
                          NodeAgentConfig* c) {
  auto li = detail::OptionalString(l, key, path);
  if (!li) return Fail(li.error());
  if (li->has_value() && !(*li)->empty() && **li != "default") {
    auto p = ReadPattern(l, key, path);
    if (!p) return Fail(p.error());
    c->local_interface = std::move(*p);
  }
  return Ok();
}

// `^name$` with every regex metacharacter of `name` escaped: an exact interface name.
std::string ExactNamePattern(std::string_view name) {
  std::string out = "^";
  for (char ch : name) {
    if (std::string_view(R"(\^$.|?*+()[]{}-)").find(ch) != std::string_view::npos) out += '\\';
    out += ch;
  }
  return out + "$";
}

Status ReadInterfaces(const Json& l, bool exact_names, NodeAgentConfig* c) {
  auto ifs = detail::OptionalArray(l, "interfaces", "spec.local.interfaces");
  if (!ifs) return Fail(ifs.error());
  if (*ifs == nullptr) return Ok();
  std::size_t i = 0;
  for (const Json& item : **ifs) {
    const std::string path = Index("spec.local.interfaces", i++);
    if (!item.is_string()) {
      return FieldError(path, "must be a string, got " + std::string(detail::TypeName(item)));
    }
    const auto& text = item.get_ref<const std::string&>();
    if (text.empty()) return FieldError(path, "required");
    if (exact_names && !IsValidInterfaceName(text)) {
      return FieldError(path, "\"" + text.substr(0, 100) + "\" is not a valid interface name");
    }
    auto p = InterfacePattern::Compile(exact_names ? ExactNamePattern(text) : text);
    if (!p) return FieldError(path, p.error().message());
    c->interfaces.push_back(std::move(*p));
  }
  return Ok();
}

// A garpConfig duration: absent -> `fallback`; unparseable or negative -> `fallback` with a warning
// (PureLB logs and uses its default).
Result<Duration> ReadGarpDuration(const Json& g, std::string_view key, Duration fallback,
                                  std::vector<std::string>& warnings) {
  const std::string path = Child("spec.local.garpConfig", key);
  auto text = detail::OptionalString(g, key, path);
  if (!text) return Fail(text.error());
  if (!text->has_value()) return fallback;
  auto d = ParseGoDuration(**text);
  if (d && *d >= Duration(0)) return *d;
  warnings.push_back(
      path + ": \"" + (*text)->substr(0, 40) + "\" is not a duration; using the default " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(fallback).count()) +
      "ms");
  return fallback;
}

Result<GarpTimings> ReadGarpTimings(const Json& g, std::vector<std::string>& warnings) {
  GarpTimings t;
  auto delay = ReadGarpDuration(g, "initialDelay", t.initial_delay, warnings);
  if (!delay) return Fail(delay.error());
  t.initial_delay = *delay;
  auto interval = ReadGarpDuration(g, "interval", t.interval, warnings);
  if (!interval) return Fail(interval.error());
  t.interval = *interval;
  const std::string count_path = "spec.local.garpConfig.count";
  if (const Json* count = Find(g, {"count"}); count != nullptr) {
    if (!count->is_number_integer()) {
      return FieldError(count_path,
                        "must be an integer, got " + std::string(detail::TypeName(*count)));
    }
    const std::int64_t n = count->get<std::int64_t>();
    t.count = static_cast<int>(std::clamp<std::int64_t>(n, 1, 10));
    if (t.count != n) {
      warnings.push_back(count_path + ": " + std::to_string(n) + " is outside 1..10; using " +
                         std::to_string(t.count));
    }
  }
  auto verify =
      detail::OptionalBool(g, "verifyBeforeSend", "spec.local.garpConfig.verifyBeforeSend");
  if (!verify) return Fail(verify.error());
  t.verify_before_send = verify->value_or(true);
  return t;
}

Result<InterfaceAddressConfig> ReadInterfaceAddressConfig(const Json& o, const std::string& path,
                                                          std::vector<std::string>& warnings) {
  // kForever (0xffffffff) is the kernel's "permanent"; 0 says that here.
  constexpr std::int64_t kMaxSeconds = 4294967294;
  InterfaceAddressConfig out;
  auto seconds = [&](const char* key) -> Result<std::optional<std::uint32_t>> {
    const std::string p = Child(path, key);
    auto v = detail::OptionalNonNegativeInt(o, key, p);
    if (!v) return Fail(v.error());
    if (!v->has_value()) return std::optional<std::uint32_t>();
    if (**v > kMaxSeconds) {
      return FieldError(p, "at most " + std::to_string(kMaxSeconds) + " seconds (0: permanent)");
    }
    return std::optional<std::uint32_t>(static_cast<std::uint32_t>(**v));
  };
  auto valid = seconds("validLifetime");
  if (!valid) return Fail(valid.error());
  out.valid_lifetime = *valid;
  if (out.valid_lifetime && *out.valid_lifetime > 0 && *out.valid_lifetime < 60) {
    warnings.push_back(Child(path, "validLifetime") + ": " + std::to_string(*out.valid_lifetime) +
                       "s raised to 60s (the minimum)");
    out.valid_lifetime = 60;
  }
  auto preferred = seconds("preferredLifetime");
  if (!preferred) return Fail(preferred.error());
  out.preferred_lifetime = *preferred;
  auto npr = detail::OptionalBool(o, "noPrefixRoute", Child(path, "noPrefixRoute"));
  if (!npr) return Fail(npr.error());
  out.no_prefix_route = *npr;
  return out;
}

Status ParseNodeAgentV1Local(const Json& l, NodeAgentConfig& c) {
  if (auto s = ReadLocalInterface(l, "localint", "spec.local.localint", &c); !s) return s;
  if (auto s = ReadInterfaceName(l, "extlbint", "spec.local.extlbint", &c.external_interface); !s) {
    return s;
  }
  auto garp = detail::OptionalBool(l, "sendgarp", "spec.local.sendgarp");
  if (!garp) return Fail(garp.error());
  c.send_garp = garp->value_or(false);
  return ReadInterfaces(l, /*exact_names=*/false, &c);
}

Status ParseNodeAgentV2Local(const Json& l, NodeAgentConfig& c) {
  const std::pair<const char*, const char*> renamed[] = {
      {"localint", "localInterface"}, {"extlbint", "dummyInterface"}, {"sendgarp", "garpConfig"}};
  for (const auto& [old_name, new_name] : renamed) {
    if (Find(l, {old_name}) != nullptr) {
      return FieldError(Child("spec.local", old_name),
                        std::string("is a purelb.io/v1 field; purelb.io/v2 calls it ") + new_name);
    }
  }
  if (auto s = ReadLocalInterface(l, "localInterface", "spec.local.localInterface", &c); !s) {
    return s;
  }
  if (auto s = ReadInterfaceName(l, "dummyInterface", "spec.local.dummyInterface",
                                 &c.external_interface);
      !s) {
    return s;
  }
  if (auto s = ReadInterfaces(l, /*exact_names=*/true, &c); !s) return s;
  auto garp = detail::OptionalObject(l, "garpConfig", "spec.local.garpConfig");
  if (!garp) return Fail(garp.error());
  if (*garp != nullptr) {
    auto enabled = detail::OptionalBool(**garp, "enabled", "spec.local.garpConfig.enabled");
    if (!enabled) return Fail(enabled.error());
    c.send_garp = enabled->value_or(true);
    auto timings = ReadGarpTimings(**garp, c.warnings);
    if (!timings) return Fail(timings.error());
    if (c.send_garp) c.garp = *timings;
  }
  auto ac = detail::OptionalObject(l, "addressConfig", "spec.local.addressConfig");
  if (!ac) return Fail(ac.error());
  if (*ac != nullptr) {
    AddressConfig config;
    for (auto [key, out] :
         {std::pair{"localInterface", &config.local}, std::pair{"dummyInterface", &config.dummy}}) {
      const std::string path = Child("spec.local.addressConfig", key);
      auto one = detail::OptionalObject(**ac, key, path);
      if (!one) return Fail(one.error());
      if (*one == nullptr) continue;
      auto read = ReadInterfaceAddressConfig(**one, path, c.warnings);
      if (!read) return Fail(read.error());
      *out = *read;
    }
    c.address_config = config;
  }
  return Ok();
}

Result<NodeAgentConfig> ParseNodeAgentUnguarded(const Json& object) {
  auto meta = ParseObjectMeta(object, ObjectKind::kLBNodeAgent);
  if (!meta) return Fail(meta.error());
  NodeAgentConfig c;
  c.meta = std::move(*meta);
  auto body = [&]() -> Status {
    auto spec = detail::OptionalObject(object, "spec", "spec");
    if (!spec) return Fail(spec.error());
    auto version = ReadVersion(object, *spec);
    if (!version) return Fail(version.error());
    c.version = *version;
    if (*spec == nullptr) return Ok();
    const bool v2 = c.version == PurelbVersion::kV2;
    if (v2) {
      auto sel = detail::OptionalObject(**spec, "nodeSelector", "spec.nodeSelector");
      if (!sel) return Fail(sel.error());
      if (*sel != nullptr && !(*sel)->empty()) c.node_selector = **sel;
    }
    auto local = detail::OptionalObject(**spec, "local", "spec.local");
    if (!local) return Fail(local.error());
    if (*local == nullptr) return Ok();
    c.has_local = true;
    return v2 ? ParseNodeAgentV2Local(**local, c) : ParseNodeAgentV1Local(**local, c);
  };
  if (auto s = body(); !s) return Fail(InObject(c.meta.key, s.error()));
  return c;
}

}  // namespace

Result<Group> ParseServiceGroup(const Json& object) {
  return Guard<Group>(ObjectKind::kServiceGroup,
                      [&] { return ParseServiceGroupUnguarded(object); });
}

Result<Group> ParseLoadBalancerClass(const Json& object) {
  return Guard<Group>(ObjectKind::kLoadBalancerClass,
                      [&] { return ParseLoadBalancerClassUnguarded(object); });
}

Result<Group> ParseAddressSource(const Json& object) {
  const Json* kind = Find(object, {"kind"});
  if (kind != nullptr && kind->is_string()) {
    const auto& k = kind->get_ref<const std::string&>();
    if (k == KindName(ObjectKind::kServiceGroup)) return ParseServiceGroup(object);
    if (k == KindName(ObjectKind::kLoadBalancerClass)) return ParseLoadBalancerClass(object);
    return Fail(ErrorCode::kInvalidArgument,
                "kind: \"" + k.substr(0, 100) + "\" is not ServiceGroup or LoadBalancerClass");
  }
  if (!object.is_object()) {
    return Fail(ErrorCode::kInvalidArgument,
                "must be a JSON object, got " + std::string(detail::TypeName(object)));
  }
  return Fail(ErrorCode::kInvalidArgument,
              kind == nullptr
                  ? "kind: required"
                  : "kind: must be a string, got " + std::string(detail::TypeName(*kind)));
}

Result<NodeAgentConfig> ParseNodeAgent(const Json& object) {
  return Guard<NodeAgentConfig>(ObjectKind::kLBNodeAgent,
                                [&] { return ParseNodeAgentUnguarded(object); });
}

Result<InterfacePattern> InterfacePattern::Compile(std::string_view text) {
  if (text.empty()) return Fail(ErrorCode::kInvalidArgument, "empty pattern");
  if (text.size() > kMaxPatternLength) {
    return Fail(ErrorCode::kInvalidArgument,
                "pattern is longer than " + std::to_string(kMaxPatternLength) + " characters");
  }
  InterfacePattern p;
  p.text_ = std::string(text);
  try {
    p.regex_ = std::make_shared<const std::regex>(p.text_, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + p.text_ + "\" is not a valid regular expression: " + e.what());
  }
  return p;
}

bool InterfacePattern::Matches(std::string_view ifname) const {
  if (!regex_) return false;
  try {
    return std::regex_search(ifname.begin(), ifname.end(), *regex_);
  } catch (const std::regex_error&) {
    return false;  // complexity limits: treat as no match
  }
}

bool IsValidInterfaceName(std::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) != 0 || c == '\0') {
      return false;
    }
  }
  return true;
}

}  // namespace pylon::config
