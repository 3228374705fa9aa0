#include "k8s/object.h"

namespace pylon::k8s {
namespace {

Status StringField(const Json& meta, const char* key, std::string* out) {
  const Json* v = Find(meta, {key});
  if (v == nullptr || v->is_null()) return Ok();
  if (!v->is_string()) {
    return Fail(ErrorCode::kInvalidArgument, std::string("metadata.") + key + " is not a string");
  }
  *out = v->get<std::string>();
  return Ok();
}

Status StringMap(const Json& meta, const char* key, std::map<std::string, std::string>* out) {
  const Json* m = Find(meta, {key});
  if (m == nullptr || m->is_null()) return Ok();
  if (!m->is_object()) {
    return Fail(ErrorCode::kInvalidArgument, std::string("metadata.") + key + " is not an object");
  }
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string()) {
      return Fail(ErrorCode::kInvalidArgument,
                  std::string("metadata.") + key + "[" + k + "] is not a string");
    }
    (*out)[k] = v.get<std::string>();
  }
  return Ok();
}

}  // namespace

Result<ObjectMeta> ParseMeta(const Json& object) {
  if (!object.is_object()) return Fail(ErrorCode::kInvalidArgument, "object is not a JSON object");
  const Json* md = Find(object, {"metadata"});
  if (md == nullptr || !md->is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "object has no metadata object");
  }
  const Json& m = *md;
  ObjectMeta meta;
  std::string deletion;
  for (auto [key, field] :
       {std::pair{"name", &meta.name}, std::pair{"namespace", &meta.ns},
        std::pair{"uid", &meta.uid}, std::pair{"resourceVersion", &meta.resource_version},
        std::pair{"creationTimestamp", &meta.creation_timestamp},
        std::pair{"deletionTimestamp", &deletion}}) {
    if (auto s = StringField(m, key, field); !s) return Fail(s.error());
  }
  if (!deletion.empty()) meta.deletion_timestamp = deletion;
  if (const Json* g = Find(m, {"generation"}); g != nullptr && !g->is_null()) {
    if (!g->is_number_integer()) {
      return Fail(ErrorCode::kInvalidArgument, "metadata.generation is not an integer");
    }
    meta.generation = g->get<int64_t>();
  }
  if (auto s = StringMap(m, "labels", &meta.labels); !s) return Fail(s.error());
  if (auto s = StringMap(m, "annotations", &meta.annotations); !s) return Fail(s.error());
  if (const Json* f = Find(m, {"finalizers"}); f != nullptr && !f->is_null()) {
    if (!f->is_array()) return Fail(ErrorCode::kInvalidArgument, "metadata.finalizers not a list");
    for (const auto& v : *f) {
      if (!v.is_string()) {
        return Fail(ErrorCode::kInvalidArgument, "metadata.finalizers has a non-string");
      }
      meta.finalizers.push_back(v.get<std::string>());
    }
  }
  return meta;
}

std::string Name(const Json& o) { return FindString(o, {"metadata", "name"}).value_or(""); }
std::string Namespace(const Json& o) {
  return FindString(o, {"metadata", "namespace"}).value_or("");
}
std::string Uid(const Json& o) { return FindString(o, {"metadata", "uid"}).value_or(""); }
std::string ResourceVersion(const Json& o) {
  return FindString(o, {"metadata", "resourceVersion"}).value_or("");
}
std::string Label(const Json& o, std::string_view key) {
  return FindString(o, {"metadata", "labels", key}).value_or("");
}
std::string Annotation(const Json& o, std::string_view key) {
  return FindString(o, {"metadata", "annotations", key}).value_or("");
}
bool IsBeingDeleted(const Json& o) {
  const Json* d = Find(o, {"metadata", "deletionTimestamp"});
  return d != nullptr && !d->is_null();
}
ObjectKey KeyOf(const Json& o) { return ObjectKey{Namespace(o), Name(o)}; }

}  // namespace pylon::k8s
