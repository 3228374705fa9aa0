#include "config/object_meta.h"

#include "common/time.h"
#include "config/json_util.h"

namespace pylon::config {
std::string_view KindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kServiceGroup:
      return "ServiceGroup";
    case ObjectKind::kLoadBalancerClass:
      return "LoadBalancerClass";
    case ObjectKind::kLBNodeAgent:
      return "LBNodeAgent";
    case ObjectKind::kBGPPeer:
      return "BGPPeer";
    case ObjectKind::kBFDProfile:
      return "BFDProfile";
    case ObjectKind::kBGPAdvertisement:
      return "BGPAdvertisement";
  }
  return "?";
}

std::string_view KindApiVersion(ObjectKind kind) {
  return KindIsNamespaced(kind) ? "purelb.io/v1" : "lace-cni.io/v1alpha1";
}

bool KindAcceptsApiVersion(ObjectKind kind, std::string_view api_version) {
  if (!KindIsNamespaced(kind)) return api_version == KindApiVersion(kind);
  return api_version == "purelb.io/v1" || api_version == "purelb.io/v2";
}

bool KindIsNamespaced(ObjectKind kind) {
  return kind == ObjectKind::kServiceGroup || kind == ObjectKind::kLBNodeAgent;
}

std::string ConfigKey::ToString() const {
  std::string out(KindName(kind));
  out += ' ';
  out += name.empty() ? "(unnamed)" : object().String();
  return out;
}

Error InObject(const ConfigKey& key, const Error& e) { return e.Wrap(key.ToString()); }

Result<ObjectMeta> ParseObjectMeta(const Json& object, ObjectKind kind) {
  ObjectMeta meta;
  meta.key.kind = kind;
  if (!object.is_object()) {
    return Fail(InObject(
        meta.key, Error(ErrorCode::kInvalidArgument,
                        "must be a JSON object, got " + std::string(detail::TypeName(object)))));
  }
  // Read the name first so that every later error names the object.
  const Json* md = Find(object, {"metadata"});
  if (md != nullptr && md->is_object()) {
    const Json* n = Find(*md, {"name"});
    if (n != nullptr && n->is_string()) meta.key.name = n->get_ref<const std::string&>();
    const Json* ns = Find(*md, {"namespace"});
    if (KindIsNamespaced(kind) && ns != nullptr && ns->is_string()) {
      meta.key.namespace_ = ns->get_ref<const std::string&>();
    }
  }
  auto fail = [&](const Error& e) { return Fail(InObject(meta.key, e)); };

  auto k = detail::OptionalString(object, "kind", "kind");
  if (!k) return fail(k.error());
  if (k->has_value() && **k != KindName(kind)) {
    return fail(detail::FieldError("kind", "\"" + **k + "\" is not " + std::string(KindName(kind)))
                    .value());
  }
  auto av = detail::OptionalString(object, "apiVersion", "apiVersion");
  if (!av) return fail(av.error());
  if (av->has_value() && !KindAcceptsApiVersion(kind, **av)) {
    const std::string want = kind == ObjectKind::kLoadBalancerClass
                                 ? std::string(KindApiVersion(kind))
                                 : "purelb.io/v1 or purelb.io/v2";
    return fail(
        detail::FieldError("apiVersion", "\"" + **av + "\" is not supported (want " + want + ")")
            .value());
  }

  auto m = detail::RequiredObject(object, "metadata", "metadata");
  if (!m) return fail(m.error());
  const Json& mdo = **m;
  auto name = detail::RequiredString(mdo, "name", "metadata.name");
  if (!name) return fail(name.error());
  if (KindIsNamespaced(kind)) {
    auto ns = detail::RequiredString(mdo, "namespace", "metadata.namespace");
    if (!ns) return fail(ns.error());
  }
  auto uid = detail::OptionalString(mdo, "uid", "metadata.uid");
  if (!uid) return fail(uid.error());
  meta.uid = uid->value_or("");
  auto rv = detail::OptionalString(mdo, "resourceVersion", "metadata.resourceVersion");
  if (!rv) return fail(rv.error());
  meta.resource_version = rv->value_or("");
  auto gen = detail::OptionalNonNegativeInt(mdo, "generation", "metadata.generation");
  if (!gen) return fail(gen.error());
  meta.generation = gen->value_or(0);
  auto ct = detail::OptionalString(mdo, "creationTimestamp", "metadata.creationTimestamp");
  if (!ct) return fail(ct.error());
  if (ct->has_value()) {
    auto t = ParseTime(**ct);
    if (!t) {
      return fail(Error(
          ErrorCode::kInvalidArgument,
          "metadata.creationTimestamp: \"" + (*ct)->substr(0, 64) + "\" is not an RFC 3339 time"));
    }
    meta.created = *t;
  }
  return meta;
}

}  // namespace pylon::config
