// CustomResourceDefinitions and the custom resources they define: CRD status (NamesAccepted,
// Established at once), structural-schema pruning, defaulting and type checks of custom resources,
// status subresource handling and metadata.generation.
#include <algorithm>

#include "apiserver/strategies_internal.h"

namespace pylon::apiserver {
namespace {

std::string JsonTypeName(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool TypeMatches(const std::string& want, const Json& v) {
  if (want.empty()) return true;
  if (want == "object") return v.is_object();
  if (want == "array") return v.is_array();
  if (want == "string") return v.is_string();
  if (want == "boolean") return v.is_boolean();
  if (want == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() &&
            v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
  if (want == "number") return v.is_number();
  return true;
}

// Walks `v` against a structural schema. With `prune`, drops unknown object fields and fills
// defaults; with `errs`, records type/enum/required violations.
void Walk(Json& v, const Json& schema, const std::string& path, bool prune, FieldErrors* errs,
          bool root) {
  if (!schema.is_object()) return;
  if (v.is_null() && BoolOr(schema, "nullable", false)) return;
  std::string type = StrOr(schema, "type");
  bool int_or_string = BoolOr(schema, "x-kubernetes-int-or-string", false);
  if (errs && !type.empty() && !int_or_string && !TypeMatches(type, v)) {
    errs->push_back(FieldError::Invalid(
        path, JsonTypeName(v),
        path + " in body must be of type " + type + ": \"" + JsonTypeName(v) + "\""));
    return;
  }
  if (errs) {
    if (const Json* en = Find(schema, {"enum"}); en && en->is_array() && !en->empty()) {
      if (std::find(en->begin(), en->end(), v) == en->end()) {
        std::vector<std::string> valid;
        for (const auto& e : *en) valid.push_back(e.is_string() ? e.get<std::string>() : Dump(e));
        errs->push_back(FieldError::NotSupported(path, v, valid));
      }
    }
  }
  std::string prefix = path.empty() ? "" : path + ".";
  if (v.is_object()) {
    const Json* props = Find(schema, {"properties"});
    bool preserve = BoolOr(schema, "x-kubernetes-preserve-unknown-fields", false);
    const Json* addl = Find(schema, {"additionalProperties"});
    bool has_props = props && props->is_object();
    if (prune && has_props && !preserve &&
        !(addl && (addl->is_object() || (addl->is_boolean() && addl->get<bool>())))) {
      for (auto it = v.begin(); it != v.end();) {
        bool keep =
            props->contains(it.key()) ||
            (root && (it.key() == "apiVersion" || it.key() == "kind" || it.key() == "metadata"));
        if (keep)
          ++it;
        else
          it = v.erase(it);
      }
    }
    if (has_props) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        if (root && (it.key() == "metadata" || it.key() == "apiVersion" || it.key() == "kind"))
          continue;
        if (v.contains(it.key())) {
          Walk(v[it.key()], it.value(), prefix + it.key(), prune, errs, false);
        } else if (prune && it.value().is_object() && it.value().contains("default")) {
          v[it.key()] = it.value()["default"];
        }
      }
    }
    if (addl && addl->is_object())
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!has_props || !props->contains(it.key()))
          Walk(it.value(), *addl, prefix + it.key(), prune, errs, false);
    if (errs)
      if (const Json* req = Find(schema, {"required"}); req && req->is_array())
        for (const auto& r : *req)
          if (r.is_string() && !v.contains(r.get<std::string>()))
            errs->push_back(FieldError::Required(prefix + r.get<std::string>()));
  } else if (v.is_array()) {
    if (const Json* items = Find(schema, {"items"}); items && items->is_object())
      for (std::size_t i = 0; i < v.size(); ++i)
        Walk(v[i], *items, path + "[" + std::to_string(i) + "]", prune, errs, false);
  }
}

class CustomResourceStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  bool HasGeneration() const override { return true; }
  bool ReturnDeletedObject() const override { return true; }

  void PrepareForCreate(Json& obj) const override {
    if (type_->has_status) obj.erase("status");
    Walk(obj, type_->schema, "", true, nullptr, true);
  }
  void PrepareForUpdate(Json& obj, const Json& old) const override {
    Strategy::PrepareForUpdate(obj, old);
    Walk(obj, type_->schema, "", true, nullptr, true);
  }
  void PrepareForStatusUpdate(Json& obj, const Json& old) const override {
    Json status = obj.contains("status") ? obj["status"] : Json(nullptr);
    Json meta = obj.contains("metadata") ? obj["metadata"] : Json::object();
    obj = old;
    obj["metadata"]["resourceVersion"] = GetString(meta, {"resourceVersion"});
    if (status.is_null())
      obj.erase("status");
    else
      obj["status"] = status;
    Walk(obj, type_->schema, "", true, nullptr, true);
  }
  FieldErrors Validate(const Json& obj, const Json*) const override {
    FieldErrors errs;
    Json copy = obj;
    Walk(copy, type_->schema, "", false, &errs, true);
    return errs;
  }
  FieldErrors ValidateStatus(const Json& obj, const Json& old) const override {
    return Validate(obj, &old);
  }
};

