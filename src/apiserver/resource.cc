#include "apiserver/resource.h"

#include <algorithm>
#include <cctype>

namespace pylon::apiserver {
namespace {

TypePtr Make(std::string group, std::string version, std::string resource, std::string singular,
             std::string kind, bool namespaced, bool status, std::vector<std::string> shorts,
             std::vector<std::string> categories = {}) {
  auto t = std::make_shared<ResourceType>();
  t->group = std::move(group);
  t->version = std::move(version);
  t->resource = std::move(resource);
  t->singular = std::move(singular);
  t->kind = kind;
  t->list_kind = kind + "List";
  t->namespaced = namespaced;
  t->has_status = status;
  t->short_names = std::move(shorts);
  t->categories = std::move(categories);
  t->storage_version = t->version;
  return t;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> Strings(const Json* arr) {
  std::vector<std::string> out;
  if (arr && arr->is_array())
    for (const auto& v : *arr)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

std::vector<TypePtr> BuiltinTypes() {
  const std::string kRbac = "rbac.authorization.k8s.io";
  return {
      Make("", "v1", "namespaces", "namespace", "Namespace", false, true, {"ns"}),
      Make("", "v1", "services", "service", "Service", true, true, {"svc"}, {"all"}),
      Make("", "v1", "events", "event", "Event", true, false, {"ev"}),
      Make("", "v1", "nodes", "node", "Node", false, true, {"no"}),
      Make("", "v1", "configmaps", "configmap", "ConfigMap", true, false, {"cm"}),
      Make("", "v1", "secrets", "secret", "Secret", true, false, {}),
      Make("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, false, {"sa"}),
      Make("apps", "v1", "deployments", "deployment", "Deployment", true, true, {"deploy"},
           {"all"}),
      Make("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true, true, {"ds"}, {"all"}),
      Make(kRbac, "v1", "clusterroles", "clusterrole", "ClusterRole", false, false, {}),
      Make(kRbac, "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false,
           false, {}),
      Make(kRbac, "v1", "roles", "role", "Role", true, false, {}),
      Make(kRbac, "v1", "rolebindings", "rolebinding", "RoleBinding", true, false, {}),
      Make("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, false, {}),
      Make("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", true,
           false, {}),
      Make("events.k8s.io", "v1", "events", "event", "Event", true, false, {"ev"}),
      Make("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
           "CustomResourceDefinition", false, true, {"crd", "crds"}, {"api-extensions"}),
  };
}

std::vector<TypePtr> TypesFromCrd(const Json& crd) {
  std::vector<TypePtr> out;
  const Json* spec = Find(crd, {"spec"});
  if (!spec) return out;
  std::string group = GetString(*spec, {"group"});
  std::string plural = GetString(*spec, {"names", "plural"});
  std::string kind = GetString(*spec, {"names", "kind"});
  if (group.empty() || plural.empty() || kind.empty()) return out;
  std::string singular = GetString(*spec, {"names", "singular"});
  if (singular.empty()) singular = Lower(kind);
  std::string list_kind = GetString(*spec, {"names", "listKind"});
  if (list_kind.empty()) list_kind = kind + "List";
  bool namespaced = GetString(*spec, {"scope"}) != "Cluster";
  std::string storage;
  const Json* versions = Find(*spec, {"versions"});
  if (!versions || !versions->is_array()) return out;
  for (const auto& v : *versions)
    if (v.is_object() && BoolOr(v, "storage", false)) storage = StrOr(v, "name");
  if (storage.empty() && !versions->empty()) storage = StrOr((*versions)[0], "name");
  for (const auto& v : *versions) {
    if (!v.is_object() || !BoolOr(v, "served", true)) continue;
    auto t = std::make_shared<ResourceType>();
    t->group = group;
    t->version = StrOr(v, "name");
    t->resource = plural;
    t->singular = singular;
    t->kind = kind;
    t->list_kind = list_kind;
    t->namespaced = namespaced;
    t->custom = true;
    t->has_status = Find(v, {"subresources", "status"}) != nullptr;
    t->short_names = Strings(Find(*spec, {"names", "shortNames"}));
    t->categories = Strings(Find(*spec, {"names", "categories"}));
    t->storage_version = storage;
    if (const Json* s = Find(v, {"schema", "openAPIV3Schema"})) t->schema = *s;
    if (const Json* cols = Find(v, {"additionalPrinterColumns"}); cols && cols->is_array()) {
      for (const auto& c : *cols) {
        if (!c.is_object()) continue;
        PrinterColumn pc;
        pc.name = StrOr(c, "name");
        pc.type = StrOr(c, "type", "string");
        pc.format = StrOr(c, "format");
        pc.description = StrOr(c, "description");
        pc.json_path = StrOr(c, "jsonPath");
        pc.priority = static_cast<int>(IntOr(c, "priority", 0));
        t->columns.push_back(std::move(pc));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace pylon::apiserver
