#include "apiserver/strategy.h"

#include <cctype>

#include "apiserver/strategies_internal.h"

namespace pylon::apiserver {

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto ok = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  if (!ok(s.front()) || !ok(s.back())) return false;
  for (char c : s)
    if (!ok(c) && c != '-') return false;
  return true;
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    if (!IsDns1123Label(s.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsDns1035Label(std::string_view s) {
  return IsDns1123Label(s) && std::isalpha(static_cast<unsigned char>(s.front()));
}

bool IsQualifiedName(std::string_view s) {
  std::size_t slash = s.find('/');
  std::string_view name = s;
  if (slash != std::string_view::npos) {
    if (!IsDns1123Subdomain(s.substr(0, slash))) return false;
    name = s.substr(slash + 1);
  }
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

void Strategy::PrepareForCreate(Json& obj) const {
  if (type_->has_status) obj.erase("status");
}

void Strategy::PrepareForUpdate(Json& obj, const Json& old) const {
  if (!type_->has_status) return;
  if (old.contains("status"))
    obj["status"] = old["status"];
  else
    obj.erase("status");
}

void Strategy::PrepareForStatusUpdate(Json& obj, const Json& old) const {
  if (old.contains("spec"))
    obj["spec"] = old["spec"];
  else
    obj.erase("spec");
}

bool Strategy::GenerationChanged(const Json& obj, const Json& old) const {
  auto content = [&](const Json& o) {
    Json c = o;
    c.erase("metadata");
    if (type_->has_status) c.erase("status");
    return c;
  };
  return !SemanticEqual(content(obj), content(old));
}

FieldErrors Strategy::Validate(const Json&, const Json*) const { return {}; }
FieldErrors Strategy::ValidateStatus(const Json&, const Json&) const { return {}; }
FieldErrors Strategy::Allocate(Json&, const Json*) { return {}; }
void Strategy::Release(const Json&, const Json*) {}
std::optional<std::string> Strategy::Field(const Json&, std::string_view) const {
  return std::nullopt;
}

std::optional<std::string> FieldValue(const Strategy& s, const Json& obj, std::string_view field) {
  if (field == "metadata.name") return GetString(obj, {"metadata", "name"});
  if (field == "metadata.namespace") return GetString(obj, {"metadata", "namespace"});
  return s.Field(obj, field);
}

namespace {

std::string ScalarText(const Json* v) {
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  if (v->is_number()) return Dump(*v);
  return "";
}

class NamespaceStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  void PrepareForCreate(Json& obj) const override {
    obj["spec"] = Json{{"finalizers", Json::array({"kubernetes"})}};
    obj["status"] = Json{{"phase", "Active"}};
  }
  std::optional<std::string> Field(const Json& obj, std::string_view f) const override {
    if (f == "status.phase") return GetString(obj, {"status", "phase"});
    return std::nullopt;
  }
  bool ReturnDeletedObject() const override { return true; }
  std::string NameRule() const override { return "label1123"; }
};

class NodeStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  std::optional<std::string> Field(const Json& obj, std::string_view f) const override {
    if (f == "spec.unschedulable") {
      const Json* v = Find(obj, {"spec", "unschedulable"});
      return v && v->is_boolean() && v->get<bool>() ? "true" : "false";
    }
    return std::nullopt;
  }
};

class LeaseStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  void Canonicalize(Json& obj) const override {
    if (obj.contains("spec"))
      OrderKeys(obj["spec"], {"holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime",
                              "leaseTransitions", "strategy", "preferredHolder"});
  }
  FieldErrors Validate(const Json& obj, const Json*) const override {
    FieldErrors errs;
    const Json* spec = Find(obj, {"spec"});
    if (!spec) return errs;
    if (const Json* d = Find(*spec, {"leaseDurationSeconds"}); d && !d->is_null()) {
      if (!d->is_number_integer() || d->get<long long>() <= 0)
        errs.push_back(
            FieldError::Invalid("spec.leaseDurationSeconds", *d, "must be greater than 0"));
    }
    if (const Json* t = Find(*spec, {"leaseTransitions"}); t && !t->is_null()) {
      if (!t->is_number_integer() || t->get<long long>() < 0)
        errs.push_back(
            FieldError::Invalid("spec.leaseTransitions", *t, "must be greater than or equal to 0"));
    }
    for (const char* f : {"acquireTime", "renewTime"}) {
      const Json* t = Find(*spec, {f});
      if (!t || t->is_null()) continue;
      if (!t->is_string() || !ParseTime(t->get<std::string>(), true))
        errs.push_back(FieldError::Invalid(std::string("spec.") + f, *t,
                                           "must be a MicroTime in RFC 3339 format with exactly 6 "
                                           "fractional digits, e.g. 2006-01-02T15:04:05.000000Z"));
    }
    return errs;
  }
};

class EventStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  bool AllowUnconditionalUpdate() const override { return true; }
  FieldErrors Validate(const Json& obj, const Json*) const override {
    FieldErrors errs;
    std::string ins = GetString(obj, {"involvedObject", "namespace"});
    std::string ns = GetString(obj, {"metadata", "namespace"});
    if (!ins.empty() && ins != ns)
      errs.push_back(
          FieldError::Invalid("involvedObject.namespace", ins, "does not match event.namespace"));
    const Json* type = Find(obj, {"type"});
    if (type && type->is_string() && !type->get<std::string>().empty() && *type != "Normal" &&
        *type != "Warning")
      errs.push_back(FieldError::NotSupported("type", *type, {"Normal", "Warning"}));
    return errs;
  }
  std::optional<std::string> Field(const Json& obj, std::string_view f) const override {
    static const std::string kInv = "involvedObject.";
    if (f.substr(0, kInv.size()) == kInv) {
      std::string sub(f.substr(kInv.size()));
      if (sub == "kind" || sub == "namespace" || sub == "name" || sub == "uid" ||
          sub == "apiVersion" || sub == "resourceVersion" || sub == "fieldPath")
        return ScalarText(Find(obj, {"involvedObject", sub}));
      return std::nullopt;
    }
    if (f == "reason" || f == "type" || f == "reportingComponent")
      return ScalarText(Find(obj, {f}));
    if (f == "source") return GetString(obj, {"source", "component"});
    return std::nullopt;
  }
};

class EndpointSliceStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs;
    const Json* at = Find(obj, {"addressType"});
    if (!at || !at->is_string() || at->get<std::string>().empty()) {
      errs.push_back(FieldError::Required("addressType"));
    } else if (*at != "IPv4" && *at != "IPv6" && *at != "FQDN") {
      errs.push_back(FieldError::NotSupported("addressType", *at, {"FQDN", "IPv4", "IPv6"}));
    } else if (old && GetString(*old, {"addressType"}) != at->get<std::string>()) {
      errs.push_back(FieldError::Invalid("addressType", *at, "field is immutable"));
    }
    if (const Json* eps = Find(obj, {"endpoints"}); eps && eps->is_array()) {
      for (std::size_t i = 0; i < eps->size(); ++i) {
        const Json* addrs = Find((*eps)[i], {"addresses"});
        if (!addrs || !addrs->is_array() || addrs->empty())
          errs.push_back(FieldError::Required("endpoints[" + std::to_string(i) + "].addresses",
                                              "must contain at least 1 address"));
      }
    }
    return errs;
  }
};

}  // namespace

