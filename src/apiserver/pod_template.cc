#include "apiserver/pod_template.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "apiserver/strategy.h"

namespace pylon::apiserver {
namespace {

constexpr int kDefaultMode = 0644;  // secret, configMap, downwardAPI and projected volumes

std::string Idx(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

bool IsArray(const Json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() && it->is_array();
}

void SetIfMissing(Json& obj, const char* key, Json value) {
  if (!obj.contains(key) || obj[key].is_null()) obj[key] = std::move(value);
}

void DefaultProbe(Json& probe) {
  if (!probe.is_object()) return;
  if (auto h = probe.find("httpGet"); h != probe.end() && h->is_object()) {
    SetIfMissing(*h, "path", "/");
    SetIfMissing(*h, "scheme", "HTTP");
    OrderKeys(*h, {"path", "port", "host", "scheme", "httpHeaders"});
  }
  SetIfMissing(probe, "timeoutSeconds", 1);
  SetIfMissing(probe, "periodSeconds", 10);
  SetIfMissing(probe, "successThreshold", 1);
  SetIfMissing(probe, "failureThreshold", 3);
  OrderKeys(probe, {"exec", "httpGet", "tcpSocket", "grpc", "initialDelaySeconds", "timeoutSeconds",
                    "periodSeconds", "successThreshold", "failureThreshold",
                    "terminationGracePeriodSeconds"});
}

// "nginx" and "nginx:latest" are pulled Always, anything with another tag or a digest
// IfNotPresent (SetDefaults_Container).
std::string DefaultPullPolicy(const std::string& image) {
  if (image.find('@') != std::string::npos) return "IfNotPresent";
  std::size_t slash = image.rfind('/');
  std::size_t colon = image.rfind(':');
  bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  if (!tagged || image.substr(colon + 1) == "latest") return "Always";
  return "IfNotPresent";
}

void DefaultContainer(Json& c, bool host_network) {
  if (!c.is_object()) return;
  if (auto ports = c.find("ports"); ports != c.end() && ports->is_array()) {
    for (auto& p : *ports) {
      if (!p.is_object()) continue;
      SetIfMissing(p, "protocol", "TCP");
      if (host_network && IntOr(p, "hostPort", 0) == 0 && p.contains("containerPort"))
        p["hostPort"] = p["containerPort"];
      OrderKeys(p, {"name", "hostPort", "containerPort", "protocol", "hostIP"});
    }
  }
  if (auto env = c.find("env"); env != c.end() && env->is_array()) {
    for (auto& e : *env) {
      if (!e.is_object()) continue;
      if (auto vf = e.find("valueFrom"); vf != e.end() && vf->is_object()) {
        if (auto fr = vf->find("fieldRef"); fr != vf->end() && fr->is_object()) {
          SetIfMissing(*fr, "apiVersion", "v1");
          OrderKeys(*fr, {"apiVersion", "fieldPath"});
        }
      }
    }
  }
  SetIfMissing(c, "resources", Json::object());
  for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"})
    if (c.contains(probe)) DefaultProbe(c[probe]);
  SetIfMissing(c, "terminationMessagePath", "/dev/termination-log");
  SetIfMissing(c, "terminationMessagePolicy", "File");
  SetIfMissing(c, "imagePullPolicy", DefaultPullPolicy(StrOr(c, "image")));
  OrderKeys(c, {"name",
                "image",
                "command",
                "args",
                "workingDir",
                "ports",
                "envFrom",
                "env",
                "resources",
                "resizePolicy",
                "restartPolicy",
                "volumeMounts",
                "volumeDevices",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
                "lifecycle",
                "terminationMessagePath",
                "terminationMessagePolicy",
                "imagePullPolicy",
                "securityContext",
                "stdin",
                "stdinOnce",
                "tty"});
}

const char* const kVolumeSources[] = {"hostPath",
                                      "emptyDir",
                                      "gcePersistentDisk",
                                      "awsElasticBlockStore",
                                      "gitRepo",
                                      "secret",
                                      "nfs",
                                      "iscsi",
                                      "glusterfs",
                                      "persistentVolumeClaim",
                                      "rbd",
                                      "flexVolume",
                                      "cinder",
                                      "cephfs",
                                      "flocker",
                                      "downwardAPI",
                                      "fc",
                                      "azureFile",
                                      "configMap",
                                      "vsphereVolume",
                                      "quobyte",
                                      "azureDisk",
                                      "photonPersistentDisk",
                                      "projected",
                                      "portworxVolume",
                                      "scaleIO",
                                      "storageos",
                                      "csi",
                                      "ephemeral",
                                      "image"};

void DefaultVolume(Json& v) {
  if (!v.is_object()) return;
  bool has_source = false;
  for (const char* s : kVolumeSources) has_source = has_source || v.contains(s);
  if (!has_source) v["emptyDir"] = Json::object();
  for (const char* s : {"secret", "configMap", "downwardAPI", "projected"}) {
    if (auto src = v.find(s); src != v.end() && src->is_object()) {
      SetIfMissing(*src, "defaultMode", kDefaultMode);
      if (std::string_view(s) == "secret")
        OrderKeys(*src, {"secretName", "items", "defaultMode", "optional"});
      else if (std::string_view(s) == "configMap")
        OrderKeys(*src, {"name", "items", "defaultMode", "optional"});
    }
  }
  if (auto hp = v.find("hostPath"); hp != v.end() && hp->is_object()) {
    SetIfMissing(*hp, "type", "");
    OrderKeys(*hp, {"path", "type"});
  }
}

bool IsIanaSvcName(const std::string& s) {
  if (s.empty() || s.size() > 15) return false;
  bool letter = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool lower = c >= 'a' && c <= 'z';
    letter = letter || lower;
    if (!lower && !(c >= '0' && c <= '9') && c != '-') return false;
    if (c == '-' && (i == 0 || i + 1 == s.size() || s[i - 1] == '-')) return false;
  }
  return letter;
}

const char* kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

void ValidateContainers(const Json& spec, const char* key, const std::set<std::string>& volumes,
                        const std::string& path, std::set<std::string>* names, FieldErrors* errs) {
  const Json* list = Find(spec, {key});
  if (!list || !list->is_array()) return;
  bool host_network = BoolOr(spec, "hostNetwork", false);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const Json& c = (*list)[i];
    std::string cp = Idx(path + "." + key, i);
    std::string name = StrOr(c, "name");
    if (name.empty())
      errs->push_back(FieldError::Required(cp + ".name"));
    else if (!IsDns1123Label(name))
      errs->push_back(FieldError::Invalid(cp + ".name", name, kLabelMsg));
    else if (!names->insert(name).second)
      errs->push_back(FieldError::Duplicate(cp + ".name", name));
    if (StrOr(c, "image").empty()) errs->push_back(FieldError::Required(cp + ".image"));
    std::string pull = StrOr(c, "imagePullPolicy");
    if (pull != "Always" && pull != "IfNotPresent" && pull != "Never")
      errs->push_back(FieldError::NotSupported(cp + ".imagePullPolicy", pull,
                                               {"Always", "IfNotPresent", "Never"}));
    if (const Json* ports = Find(c, {"ports"}); ports && ports->is_array()) {
      for (std::size_t j = 0; j < ports->size(); ++j) {
        const Json& p = (*ports)[j];
        std::string pp = Idx(cp + ".ports", j);
        long long cport = IntOr(p, "containerPort", 0);
        if (cport < 1 || cport > 65535)
          errs->push_back(FieldError::Invalid(pp + ".containerPort", cport,
                                              "must be between 1 and 65535, inclusive"));
        std::string pname = StrOr(p, "name");
        if (!pname.empty() && !IsIanaSvcName(pname))
          errs->push_back(FieldError::Invalid(
              pp + ".name", pname,
              pname.size() > 15 ? "must be no more than 15 characters"
                                : "must contain only alpha-numeric characters (a-z, 0-9), and "
                                  "hyphens (-), contain at least one letter (a-z), and hyphens "
                                  "cannot be adjacent to other hyphens or at the start or end"));
        std::string proto = StrOr(p, "protocol");
        if (proto != "TCP" && proto != "UDP" && proto != "SCTP")
          errs->push_back(
              FieldError::NotSupported(pp + ".protocol", proto, {"SCTP", "TCP", "UDP"}));
        if (host_network && IntOr(p, "hostPort", 0) != cport)
          errs->push_back(FieldError::Invalid(pp + ".hostPort", IntOr(p, "hostPort", 0),
                                              "must match `containerPort` when `hostNetwork` is "
                                              "true"));
      }
    }
    if (const Json* env = Find(c, {"env"}); env && env->is_array()) {
      for (std::size_t j = 0; j < env->size(); ++j) {
        std::string ep = Idx(cp + ".env", j);
        if (StrOr((*env)[j], "name").empty()) errs->push_back(FieldError::Required(ep + ".name"));
        if (const Json* fr = Find((*env)[j], {"valueFrom", "fieldRef"});
            fr && StrOr(*fr, "fieldPath").empty())
          errs->push_back(FieldError::Required(ep + ".valueFrom.fieldRef.fieldPath"));
      }
    }
    if (const Json* mounts = Find(c, {"volumeMounts"}); mounts && mounts->is_array()) {
      for (std::size_t j = 0; j < mounts->size(); ++j) {
        std::string mp = Idx(cp + ".volumeMounts", j);
        std::string vname = StrOr((*mounts)[j], "name");
        if (vname.empty())
          errs->push_back(FieldError::Required(mp + ".name"));
        else if (!volumes.count(vname))
          errs->push_back(FieldError::NotFound(mp + ".name", vname));
        if (StrOr((*mounts)[j], "mountPath").empty())
          errs->push_back(FieldError::Required(mp + ".mountPath"));
      }
    }
  }
}

std::vector<std::string> Strings(const Json* arr) {
  std::vector<std::string> out;
  if (arr && arr->is_array())
    for (const auto& v : *arr)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

void DefaultPodTemplate(Json& tmpl) {
  if (!tmpl.is_object()) return;
  Json& meta = ObjectAt(tmpl, "metadata");
  // A zero metav1.Time serializes as null: real servers print it in every template.
  if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = nullptr;
  OrderKeys(meta,
            {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
             "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
             "labels", "annotations", "ownerReferences", "finalizers"});
  Json& spec = ObjectAt(tmpl, "spec");
  bool host_network = BoolOr(spec, "hostNetwork", false);
  if (IsArray(spec, "volumes"))
    for (auto& v : spec["volumes"]) DefaultVolume(v);
  for (const char* key : {"initContainers", "containers"})
    if (IsArray(spec, key))
      for (auto& c : spec[key]) DefaultContainer(c, host_network);
  SetIfMissing(spec, "restartPolicy", "Always");
  SetIfMissing(spec, "terminationGracePeriodSeconds", 30);
  SetIfMissing(spec, "dnsPolicy", "ClusterFirst");
  // The deprecated alias is kept equal to serviceAccountName by the v1 conversion.
  if (!StrOr(spec, "serviceAccountName").empty() && StrOr(spec, "serviceAccount").empty())
    spec["serviceAccount"] = spec["serviceAccountName"];
  SetIfMissing(spec, "securityContext", Json::object());
  SetIfMissing(spec, "schedulerName", "default-scheduler");
  OrderKeys(spec, {"volumes",
                   "initContainers",
                   "containers",
                   "ephemeralContainers",
                   "restartPolicy",
                   "terminationGracePeriodSeconds",
                   "activeDeadlineSeconds",
                   "dnsPolicy",
                   "nodeSelector",
                   "serviceAccountName",
                   "serviceAccount",
                   "automountServiceAccountToken",
                   "nodeName",
                   "hostNetwork",
                   "hostPID",
                   "hostIPC",
                   "shareProcessNamespace",
                   "securityContext",
                   "imagePullSecrets",
                   "hostname",
                   "subdomain",
                   "affinity",
                   "schedulerName",
                   "tolerations",
                   "hostAliases",
                   "priorityClassName",
                   "priority",
                   "dnsConfig",
                   "readinessGates",
                   "runtimeClassName",
                   "enableServiceLinks",
                   "preemptionPolicy",
                   "overhead",
                   "topologySpreadConstraints",
                   "setHostnameAsFQDN",
                   "os",
                   "hostUsers",
                   "schedulingGates",
                   "resourceClaims",
                   "resources"});
  OrderKeys(tmpl, {"metadata", "spec"});
}

FieldErrors ValidatePodTemplate(const Json& tmpl, const std::string& path) {
  FieldErrors errs;
  const Json* spec = Find(tmpl, {"spec"});
  std::string sp = path + ".spec";
  if (!spec || !spec->is_object()) {
    errs.push_back(FieldError::Required(sp + ".containers"));
    return errs;
  }
  std::set<std::string> volumes;
  if (const Json* vols = Find(*spec, {"volumes"}); vols && vols->is_array()) {
    for (std::size_t i = 0; i < vols->size(); ++i) {
      const Json& v = (*vols)[i];
      std::string vp = Idx(sp + ".volumes", i);
      std::string name = StrOr(v, "name");
      if (name.empty())
        errs.push_back(FieldError::Required(vp + ".name"));
      else if (!IsDns1123Label(name))
        errs.push_back(FieldError::Invalid(vp + ".name", name, kLabelMsg));
      else if (!volumes.insert(name).second)
        errs.push_back(FieldError::Duplicate(vp + ".name", name));
      int sources = 0;
      for (const char* s : kVolumeSources) sources += v.contains(s) ? 1 : 0;
      if (sources > 1)
        errs.push_back(FieldError::Forbidden(vp, "may not specify more than 1 volume type"));
      if (const Json* hp = Find(v, {"hostPath"}); hp && StrOr(*hp, "path").empty())
        errs.push_back(FieldError::Required(vp + ".hostPath.path"));
      if (const Json* s = Find(v, {"secret"}); s && StrOr(*s, "secretName").empty())
        errs.push_back(FieldError::Required(vp + ".secret.secretName"));
      if (const Json* cm = Find(v, {"configMap"}); cm && StrOr(*cm, "name").empty())
        errs.push_back(FieldError::Required(vp + ".configMap.name"));
    }
  }
  const Json* containers = Find(*spec, {"containers"});
  if (!containers || !containers->is_array() || containers->empty())
    errs.push_back(FieldError::Required(sp + ".containers"));
  std::set<std::string> names;
  ValidateContainers(*spec, "initContainers", volumes, sp, &names, &errs);
  ValidateContainers(*spec, "containers", volumes, sp, &names, &errs);
  std::string restart = StrOr(*spec, "restartPolicy");
  if (restart != "Always")
    errs.push_back(FieldError::NotSupported(sp + ".restartPolicy", restart, {"Always"}));
  std::string dns = StrOr(*spec, "dnsPolicy");
  if (dns != "ClusterFirstWithHostNet" && dns != "ClusterFirst" && dns != "Default" &&
      dns != "None")
    errs.push_back(FieldError::NotSupported(
        sp + ".dnsPolicy", dns, {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}));
  if (const Json* g = Find(*spec, {"terminationGracePeriodSeconds"});
      g && g->is_number_integer() && g->get<long long>() < 0)
    errs.push_back(FieldError::Invalid(sp + ".terminationGracePeriodSeconds", *g,
                                       "must be greater than or equal to 0"));
  return errs;
}

bool SelectorMatches(const Json& selector, const Json& labels) {
  if (!selector.is_object()) return false;
  auto label = [&](const std::string& k) -> std::optional<std::string> {
    const Json* v = Find(labels, {k});
    if (v && v->is_string()) return v->get<std::string>();
    return std::nullopt;
  };
  if (const Json* ml = Find(selector, {"matchLabels"}); ml && ml->is_object())
    for (auto it = ml->begin(); it != ml->end(); ++it) {
      auto v = label(it.key());
      if (!v || !it.value().is_string() || *v != it.value().get<std::string>()) return false;
    }
  if (const Json* me = Find(selector, {"matchExpressions"}); me && me->is_array())
    for (const auto& e : *me) {
      std::string key = StrOr(e, "key"), op = StrOr(e, "operator");
      std::vector<std::string> values = Strings(Find(e, {"values"}));
      auto v = label(key);
      bool in = v && std::find(values.begin(), values.end(), *v) != values.end();
      if (op == "In" && !in) return false;
      if (op == "NotIn" && in) return false;
      if (op == "Exists" && !v) return false;
      if (op == "DoesNotExist" && v) return false;
      if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist") return false;
    }
  return true;
}

FieldErrors ValidateLabelSelector(const Json& selector, const std::string& path) {
  FieldErrors errs;
  if (const Json* ml = Find(selector, {"matchLabels"}); ml && ml->is_object())
    for (auto it = ml->begin(); it != ml->end(); ++it)
      if (!IsQualifiedName(it.key()))
        errs.push_back(FieldError::Invalid(path + ".matchLabels", it.key(),
                                           "name part must consist of alphanumeric characters, "
                                           "'-', '_' or '.', and must start and end with an "
                                           "alphanumeric character"));
  if (const Json* me = Find(selector, {"matchExpressions"}); me && me->is_array())
    for (std::size_t i = 0; i < me->size(); ++i) {
      const Json& e = (*me)[i];
      std::string ep = Idx(path + ".matchExpressions", i);
      std::string op = StrOr(e, "operator");
      std::size_t n = Strings(Find(e, {"values"})).size();
      if (op == "In" || op == "NotIn") {
        if (n == 0)
          errs.push_back(FieldError::Required(
              ep + ".values", "must be specified when `operator` is 'In' or 'NotIn'"));
      } else if (op == "Exists" || op == "DoesNotExist") {
        if (n > 0)
          errs.push_back(FieldError::Forbidden(
              ep + ".values",
              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
      } else {
        errs.push_back(FieldError::Invalid(ep + ".operator", op, "not a valid selector operator"));
      }
    }
  return errs;
}

std::string FormatLabelSelector(const Json& selector) {
  std::vector<std::pair<std::string, std::string>> reqs;  // key, rendered requirement
  if (const Json* ml = Find(selector, {"matchLabels"}); ml && ml->is_object())
    for (auto it = ml->begin(); it != ml->end(); ++it)
      reqs.emplace_back(it.key(), it.key() + "=" +
                                      (it.value().is_string() ? it.value().get<std::string>()
                                                              : Dump(it.value())));
  if (const Json* me = Find(selector, {"matchExpressions"}); me && me->is_array())
    for (const auto& e : *me) {
      std::string key = StrOr(e, "key"), op = StrOr(e, "operator");
      std::vector<std::string> values = Strings(Find(e, {"values"}));
      std::sort(values.begin(), values.end());
      std::string joined;
      for (std::size_t i = 0; i < values.size(); ++i) joined += (i ? "," : "") + values[i];
      if (op == "In")
        reqs.emplace_back(key, key + " in (" + joined + ")");
      else if (op == "NotIn")
        reqs.emplace_back(key, key + " notin (" + joined + ")");
      else if (op == "Exists")
        reqs.emplace_back(key, key);
      else if (op == "DoesNotExist")
        reqs.emplace_back(key, "!" + key);
    }
  if (reqs.empty()) return "<none>";
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (std::size_t i = 0; i < reqs.size(); ++i) out += (i ? "," : "") + reqs[i].second;
  return out;
}

}  // namespace pylon::apiserver
