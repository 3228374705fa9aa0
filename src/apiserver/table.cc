#include "apiserver/table.h"

#include <algorithm>
#include <cctype>

#include "apiserver/pod_template.h"

namespace pylon::apiserver {
namespace {

struct Column {
  std::string name, type, format, description;
  int priority = 0;
};

const char* kNameDesc =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char* kAgeDesc =
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

Column NameCol() { return {"Name", "string", "name", kNameDesc, 0}; }
Column AgeCol() { return {"Age", "string", "", kAgeDesc, 0}; }
Column Str(std::string n, std::string d = "", int prio = 0) {
  return {std::move(n), "string", "", std::move(d), prio};
}

std::string Age(const Json& obj, WallTime now,
                std::initializer_list<std::string_view> path = {"metadata", "creationTimestamp"}) {
  auto t = ParseTime(GetString(obj, path));
  if (!t) return "<unknown>";
  return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::vector<std::string> StringList(const Json* arr) {
  std::vector<std::string> out;
  if (arr && arr->is_array())
    for (const auto& v : *arr)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

std::string ServiceExternalIp(const Json& obj) {
  std::string type = GetString(obj, {"spec", "type"});
  std::vector<std::string> ext = StringList(Find(obj, {"spec", "externalIPs"}));
  if (type == "ExternalName") return GetString(obj, {"spec", "externalName"});
  if (type == "LoadBalancer") {
    std::vector<std::string> lb;
    if (const Json* in = Find(obj, {"status", "loadBalancer", "ingress"}); in && in->is_array())
      for (const auto& i : *in) {
        if (!StrOr(i, "ip").empty())
          lb.push_back(StrOr(i, "ip"));
        else if (!StrOr(i, "hostname").empty())
          lb.push_back(StrOr(i, "hostname"));
      }
    lb.insert(lb.end(), ext.begin(), ext.end());
    return lb.empty() ? "<pending>" : Join(lb, ",");
  }
  return ext.empty() ? "<none>" : Join(ext, ",");
}

std::string ServicePorts(const Json& obj) {
  std::vector<std::string> out;
  if (const Json* ports = Find(obj, {"spec", "ports"}); ports && ports->is_array())
    for (const auto& p : *ports) {
      std::string s = std::to_string(IntOr(p, "port", 0));
      if (long long np = IntOr(p, "nodePort", 0)) s += ":" + std::to_string(np);
      s += "/" + StrOr(p, "protocol", "TCP");
      out.push_back(s);
    }
  return out.empty() ? "<none>" : Join(out, ",");
}

std::string Selector(const Json& obj) {
  std::vector<std::string> out;
  if (const Json* sel = Find(obj, {"spec", "selector"}); sel && sel->is_object())
    for (auto it = sel->begin(); it != sel->end(); ++it)
      out.push_back(it.key() + "=" +
                    (it.value().is_string() ? it.value().get<std::string>() : Dump(it.value())));
  std::sort(out.begin(), out.end());
  return out.empty() ? "<none>" : Join(out, ",");
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Json CellFromValue(const Json& v, const std::string& type, WallTime now) {
  if (v.is_null()) return nullptr;
  if (type == "date" && v.is_string()) {
    auto t = ParseTime(v.get<std::string>());
    if (t) return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
  }
  if (v.is_object() || v.is_array()) return Dump(v);
  return v;
}

Column Int(std::string n, std::string d = "") {
  return {std::move(n), "integer", "", std::move(d), 0};
}

// Containers, images and selector: the wide columns of the workload kinds.
std::vector<Column> WorkloadWide() {
  return {Str("Containers", "Names of each container in the template.", 1),
          Str("Images", "Images referenced by each container in the template.", 1),
          Str("Selector", "Label selector for pods.", 1)};
}

Json WorkloadWideCells(const Json& obj) {
  std::vector<std::string> names, images;
  if (const Json* cs = Find(obj, {"spec", "template", "spec", "containers"}); cs && cs->is_array())
    for (const auto& c : *cs) {
      names.push_back(StrOr(c, "name"));
      images.push_back(StrOr(c, "image"));
    }
  const Json* sel = Find(obj, {"spec", "selector"});
  return Json::array({Join(names, ","), Join(images, ","),
                      sel ? FormatLabelSelector(*sel) : std::string("<none>")});
}

long long StatusInt(const Json& obj, std::string_view key) {
  const Json* st = Find(obj, {"status"});
  return st ? IntOr(*st, key, 0) : 0;
}

std::size_t Size(const Json* v) { return v && (v->is_object() || v->is_array()) ? v->size() : 0; }

// "users", "groups", "service accounts" of a binding's subjects (kubectl's wide columns).
Json BindingSubjectCells(const Json& obj) {
  std::vector<std::string> users, groups, sas;
  if (const Json* ss = Find(obj, {"subjects"}); ss && ss->is_array())
    for (const auto& s : *ss) {
      std::string kind = StrOr(s, "kind"), name = StrOr(s, "name");
      if (kind == "User")
        users.push_back(name);
      else if (kind == "Group")
        groups.push_back(name);
      else if (kind == "ServiceAccount")
        sas.push_back(StrOr(s, "namespace") + "/" + name);
    }
  return Json::array({Join(users, ", "), Join(groups, ", "), Join(sas, ", ")});
}

void Columns(const ResourceType& t, std::vector<Column>* cols) {
  const std::string& g = t.group;
  const std::string& r = t.resource;
  if (t.custom) {
    cols->push_back(NameCol());
    if (t.columns.empty()) {
      cols->push_back(AgeCol());
      return;
    }
    for (const auto& c : t.columns)
      cols->push_back({c.name, c.type, c.format, c.description, c.priority});
    return;
  }
  if (g.empty() && r == "services") {
    *cols = {
        NameCol(),
        Str("Type", "type determines how the Service is exposed."),
        Str("Cluster-IP", "clusterIP is the IP address of the service."),
        Str("External-IP",
            "List of IP addresses for which nodes in the cluster will also accept traffic for this "
            "service."),
        Str("Port(s)", "The list of ports that are exposed by this service."),
        AgeCol(),
        Str("Selector",
            "Route service traffic to pods with label keys and values matching this selector.", 1)};
  } else if (g.empty() && r == "namespaces") {
    *cols = {NameCol(), Str("Status", "The status of the namespace"), AgeCol()};
  } else if (g.empty() && r == "nodes") {
    *cols = {NameCol(), Str("Status", "The status of the node"),
             Str("Roles", "The roles of the node"), AgeCol(),
             Str("Version", "Kubelet Version reported by the node.")};
  } else if (r == "events") {
    *cols = {Str("Last Seen"), Str("Type"), Str("Reason"), Str("Object"), Str("Message")};
  } else if (g == "coordination.k8s.io") {
    *cols = {NameCol(), Str("Holder", "The holder of the lease"), AgeCol()};
  } else if (g == "discovery.k8s.io") {
    *cols = {NameCol(), Str("AddressType"), Str("Ports"), Str("Endpoints"), AgeCol()};
  } else if (g == "apiextensions.k8s.io") {
    *cols = {NameCol(), {"Created At", "date", "", "", 0}};
  } else if (g == "apps" && r == "deployments") {
    *cols = {NameCol(), Str("Ready", "Number of the pod with ready state"),
             Int("Up-to-date",
                 "Total number of non-terminated pods targeted by this deployment "
                 "that have the desired template spec."),
             Int("Available",
                 "Total number of available pods (ready for at least "
                 "minReadySeconds) targeted by this deployment."),
             AgeCol()};
    for (auto& c : WorkloadWide()) cols->push_back(c);
  } else if (g == "apps" && r == "daemonsets") {
    *cols = {NameCol(),
             Int("Desired", "The total number of nodes that should be running the daemon pod."),
             Int("Current",
                 "The number of nodes that are running at least 1 daemon pod and are "
                 "supposed to run the daemon pod."),
             Int("Ready",
                 "The number of nodes that should be running the daemon pod and have one "
                 "or more of the daemon pod running and ready."),
             Int("Up-to-date", "The total number of nodes that are running updated daemon pod"),
             Int("Available",
                 "The number of nodes that should be running the daemon pod and have "
                 "one or more of the daemon pod running and available (ready for at "
                 "least spec.minReadySeconds)"),
             Str("Node Selector",
                 "NodeSelector is a selector which must be true for the pod to "
                 "fit on a node."),
             AgeCol()};
    for (auto& c : WorkloadWide()) cols->push_back(c);
  } else if (g.empty() && r == "serviceaccounts") {
    *cols = {NameCol(),
             Int("Secrets",
                 "Secrets is a list of the secrets in the same namespace "
                 "that pods running using this ServiceAccount are allowed "
                 "to use."),
             AgeCol()};
  } else if (g.empty() && r == "secrets") {
    *cols = {NameCol(), Str("Type", "Used to facilitate programmatic handling of secret data."),
             Int("Data", "Data contains the secret data."), AgeCol()};
  } else if (g.empty() && r == "configmaps") {
    *cols = {NameCol(), Int("Data", "Data contains the configuration data."), AgeCol()};
  } else if (g == "rbac.authorization.k8s.io" && (r == "roles" || r == "clusterroles")) {
    *cols = {NameCol(), {"Created At", "date", "", "", 0}};
  } else if (g == "rbac.authorization.k8s.io") {
    *cols = {NameCol(),
             Str("Role",
                 "RoleRef can reference a Role in the current namespace or a ClusterRole "
                 "in the global namespace."),
             AgeCol(),
             Str("Users", "Users in the roleBinding", 1),
             Str("Groups", "Groups in the roleBinding", 1),
             Str("ServiceAccounts", "ServiceAccounts in the roleBinding", 1)};
  } else {
    *cols = {NameCol(), AgeCol()};
  }
}

Json Cells(const ResourceType& t, const Json& obj, WallTime now) {
  const std::string& g = t.group;
  const std::string& r = t.resource;
  std::string name = GetString(obj, {"metadata", "name"});
  if (t.custom) {
    Json cells = Json::array({name});
    if (t.columns.empty()) {
      cells.push_back(Age(obj, now));
    } else {
      for (const auto& c : t.columns)
        cells.push_back(CellFromValue(EvalJsonPath(obj, c.json_path), c.type, now));
    }
    return cells;
  }
  if (g.empty() && r == "services") {
    std::string cip = GetString(obj, {"spec", "clusterIP"});
    return Json::array({name, GetString(obj, {"spec", "type"}), cip.empty() ? "<none>" : cip,
                        ServiceExternalIp(obj), ServicePorts(obj), Age(obj, now), Selector(obj)});
  }
  if (g.empty() && r == "namespaces")
    return Json::array({name, GetString(obj, {"status", "phase"}), Age(obj, now)});
  if (g.empty() && r == "nodes") {
    std::string status = "Unknown";
    if (const Json* conds = Find(obj, {"status", "conditions"}); conds && conds->is_array())
      for (const auto& c : *conds)
        if (StrOr(c, "type") == "Ready")
          status = StrOr(c, "status") == "True" ? "Ready" : "NotReady";
    if (BoolOr(Find(obj, {"spec"}) ? obj["spec"] : Json::object(), "unschedulable", false))
      status += ",SchedulingDisabled";
    return Json::array({name, status, "<none>", Age(obj, now),
                        GetString(obj, {"status", "nodeInfo", "kubeletVersion"})});
  }
  if (r == "events") {
    std::string last = GetString(obj, {"lastTimestamp"}).empty() ? Age(obj, now, {"eventTime"})
                                                                 : Age(obj, now, {"lastTimestamp"});
    std::string object = Lower(GetString(obj, {"involvedObject", "kind"})) + "/" +
                         GetString(obj, {"involvedObject", "name"});
    return Json::array({last, GetString(obj, {"type"}), GetString(obj, {"reason"}), object,
                        GetString(obj, {"message"})});
  }
  if (g == "coordination.k8s.io") {
    std::string holder = GetString(obj, {"spec", "holderIdentity"});
    return Json::array({name, holder.empty() ? "<unknown>" : holder, Age(obj, now)});
  }
  if (g == "discovery.k8s.io") {
    std::vector<std::string> ports, eps;
    if (const Json* p = Find(obj, {"ports"}); p && p->is_array())
      for (const auto& e : *p) ports.push_back(std::to_string(IntOr(e, "port", 0)));
    if (const Json* e = Find(obj, {"endpoints"}); e && e->is_array())
      for (const auto& ep : *e)
        for (const auto& a : StringList(Find(ep, {"addresses"}))) eps.push_back(a);
    return Json::array({name, GetString(obj, {"addressType"}),
                        ports.empty() ? "<unset>" : Join(ports, ","),
                        eps.empty() ? "<unset>" : Join(eps, ","), Age(obj, now)});
  }
  if (g == "apiextensions.k8s.io")
    return Json::array({name, GetString(obj, {"metadata", "creationTimestamp"})});
  if (g == "apps" && r == "deployments") {
    const Json* replicas = Find(obj, {"spec", "replicas"});
    long long want = replicas && replicas->is_number_integer() ? replicas->get<long long>() : 0;
    Json cells = Json::array(
        {name, std::to_string(StatusInt(obj, "readyReplicas")) + "/" + std::to_string(want),
         StatusInt(obj, "updatedReplicas"), StatusInt(obj, "availableReplicas"), Age(obj, now)});
    for (auto& c : WorkloadWideCells(obj)) cells.push_back(c);
    return cells;
  }
  if (g == "apps" && r == "daemonsets") {
    std::vector<std::string> ns;
    if (const Json* sel = Find(obj, {"spec", "template", "spec", "nodeSelector"});
        sel && sel->is_object())
      for (auto it = sel->begin(); it != sel->end(); ++it)
        ns.push_back(it.key() + "=" +
                     (it.value().is_string() ? it.value().get<std::string>() : Dump(it.value())));
    std::sort(ns.begin(), ns.end());
    Json cells = Json::array(
        {name, StatusInt(obj, "desiredNumberScheduled"), StatusInt(obj, "currentNumberScheduled"),
         StatusInt(obj, "numberReady"), StatusInt(obj, "updatedNumberScheduled"),
         StatusInt(obj, "numberAvailable"), ns.empty() ? "<none>" : Join(ns, ","), Age(obj, now)});
    for (auto& c : WorkloadWideCells(obj)) cells.push_back(c);
    return cells;
  }
  if (g.empty() && r == "serviceaccounts")
    return Json::array({name, Size(Find(obj, {"secrets"})), Age(obj, now)});
  if (g.empty() && r == "secrets")
    return Json::array({name, GetString(obj, {"type"}), Size(Find(obj, {"data"})), Age(obj, now)});
  if (g.empty() && r == "configmaps")
    return Json::array(
        {name, Size(Find(obj, {"data"})) + Size(Find(obj, {"binaryData"})), Age(obj, now)});
  if (g == "rbac.authorization.k8s.io" && (r == "roles" || r == "clusterroles"))
    return Json::array({name, GetString(obj, {"metadata", "creationTimestamp"})});
  if (g == "rbac.authorization.k8s.io") {
    Json cells = Json::array(
        {name, GetString(obj, {"roleRef", "kind"}) + "/" + GetString(obj, {"roleRef", "name"}),
         Age(obj, now)});
    for (auto& c : BindingSubjectCells(obj)) cells.push_back(c);
    return cells;
  }
  return Json::array({name, Age(obj, now)});
}

}  // namespace

Json EvalJsonPath(const Json& obj, const std::string& path) {
  const Json* cur = &obj;
  std::size_t i = 0;
  std::string p = path;
  if (!p.empty() && p.front() == '{' && p.back() == '}') p = p.substr(1, p.size() - 2);
  while (i < p.size()) {
    if (p[i] == '.') {
      ++i;
      std::size_t j = i;
      while (j < p.size() && p[j] != '.' && p[j] != '[') ++j;
      std::string key = p.substr(i, j - i);
      i = j;
      if (key.empty()) continue;
      if (!cur->is_object() || !cur->contains(key)) return nullptr;
      cur = &(*cur)[key];
    } else if (p[i] == '[') {
      std::size_t close = p.find(']', i);
      if (close == std::string::npos) return nullptr;
      std::string inner = p.substr(i + 1, close - i - 1);
      i = close + 1;
      if (!cur->is_array()) return nullptr;
      if (inner.rfind("?(@.", 0) == 0) {
        std::size_t eq = inner.find("==");
        if (eq == std::string::npos) return nullptr;
        std::string key = inner.substr(4, eq - 4);
        std::string val = inner.substr(eq + 2);
        if (!val.empty() && val.back() == ')') val.pop_back();
        if (val.size() >= 2 && (val.front() == '"' || val.front() == '\''))
          val = val.substr(1, val.size() - 2);
        const Json* found = nullptr;
        for (const auto& e : *cur)
          if (e.is_object() && e.contains(key) && e[key].is_string() &&
              e[key].get<std::string>() == val) {
            found = &e;
            break;
          }
        if (!found) return nullptr;
        cur = found;
      } else {
        char* end = nullptr;
        long idx = std::strtol(inner.c_str(), &end, 10);
        if (end == inner.c_str()) return nullptr;
        if (idx < 0) idx += static_cast<long>(cur->size());
        if (idx < 0 || static_cast<std::size_t>(idx) >= cur->size()) return nullptr;
        cur = &(*cur)[static_cast<std::size_t>(idx)];
      }
    } else {
      return nullptr;
    }
  }
  return *cur;
}

Json ToTable(const ResourceType& type, const std::vector<std::shared_ptr<const Json>>& objects,
             const Json& list_meta, const TableOptions& o) {
  Json t = Json::object();
  t["kind"] = "Table";
  t["apiVersion"] = o.api_version;
  t["metadata"] = list_meta;
  std::vector<Column> cols;
  Columns(type, &cols);
  Json defs = Json::array();
  if (o.column_definitions)
    for (const auto& c : cols)
      defs.push_back(Json{{"name", c.name},
                          {"type", c.type},
                          {"format", c.format},
                          {"description", c.description},
                          {"priority", c.priority}});
  t["columnDefinitions"] = defs;
  Json rows = Json::array();
  for (const auto& obj : objects) {
    Json row = Json::object();
    row["cells"] = Cells(type, *obj, o.now);
    if (o.include == IncludeObject::kObject) {
      row["object"] = *obj;
    } else if (o.include == IncludeObject::kMetadata) {
      Json m = Json::object();
      m["kind"] = "PartialObjectMetadata";
      m["apiVersion"] = o.api_version;
      m["metadata"] = (*obj).contains("metadata") ? (*obj)["metadata"] : Json::object();
      row["object"] = m;
    }
    rows.push_back(std::move(row));
  }
  t["rows"] = rows;
  return t;
}

}  // namespace pylon::apiserver
