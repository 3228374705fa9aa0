// LoadBalancerClass (lace-cni.io/v1alpha1): ParseLoadBalancerClass (parse.h).
#include "config/parse.h"

#include "config/json_util.h"
#include "config/parse_util.h"

namespace pylon::config {

using namespace detail;  // this module's internal helpers (parse_util.h)
using net::Family;

namespace {

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

Status ParseLoadBalancerClassSpec(const Json& object, Group& g) {
  g.mode = AnnounceMode::kL2;
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
  return Ok();
}

}  // namespace

Result<Group> ParseLoadBalancerClass(const Json& object) {
  return detail::ParsePoolGroup(object, ObjectKind::kLoadBalancerClass, ParseLoadBalancerClassSpec);
}

}  // namespace pylon::config
