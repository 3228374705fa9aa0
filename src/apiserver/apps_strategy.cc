// apps/v1 Deployment and DaemonSet as kube-apiserver stores them (pkg/registry/apps/{deployment,
// daemonset}, pkg/apis/apps/v1/defaults.go, pkg/apis/apps/validation): defaults, selector rules,
// generation, DaemonSet template generation. No controller runs them: status stays what the
// create left (or what a /status write sets).
#include "apiserver/pod_template.h"
#include "apiserver/strategies_internal.h"

namespace pylon::apiserver {
namespace {

// The annotation apps/v1 uses to carry the internal spec.templateGeneration.
constexpr char kTemplateGeneration[] = "deprecated.daemonset.template.generation";

Json* SpecOf(Json& obj) {
  auto it = obj.find("spec");
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

const Json& Member(const Json& obj, std::string_view key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

void SetIfMissing(Json& obj, const char* key, Json value) {
  if (!obj.contains(key) || obj[key].is_null()) obj[key] = std::move(value);
}

// Rules shared by both kinds: selector present, valid, non-empty, matching the template's labels;
// a valid template; the selector immutable on update (apps/v1).
FieldErrors ValidateWorkload(const Json& obj, const Json* old, const std::string& kind_word) {
  FieldErrors errs;
  const Json& spec = Member(obj, "spec");
  const Json& sel = Member(spec, "selector");
  if (!sel.is_object()) {
    errs.push_back(FieldError::Required("spec.selector"));
  } else {
    FieldErrors se = ValidateLabelSelector(sel, "spec.selector");
    errs.insert(errs.end(), se.begin(), se.end());
    const Json& ml = Member(sel, "matchLabels");
    const Json& me = Member(sel, "matchExpressions");
    bool empty = (!ml.is_object() || ml.empty()) && (!me.is_array() || me.empty());
    if (empty) {
      errs.push_back(
          FieldError::Invalid("spec.selector", sel, "empty selector is invalid for " + kind_word));
    } else if (se.empty()) {
      const Json& labels = Member(Member(Member(spec, "template"), "metadata"), "labels");
      if (!SelectorMatches(sel, labels))
        errs.push_back(FieldError::Invalid("spec.template.metadata.labels",
                                           labels.is_null() ? Json::object() : labels,
                                           "`selector` does not match template `labels`"));
    }
  }
  FieldErrors te = ValidatePodTemplate(Member(spec, "template"), "spec.template");
  errs.insert(errs.end(), te.begin(), te.end());
  for (const char* f : {"minReadySeconds", "revisionHistoryLimit"}) {
    const Json& v = Member(spec, f);
    if (v.is_number_integer() && v.get<long long>() < 0)
      errs.push_back(
          FieldError::Invalid(std::string("spec.") + f, v, "must be greater than or equal to 0"));
  }
  if (old) {
    const Json& old_sel = Member(Member(*old, "spec"), "selector");
    if (!SemanticEqual(sel, old_sel))
      errs.push_back(FieldError::Invalid("spec.selector", sel, "field is immutable"));
  }
  return errs;
}

bool IsIntOrPercent(const Json& v) {
  if (v.is_number_integer()) return v.get<long long>() >= 0;
  if (!v.is_string()) return false;
  std::string s = v.get<std::string>();
  if (s.size() < 2 || s.back() != '%') return false;
  for (std::size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

void ValidateRollingUpdate(const Json& ru, const std::string& path, FieldErrors* errs) {
  for (const char* f : {"maxUnavailable", "maxSurge"}) {
    const Json& v = Member(ru, f);
    if (!v.is_null() && !IsIntOrPercent(v))
      errs->push_back(FieldError::Invalid(path + "." + f, v,
                                          "a valid percent string must be a numeric string "
                                          "followed by an ending '%' (e.g. '1%',  or '93%', regex "
                                          "used for validation is '[0-9]+%')"));
  }
}

class DeploymentStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  bool HasGeneration() const override { return true; }
  // Spec changes bump the generation, and so do annotation changes (they are copied to the
  // ReplicaSets).
  bool GenerationChanged(const Json& obj, const Json& old) const override {
    return !SemanticEqual(Member(obj, "spec"), Member(old, "spec")) ||
           !SemanticEqual(Member(Member(obj, "metadata"), "annotations"),
                          Member(Member(old, "metadata"), "annotations"));
  }

  void PrepareForCreate(Json& obj) const override {
    obj["status"] = Json::object();
    Default(obj);
  }
  void PrepareForUpdate(Json& obj, const Json& old) const override {
    Strategy::PrepareForUpdate(obj, old);
    Default(obj);
  }
  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs = ValidateWorkload(obj, old, "deployment");
    const Json& spec = Member(obj, "spec");
    const Json& replicas = Member(spec, "replicas");
    if (replicas.is_number_integer() && replicas.get<long long>() < 0)
      errs.push_back(
          FieldError::Invalid("spec.replicas", replicas, "must be greater than or equal to 0"));
    const Json& strategy = Member(spec, "strategy");
    std::string type = StrOr(strategy, "type");
    if (type == "Recreate") {
      if (!Member(strategy, "rollingUpdate").is_null())
        errs.push_back(
            FieldError::Forbidden("spec.strategy.rollingUpdate",
                                  "may not be specified when strategy `type` is 'Recreate'"));
    } else if (type == "RollingUpdate") {
      ValidateRollingUpdate(Member(strategy, "rollingUpdate"), "spec.strategy.rollingUpdate",
                            &errs);
    } else {
      errs.push_back(
          FieldError::NotSupported("spec.strategy.type", type, {"Recreate", "RollingUpdate"}));
    }
    const Json& pds = Member(spec, "progressDeadlineSeconds");
    if (pds.is_number_integer() && pds.get<long long>() <= IntOr(spec, "minReadySeconds", 0))
      errs.push_back(FieldError::Invalid("spec.progressDeadlineSeconds", pds,
                                         "must be greater than minReadySeconds"));
    return errs;
  }
  void Canonicalize(Json& obj) const override {
    if (Json* spec = SpecOf(obj))
      OrderKeys(*spec, {"replicas", "selector", "template", "strategy", "minReadySeconds",
                        "revisionHistoryLimit", "paused", "progressDeadlineSeconds"});
    if (auto st = obj.find("status"); st != obj.end() && st->is_object())
      OrderKeys(*st, {"observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                      "availableReplicas", "unavailableReplicas", "terminatingReplicas",
                      "conditions", "collisionCount"});
  }

 private:
  // SetDefaults_Deployment (apps/v1).
  static void Default(Json& obj) {
    Json* spec = SpecOf(obj);
    if (!spec) return;
    SetIfMissing(*spec, "replicas", 1);
    Json& strategy = ObjectAt(*spec, "strategy");
    SetIfMissing(strategy, "type", "RollingUpdate");
    if (StrOr(strategy, "type") == "RollingUpdate") {
      Json& ru = ObjectAt(strategy, "rollingUpdate");
      SetIfMissing(ru, "maxUnavailable", "25%");
      SetIfMissing(ru, "maxSurge", "25%");
      OrderKeys(ru, {"maxUnavailable", "maxSurge"});
    }
    OrderKeys(strategy, {"type", "rollingUpdate"});
    SetIfMissing(*spec, "revisionHistoryLimit", 10);
    SetIfMissing(*spec, "progressDeadlineSeconds", 600);
    if (spec->contains("template")) DefaultPodTemplate((*spec)["template"]);
  }
};

class DaemonSetStrategy final : public Strategy {
 public:
  using Strategy::Strategy;
  bool HasGeneration() const override { return true; }
  bool GenerationChanged(const Json& obj, const Json& old) const override {
    return !SemanticEqual(Member(obj, "spec"), Member(old, "spec"));
  }

  void PrepareForCreate(Json& obj) const override {
    obj["status"] = Json{{"currentNumberScheduled", 0},
                         {"numberMisscheduled", 0},
                         {"desiredNumberScheduled", 0},
                         {"numberReady", 0}};
    Default(obj);
    ObjectAt(ObjectAt(obj, "metadata"), "annotations")[kTemplateGeneration] = "1";
  }
  // A template change bumps the template generation; otherwise it stays what it was.
  void PrepareForUpdate(Json& obj, const Json& old) const override {
    Strategy::PrepareForUpdate(obj, old);
    Default(obj);
    long long gen = 1;
    const Json& ann = Member(Member(old, "metadata"), "annotations");
    if (const Json& g = Member(ann, kTemplateGeneration); g.is_string())
      gen = std::atoll(g.get<std::string>().c_str());
    if (!SemanticEqual(Member(Member(obj, "spec"), "template"),
                       Member(Member(old, "spec"), "template")))
      ++gen;
    ObjectAt(ObjectAt(obj, "metadata"), "annotations")[kTemplateGeneration] = std::to_string(gen);
  }
  FieldErrors Validate(const Json& obj, const Json* old) const override {
    FieldErrors errs = ValidateWorkload(obj, old, "daemonset");
    const Json& us = Member(Member(obj, "spec"), "updateStrategy");
    std::string type = StrOr(us, "type");
    if (type == "RollingUpdate")
      ValidateRollingUpdate(Member(us, "rollingUpdate"), "spec.updateStrategy.rollingUpdate",
                            &errs);
    else if (type != "OnDelete")
      errs.push_back(FieldError::NotSupported("spec.updateStrategy.type", type,
                                              {"OnDelete", "RollingUpdate"}));
    return errs;
  }
  void Canonicalize(Json& obj) const override {
    if (Json* spec = SpecOf(obj))
      OrderKeys(*spec, {"selector", "template", "updateStrategy", "minReadySeconds",
                        "revisionHistoryLimit"});
    if (auto st = obj.find("status"); st != obj.end() && st->is_object())
      OrderKeys(*st, {"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                      "numberReady", "observedGeneration", "updatedNumberScheduled",
                      "numberAvailable", "numberUnavailable", "collisionCount", "conditions"});
  }

 private:
  // SetDefaults_DaemonSet (apps/v1).
  static void Default(Json& obj) {
    Json* spec = SpecOf(obj);
    if (!spec) return;
    Json& us = ObjectAt(*spec, "updateStrategy");
    SetIfMissing(us, "type", "RollingUpdate");
    if (StrOr(us, "type") == "RollingUpdate") {
      Json& ru = ObjectAt(us, "rollingUpdate");
      SetIfMissing(ru, "maxUnavailable", 1);
      SetIfMissing(ru, "maxSurge", 0);
      OrderKeys(ru, {"maxUnavailable", "maxSurge"});
    }
    OrderKeys(us, {"type", "rollingUpdate"});
    SetIfMissing(*spec, "revisionHistoryLimit", 10);
    if (spec->contains("template")) DefaultPodTemplate((*spec)["template"]);
  }
};

}  // namespace

std::unique_ptr<Strategy> MakeDeploymentStrategy(TypePtr type) {
  return std::make_unique<DeploymentStrategy>(std::move(type));
}
std::unique_ptr<Strategy> MakeDaemonSetStrategy(TypePtr type) {
  return std::make_unique<DaemonSetStrategy>(std::move(type));
}

}  // namespace pylon::apiserver