std::unique_ptr<Strategy> MakeStrategy(TypePtr type, ServiceAllocator* services) {
  if (type->custom) return MakeCustomResourceStrategy(type);
  const std::string& g = type->group;
  const std::string& r = type->resource;
  if (g.empty() && r == "services") return MakeServiceStrategy(type, services);
  if (g.empty() && r == "namespaces") return std::make_unique<NamespaceStrategy>(type);
  if (g.empty() && r == "nodes") return std::make_unique<NodeStrategy>(type);
  if ((g.empty() || g == "events.k8s.io") && r == "events")
    return std::make_unique<EventStrategy>(type);
  if (g == "coordination.k8s.io") return std::make_unique<LeaseStrategy>(type);
  if (g == "discovery.k8s.io") return std::make_unique<EndpointSliceStrategy>(type);
  if (g == "apiextensions.k8s.io") return MakeCrdStrategy(type);
  if (g == "apps" && r == "deployments") return MakeDeploymentStrategy(type);
  if (g == "apps" && r == "daemonsets") return MakeDaemonSetStrategy(type);
  if (g.empty() && r == "secrets") return MakeSecretStrategy(type);
  if (g.empty() && r == "configmaps") return MakeConfigMapStrategy(type);
  if (g == "rbac.authorization.k8s.io") return MakeRbacStrategy(type);
  return std::make_unique<Strategy>(type);
}

}  // namespace pylon::apiserver