Json NowCondition(const std::string& type, const std::string& reason, const std::string& message,
                  const std::string& time) {
  return Json{{"type", type},
              {"status", "True"},
              {"lastTransitionTime", time},
              {"reason", reason},
              {"message", message}};
}

class CrdStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  bool HasGeneration() const override { return true; }
  bool ReturnDeletedObject() const override { return true; }

  void PrepareForCreate(Json& obj) const override {
    std::string t = FormatTime(now_);
    Json status = Json::object();
    status["conditions"] =
        Json::array({NowCondition("NamesAccepted", "NoConflicts", "no conflicts found", t),
                     NowCondition("Established", "InitialNamesAccepted",
                                  "the initial names have been accepted", t)});
    status["acceptedNames"] = AcceptedNames(obj);
    status["storedVersions"] = Json::array({StorageVersion(obj)});
    obj["status"] = status;
  }
  void PrepareForUpdate(Json& obj, const Json& old) const override {
    Strategy::PrepareForUpdate(obj, old);
    Json& status = ObjectAt(obj, "status");
    status["acceptedNames"] = AcceptedNames(obj);
    Json stored = status.contains("storedVersions") && status["storedVersions"].is_array()
                      ? status["storedVersions"]
                      : Json::array();
    std::string sv = StorageVersion(obj);
    if (!sv.empty() && std::find(stored.begin(), stored.end(), Json(sv)) == stored.end())
      stored.push_back(sv);
    status["storedVersions"] = stored;
  }
  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs;
    const Json* spec = Find(obj, {"spec"});
    if (!spec || !spec->is_object()) {
      errs.push_back(FieldError::Required("spec"));
      return errs;
    }
    std::string group = StrOr(*spec, "group");
    std::string plural = GetString(*spec, {"names", "plural"});
    std::string kind = GetString(*spec, {"names", "kind"});
    std::string name = GetString(obj, {"metadata", "name"});
    if (group.empty())
      errs.push_back(FieldError::Required("spec.group"));
    else if (group.find('.') == std::string::npos)
      errs.push_back(
          FieldError::Invalid("spec.group", group, "should be a domain with at least one dot"));
    if (plural.empty()) errs.push_back(FieldError::Required("spec.names.plural"));
    if (kind.empty()) errs.push_back(FieldError::Required("spec.names.kind"));
    if (!plural.empty() && !group.empty() && name != plural + "." + group)
      errs.push_back(
          FieldError::Invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"));
    std::string scope = StrOr(*spec, "scope");
    if (scope != "Namespaced" && scope != "Cluster")
      errs.push_back(FieldError::NotSupported("spec.scope", scope, {"Cluster", "Namespaced"}));
    const Json* versions = Find(*spec, {"versions"});
    if (!versions || !versions->is_array() || versions->empty()) {
      errs.push_back(
          FieldError::Invalid("spec.versions", versions ? *versions : Json(nullptr),
                              "must have exactly one version marked as storage version"));
    } else {
      int storage = 0;
      for (const auto& v : *versions) storage += BoolOr(v, "storage", false) ? 1 : 0;
      if (storage != 1)
        errs.push_back(FieldError::Invalid(
            "spec.versions", *versions, "must have exactly one version marked as storage version"));
    }
    if (old) {
      if (GetString(*old, {"spec", "group"}) != group)
        errs.push_back(FieldError::Invalid("spec.group", group, "field is immutable"));
      if (GetString(*old, {"spec", "names", "plural"}) != plural)
        errs.push_back(FieldError::Invalid("spec.names.plural", plural, "field is immutable"));
      if (StrOr(SpecOrEmpty(*old), "scope") != scope)
        errs.push_back(FieldError::Invalid("spec.scope", scope, "field is immutable"));
    }
    return errs;
  }

 private:
  static const Json& SpecOrEmpty(const Json& o) {
    static const Json kEmpty = Json::object();
    const Json* s = Find(o, {"spec"});
    return s ? *s : kEmpty;
  }
  static std::string StorageVersion(const Json& obj) {
    if (const Json* vs = Find(obj, {"spec", "versions"}); vs && vs->is_array())
      for (const auto& v : *vs)
        if (BoolOr(v, "storage", false)) return StrOr(v, "name");
    return "";
  }
  static Json AcceptedNames(const Json& obj) {
    Json names = Json::object();
    if (const Json* n = Find(obj, {"spec", "names"}); n && n->is_object()) names = *n;
    std::string kind = StrOr(names, "kind");
    if (!names.contains("singular")) {
      std::string s = kind;
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      names["singular"] = s;
    }
    if (!names.contains("listKind")) names["listKind"] = kind + "List";
    return names;
  }
};

}  // namespace

std::unique_ptr<Strategy> MakeCustomResourceStrategy(TypePtr type) {
  return std::make_unique<CustomResourceStrategy>(std::move(type));
}
std::unique_ptr<Strategy> MakeCrdStrategy(TypePtr type) {
  return std::make_unique<CrdStrategy>(std::move(type));
}

}  // namespace pylon::apiserver
