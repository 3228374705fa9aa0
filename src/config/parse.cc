// The config parsers' shared helpers (parse_util.h) and ParseAddressSource; each kind has its own
// parser file: service_group.cc, lb_class.cc, node_agent.cc.
#include "config/parse.h"

#include "config/json_util.h"
#include "config/parse_util.h"

namespace pylon::config {

using net::Family;

namespace detail {

namespace {

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

}  // namespace

Result<VersionedSpec> ReadVersionedSpec(const Json& object, SpecPresence presence) {
  auto spec = presence == SpecPresence::kRequired ? RequiredObject(object, "spec", "spec")
                                                  : OptionalObject(object, "spec", "spec");
  if (!spec) return Fail(spec.error());
  auto version = ReadVersion(object, *spec);
  if (!version) return Fail(version.error());
  return VersionedSpec{*spec, *version};
}

Result<Group> ParsePoolGroup(const Json& object, ObjectKind kind,
                             Status (*spec)(const Json& object, Group& g)) {
  return ParseKind<Group>(object, kind, [spec](const Json& o, Group& g) -> Status {
    if (Status s = spec(o, g); !s) return s;
    return CheckNoInternalOverlap(g);
  });
}

Status AddEntry(Group* g, const PoolSpec& spec) {
  auto e = detail::BuildPoolEntry(spec, &g->warnings);
  if (!e) return Fail(e.error());
  (e->family() == Family::kV4 ? g->v4 : g->v6).push_back(std::move(*e));
  return Ok();
}

}  // namespace detail

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

}  // namespace pylon::config
