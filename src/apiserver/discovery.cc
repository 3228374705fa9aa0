#include "apiserver/discovery.h"

#include <algorithm>
#include <map>

namespace pylon::apiserver {
namespace {

// Built-in groups in the order a real server lists them (kube-apiserver's group priorities:
// apps, events.k8s.io, ..., rbac.authorization.k8s.io, ..., apiextensions.k8s.io, ...,
// coordination.k8s.io, ..., discovery.k8s.io); CRD groups follow, sorted.
const std::vector<std::string>& BuiltinGroupOrder() {
  static const std::vector<std::string> order = {"apps",
                                                 "events.k8s.io",
                                                 "rbac.authorization.k8s.io",
                                                 "apiextensions.k8s.io",
                                                 "coordination.k8s.io",
                                                 "discovery.k8s.io"};
  return order;
}

std::vector<std::string> Groups(const std::vector<TypePtr>& types) {
  std::vector<std::string> out;
  for (const auto& g : BuiltinGroupOrder())
    if (std::any_of(types.begin(), types.end(), [&](const TypePtr& t) { return t->group == g; }))
      out.push_back(g);
  std::vector<std::string> custom;
  for (const auto& t : types)
    if (!t->group.empty() && std::find(out.begin(), out.end(), t->group) == out.end() &&
        std::find(custom.begin(), custom.end(), t->group) == custom.end())
      custom.push_back(t->group);
  std::sort(custom.begin(), custom.end());
  out.insert(out.end(), custom.begin(), custom.end());
  return out;
}

Json GroupVersionEntry(const std::string& group, const std::string& version) {
  return Json{{"groupVersion", group + "/" + version}, {"version", version}};
}

Json GroupEntry(const std::vector<TypePtr>& types, const std::string& group) {
  std::vector<std::string> versions;
  std::string preferred;
  for (const auto& t : types) {
    if (t->group != group) continue;
    if (std::find(versions.begin(), versions.end(), t->version) == versions.end())
      versions.push_back(t->version);
    if (t->version == t->storage_version) preferred = t->version;
  }
  if (preferred.empty() && !versions.empty()) preferred = versions.front();
  // The preferred (storage) version first, as the server's priority order does.
  std::stable_sort(
      versions.begin(), versions.end(),
      [&](const std::string& a, const std::string& b) { return a == preferred && b != preferred; });
  Json g = Json::object();
  g["name"] = group;
  Json vs = Json::array();
  for (const auto& v : versions) vs.push_back(GroupVersionEntry(group, v));
  g["versions"] = vs;
  g["preferredVersion"] = GroupVersionEntry(group, preferred);
  return g;
}

Json ResourceEntry(const ResourceType& t) {
  Json r = Json::object();
  r["name"] = t.resource;
  r["singularName"] = t.singular;
  r["namespaced"] = t.namespaced;
  r["kind"] = t.kind;
  Json verbs = Json::array(
      {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"});
  if (!t.group.empty() || t.resource != "namespaces")
    r["verbs"] = verbs;
  else
    r["verbs"] = Json::array({"create", "delete", "get", "list", "patch", "update", "watch"});
  if (!t.short_names.empty()) r["shortNames"] = t.short_names;
  if (!t.categories.empty()) r["categories"] = t.categories;
  return r;
}

}  // namespace

Json VersionDocument() {
  Json v = Json::object();
  v["major"] = "1";
  v["minor"] = "32";
  v["gitVersion"] = "v1.32.0-pylon";
  v["gitCommit"] = "0000000000000000000000000000000000000000";
  v["gitTreeState"] = "clean";
  v["buildDate"] = "2025-01-01T00:00:00Z";
  v["goVersion"] = "go1.23.0";
  v["compiler"] = "gc";
  v["platform"] = "linux/amd64";
  return v;
}

Json ApiVersionsDocument(const std::string& server_address) {
  Json d = Json::object();
  d["kind"] = "APIVersions";
  d["versions"] = Json::array({"v1"});
  d["serverAddressByClientCIDRs"] =
      Json::array({Json{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}});
  return d;
}

Json GroupListDocument(const std::vector<TypePtr>& types) {
  Json d = Json::object();
  d["kind"] = "APIGroupList";
  d["apiVersion"] = "v1";
  Json groups = Json::array();
  for (const auto& g : Groups(types)) groups.push_back(GroupEntry(types, g));
  d["groups"] = groups;
  return d;
}

std::optional<Json> GroupDocument(const std::vector<TypePtr>& types, const std::string& group) {
  if (group.empty() ||
      std::none_of(types.begin(), types.end(), [&](const TypePtr& t) { return t->group == group; }))
    return std::nullopt;
  Json entry = GroupEntry(types, group);
  Json d = Json::object();
  d["kind"] = "APIGroup";
  d["apiVersion"] = "v1";
  for (auto it = entry.begin(); it != entry.end(); ++it) d[it.key()] = it.value();
  return d;
}

std::optional<Json> ResourceListDocument(const std::vector<TypePtr>& types,
                                         const std::string& group, const std::string& version) {
  std::vector<TypePtr> matching;
  for (const auto& t : types)
    if (t->group == group && t->version == version) matching.push_back(t);
  if (matching.empty()) return std::nullopt;
  std::sort(matching.begin(), matching.end(),
            [](const TypePtr& a, const TypePtr& b) { return a->resource < b->resource; });
  Json d = Json::object();
  d["kind"] = "APIResourceList";
  if (!group.empty()) d["apiVersion"] = "v1";
  d["groupVersion"] = group.empty() ? version : group + "/" + version;
  Json res = Json::array();
  for (const auto& t : matching) {
    res.push_back(ResourceEntry(*t));
    if (t->has_status) {
      Json s = Json::object();
      s["name"] = t->resource + "/status";
      s["singularName"] = "";
      s["namespaced"] = t->namespaced;
      s["kind"] = t->kind;
      s["verbs"] = Json::array({"get", "patch", "update"});
      res.push_back(s);
    }
  }
  d["resources"] = res;
  return d;
}

}  // namespace pylon::apiserver
