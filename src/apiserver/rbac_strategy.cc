// rbac.authorization.k8s.io/v1 ClusterRole, Role, ClusterRoleBinding, RoleBinding as
// kube-apiserver stores them (pkg/apis/rbac/v1/defaults.go, pkg/apis/rbac/validation): path-segment
// names ("pylon:agent" is valid), rule shapes, roleRef and subject rules, roleRef immutable.
// Stored only: this server authorizes every request, so nothing here is enforced.
#include "apiserver/strategies_internal.h"

namespace pylon::apiserver {
namespace {

constexpr char kRbacGroup[] = "rbac.authorization.k8s.io";

const Json& Member(const Json& obj, std::string_view key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::size_t Count(const Json& v) { return v.is_array() ? v.size() : 0; }

// ValidateRBACName: a path segment.
std::vector<std::string> PathSegmentProblems(const std::string& name) {
  std::vector<std::string> out;
  if (name == "." || name == "..") out.push_back("may not be '" + name + "'");
  for (const char* bad : {"/", "%"})
    if (name.find(bad) != std::string::npos)
      out.push_back(std::string("may not contain '") + bad + "'");
  return out;
}

class RoleStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  std::string NameRule() const override { return "pathsegment"; }

  FieldErrors Validate(const Json& obj, const Json*) const override {
    FieldErrors errs;
    const Json& rules = Member(obj, "rules");
    for (std::size_t i = 0; i < Count(rules); ++i) {
      const Json& r = rules[i];
      std::string p = "rules[" + std::to_string(i) + "]";
      if (Count(Member(r, "verbs")) == 0)
        errs.push_back(FieldError::Required(p + ".verbs", "verbs must contain at least one value"));
      if (Count(Member(r, "nonResourceURLs")) > 0) {
        const Json& urls = r["nonResourceURLs"];
        if (type_->namespaced)
          errs.push_back(FieldError::Invalid(p + ".nonResourceURLs", urls,
                                             "namespaced rules cannot apply to non-resource URLs"));
        if (Count(Member(r, "apiGroups")) > 0 || Count(Member(r, "resources")) > 0 ||
            Count(Member(r, "resourceNames")) > 0)
          errs.push_back(FieldError::Invalid(
              p + ".nonResourceURLs", urls,
              "rules cannot apply to both regular resources and non-resource URLs"));
        continue;
      }
      if (Count(Member(r, "apiGroups")) == 0)
        errs.push_back(FieldError::Required(p + ".apiGroups",
                                            "resource rules must supply at least one api group"));
      if (Count(Member(r, "resources")) == 0)
        errs.push_back(FieldError::Required(p + ".resources",
                                            "resource rules must supply at least one resource"));
    }
    return errs;
  }
  void Canonicalize(Json& obj) const override {
    OrderKeys(obj, {"kind", "apiVersion", "metadata", "rules", "aggregationRule"});
    if (auto it = obj.find("rules"); it != obj.end() && it->is_array())
      for (auto& r : *it)
        OrderKeys(r, {"verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"});
  }
};

class BindingStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  std::string NameRule() const override { return "pathsegment"; }

  void PrepareForCreate(Json& obj) const override { Default(obj); }
  void PrepareForUpdate(Json& obj, const Json& old) const override {
    (void)old;
    Default(obj);
  }

  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs;
    const Json& ref = Member(obj, "roleRef");
    std::string group = StrOr(ref, "apiGroup"), kind = StrOr(ref, "kind"),
                name = StrOr(ref, "name");
    if (group != kRbacGroup)
      errs.push_back(FieldError::NotSupported("roleRef.apiGroup", group, {kRbacGroup}));
    if (type_->namespaced) {
      if (kind != "Role" && kind != "ClusterRole")
        errs.push_back(FieldError::NotSupported("roleRef.kind", kind, {"Role", "ClusterRole"}));
    } else if (kind != "ClusterRole") {
      errs.push_back(FieldError::NotSupported("roleRef.kind", kind, {"ClusterRole"}));
    }
    if (name.empty())
      errs.push_back(FieldError::Required("roleRef.name"));
    else
      for (const auto& msg : PathSegmentProblems(name))
        errs.push_back(FieldError::Invalid("roleRef.name", name, msg));
    const Json& subjects = Member(obj, "subjects");
    for (std::size_t i = 0; i < Count(subjects); ++i) ValidateSubject(subjects[i], i, &errs);
    if (old && !SemanticEqual(ref, Member(*old, "roleRef")))
      errs.push_back(FieldError::Invalid("roleRef", ref, "cannot change roleRef"));
    return errs;
  }
  void Canonicalize(Json& obj) const override {
    OrderKeys(obj, {"kind", "apiVersion", "metadata", "subjects", "roleRef"});
    if (auto it = obj.find("subjects"); it != obj.end() && it->is_array())
      for (auto& s : *it) OrderKeys(s, {"kind", "apiGroup", "name", "namespace"});
    if (auto it = obj.find("roleRef"); it != obj.end() && it->is_object())
      OrderKeys(*it, {"apiGroup", "kind", "name"});
  }

 private:
  // SetDefaults_RoleBinding / ClusterRoleBinding / Subject. A ServiceAccount subject's apiGroup
  // defaults to "", which the real server omits when it serializes.
  static void Default(Json& obj) {
    if (auto ref = obj.find("roleRef"); ref != obj.end() && ref->is_object())
      if (StrOr(*ref, "apiGroup").empty()) (*ref)["apiGroup"] = kRbacGroup;
    if (auto subjects = obj.find("subjects"); subjects != obj.end() && subjects->is_array())
      for (auto& s : *subjects) {
        if (!s.is_object() || !StrOr(s, "apiGroup").empty()) continue;
        std::string kind = StrOr(s, "kind");
        if (kind == "ServiceAccount")
          s.erase("apiGroup");
        else if (kind == "User" || kind == "Group")
          s["apiGroup"] = kRbacGroup;
      }
  }

  void ValidateSubject(const Json& s, std::size_t i, FieldErrors* errs) const {
    std::string p = "subjects[" + std::to_string(i) + "]";
    std::string name = StrOr(s, "name"), kind = StrOr(s, "kind"), group = StrOr(s, "apiGroup");
    if (name.empty()) errs->push_back(FieldError::Required(p + ".name"));
    if (kind == "ServiceAccount") {
      if (!name.empty() && !IsDns1123Subdomain(name))
        errs->push_back(FieldError::Invalid(
            p + ".name", name,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
      if (!group.empty()) errs->push_back(FieldError::NotSupported(p + ".apiGroup", group, {""}));
      if (!type_->namespaced && StrOr(s, "namespace").empty())
        errs->push_back(FieldError::Required(p + ".namespace"));
    } else if (kind == "User" || kind == "Group") {
      if (group != kRbacGroup)
        errs->push_back(FieldError::NotSupported(p + ".apiGroup", group, {kRbacGroup}));
    } else {
      errs->push_back(
          FieldError::NotSupported(p + ".kind", kind, {"ServiceAccount", "User", "Group"}));
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> MakeRbacStrategy(TypePtr type) {
  const std::string& r = type->resource;
  if (r == "roles" || r == "clusterroles") return std::make_unique<RoleStrategy>(std::move(type));
  return std::make_unique<BindingStrategy>(std::move(type));
}

}  // namespace pylon::apiserver
