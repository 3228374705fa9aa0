// RBAC coverage against the real kube-apiserver (RBAC authorizer) of a lab (src/lab/lab.h): the
// allocator and the agents authenticate as the ServiceAccounts purelb-system/allocator and
// purelb-system/agent with TokenRequest tokens, under exactly the Roles of deploy/rbac-*.yaml.
//
// Coverage: a ServiceGroup Service and a Lace Service are allocated, announced and deleted, the
// agents are stopped with SIGTERM. Then, from the server's audit log (audit.k8s.io/v1 Events, by
// user.username): no request of either component was denied (403), every request is allowed by
// deploy/rbac-<component>.yaml, and every rule in those files was used — except the documented
// kExceptions below.
//
// Least privilege cuts both ways: a lab whose deploy/ lacks one verb the allocator needs (update
// on services/status) never gives a Service an address, and one whose agent Role lacks one verb
// (create on leases) never announces; the audit log shows the 403s.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lab/lab.h"
#include "support/apiserver.h"
#include "support/binaries.h"
#include "support/eventually.h"
#include "support/kubectl_json.h"

namespace {

namespace fs = std::filesystem;
namespace lab = pylon::lab;
namespace test_support = pylon::test_support;
using Json = nlohmann::json;
using Ms = std::chrono::milliseconds;
constexpr const char* kInstallNs = "purelb-system";
const std::map<std::string, std::string> kUsers = {
    {"allocator", "system:serviceaccount:purelb-system:allocator"},
    {"agent", "system:serviceaccount:purelb-system:agent"}};

constexpr test_support::Poll Eventually{.timeout = Ms(30000), .every = Ms(100)};

// One permission: verb on group/resource[/subresource], cluster-wide or in one namespace.
struct Grant {
  std::string verb, group, resource;
  bool cluster = false;  // ClusterRole; else a Role in kInstallNs
  std::string name;      // one of the rule's resourceNames; "" when the rule has none (any)
  bool operator<(const Grant& o) const {
    return std::tie(verb, group, resource, cluster, name) <
           std::tie(o.verb, o.group, o.resource, o.cluster, o.name);
  }
  std::string String() const {
    return (cluster ? "ClusterRole " : "Role ") + verb + " " + (group.empty() ? "core" : group) +
           "/" + resource + (name.empty() ? "" : "[" + name + "]");
  }
};

std::set<Grant> LoadGrants(const std::string& file) {
  std::set<Grant> out;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(file)) {
    const std::string kind = doc["kind"].as<std::string>("");
    if (kind != "ClusterRole" && kind != "Role") continue;
    if (kind == "Role") {
      EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(""), kInstallNs);
    }
    for (const YAML::Node& rule : doc["rules"]) {
      std::vector<std::string> names;
      for (const YAML::Node& n : rule["resourceNames"]) names.push_back(n.as<std::string>());
      if (names.empty()) names.push_back("");
      for (const YAML::Node& g : rule["apiGroups"]) {
        for (const YAML::Node& r : rule["resources"]) {
          for (const YAML::Node& v : rule["verbs"]) {
            for (const std::string& n : names) {
              out.insert({v.as<std::string>(), g.as<std::string>(), r.as<std::string>(),
                          kind == "ClusterRole", n});
            }
          }
        }
      }
    }
  }
  return out;
}

// One request of the audit log (one per auditID: a watch has a ResponseStarted and a
// ResponseComplete event).
struct Request {
  std::string component;  // allocator / agent; "" for anyone else
  std::string verb, group, resource, ns, name, uri;
  bool non_resource = false;
  int code = 0;
  std::string line;
};

std::vector<Request> ReadAudit(const std::string& path) {
  std::vector<Request> out;
  std::map<std::string, std::size_t> by_id;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::string line;
  while (std::getline(in, line)) {
    Json e = Json::parse(line, nullptr, false);
    EXPECT_TRUE(e.is_object()) << line;
    if (!e.is_object()) continue;
    Request r;
    const std::string user = e.value("/user/username"_json_pointer, std::string());
    for (const auto& [c, u] : kUsers) {
      if (user == u) r.component = c;
    }
    r.verb = e.value("verb", "");
    r.uri = e.value("requestURI", "");
    r.code = e.value("/responseStatus/code"_json_pointer, 0);
    r.line = line;
    if (e.contains("objectRef")) {
      const Json& o = e["objectRef"];
      r.group = o.value("apiGroup", "");
      r.resource = o.value("resource", "");
      if (!o.value("subresource", "").empty()) r.resource += "/" + o.value("subresource", "");
      r.ns = o.value("namespace", "");
      r.name = o.value("name", "");
    } else {
      r.non_resource = true;
    }
    const std::string id = e.value("auditID", "");
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      by_id[id] = out.size();
      out.push_back(r);
    } else if (r.code != 0) {
      out[it->second] = r;  // the later stage has the final status
    }
  }
  return out;
}

std::string Describe(const Request& r) {
  return r.component + " " + r.verb + " " + (r.group.empty() ? "core" : r.group) + "/" +
         r.resource + (r.ns.empty() ? "" : " in " + r.ns) + " → " + std::to_string(r.code);
}

// Rules that this run need not exercise, and why.
const std::map<std::string, std::string> kExceptions = {
    {"allocator ClusterRole patch core/events",
     "events are patched only when one repeats within the recorder's dedup window"},
    {"agent ClusterRole patch core/events",
     "events are patched only when one repeats within the recorder's dedup window"},
    {"agent Role get coordination.k8s.io/leases",
     "the lease keeper reads its lease only after a failed update (conflict)"},
    {"agent Role get core/pods",
     "read on SIGTERM only in a pod ($POD_NAME): the lab runs its agents as processes"},
    {"agent Role get apps/daemonsets",
     "read on SIGTERM only in a pod ($POD_NAME): the lab runs its agents as processes"},
    {"allocator Role get purelb.io/servicegroups",
     "a ServiceGroup is read only after its status write conflicts (a stale cache)"},
    {"allocator ClusterRole get lace-cni.io/loadbalancerclasses",
     "a LoadBalancerClass is read only after its status write conflicts (a stale cache)"},
};

// deploy/ copied into `to` with `verb` taken out of the rule of `kind` (Role / ClusterRole) that
// grants it on group/resource in rbac-<component>.yaml; a rule left with no verb goes.
void CopyDeployWithout(const std::string& to, const std::string& component, const std::string& kind,
                       const std::string& group, const std::string& resource,
                       const std::string& verb) {
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::copy(std::string(PYLON_SOURCE_DIR) + "/deploy", to, fs::copy_options::recursive, ec);
  ASSERT_FALSE(ec) << ec.message();
  const std::string file = to + "/rbac-" + component + ".yaml";
  std::vector<YAML::Node> docs = YAML::LoadAllFromFile(file);
  int removed = 0;
  for (YAML::Node& doc : docs) {
    if (doc["kind"].as<std::string>("") != kind) continue;
    YAML::Node rules(YAML::NodeType::Sequence);
    for (const YAML::Node& rule : doc["rules"]) {
      bool match = false;
      for (const YAML::Node& g : rule["apiGroups"]) match |= g.as<std::string>() == group;
      bool has_resource = false;
      for (const YAML::Node& r : rule["resources"]) has_resource |= r.as<std::string>() == resource;
      if (!match || !has_resource) {
        rules.push_back(rule);
        continue;
      }
      // Split: the resource without the verb, the rule's other resources unchanged.
      YAML::Node others(YAML::NodeType::Sequence), verbs(YAML::NodeType::Sequence);
      for (const YAML::Node& r : rule["resources"]) {
        if (r.as<std::string>() != resource) others.push_back(r.as<std::string>());
      }
      for (const YAML::Node& v : rule["verbs"]) {
        if (v.as<std::string>() == verb) {
          ++removed;
        } else {
          verbs.push_back(v.as<std::string>());
        }
      }
      if (others.size() > 0) {
        YAML::Node o = YAML::Clone(rule);
        o["resources"] = others;
        rules.push_back(o);
      }
      if (verbs.size() > 0) {
        YAML::Node n = YAML::Clone(rule);
        n["resources"] = YAML::Node(YAML::NodeType::Sequence);
        n["resources"].push_back(resource);
        n["verbs"] = verbs;
        rules.push_back(n);
      }
    }
    doc["rules"] = rules;
  }
  ASSERT_EQ(removed, 1) << kind << " " << verb << " " << group << "/" << resource << " in " << file;
  std::ofstream out(file, std::ios::trunc);
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) out << "---\n";
    out << YAML::Dump(docs[i]) << "\n";
  }
  ASSERT_TRUE(out) << file;
}

class RbacLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces)";
    PYLON_NEED_APISERVER();
  }
  void TearDown() override {
    if (lab_) {
      auto s = lab_->Down();
      EXPECT_TRUE(s) << s.error().message();
      lab_.reset();
    }
    if (!deploy_copy_.empty()) {
      std::error_code ec;
      fs::remove_all(deploy_copy_, ec);
    }
  }
  // A lab of two nodes; `suffix` keeps the names of the tests' labs apart.
  void StartLab(const std::string& suffix, const std::string& deploy_dir = "") {
    lab::LabConfig cfg;
    cfg.name = "rb" + suffix + std::to_string(getpid() % 100000);
    cfg.nodes = 2;
    cfg.binary = test_support::ProductBinary();
    cfg.dir = "/tmp/pylon-lab/" + cfg.name;
    cfg.deploy_dir = deploy_dir;
    lab_ = std::make_unique<lab::Lab>(cfg);
    auto up = lab_->Up();
    ASSERT_TRUE(up) << up.error().message();
  }
  Json Get(const std::vector<std::string>& args) { return test_support::KubectlJson(*lab_, args); }
  static std::string Ann(const Json& o, const std::string& key) {
    if (!o.is_object() || !o.contains("metadata") || !o["metadata"].contains("annotations"))
      return "";
    const Json& a = o["metadata"]["annotations"];
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
  }
  static std::vector<std::string> Ingress(const Json& svc) {
    std::vector<std::string> out;
    if (!svc.is_object()) return out;
    for (const Json& i : svc.value("/status/loadBalancer/ingress"_json_pointer, Json::array())) {
      out.push_back(i.value("ip", ""));
    }
    return out;
  }
  size_t L2Count() {
    Json l = Get({"get", "l2advertisements.lace-cni.io"});
    return l.is_object() && l.contains("items") ? l["items"].size() : 0;
  }
  // Nodes whose network namespace has `address` on an interface.
  std::vector<std::string> NodesWith(const std::string& address) {
    std::vector<std::string> out;
    for (const auto& n : lab_->topology().nodes()) {
      std::string text;
      auto rc = pylon::lab::RunCommand({"ip", "netns", "exec", n.netns, "ip", "-o", "addr"}, &text);
      if (rc && text.find(" " + address + "/") != std::string::npos) out.push_back(n.name);
    }
    return out;
  }
  // Requests of `component` the server denied.
  std::vector<Request> Denied(const std::string& component) {
    std::vector<Request> out;
    for (const Request& r : ReadAudit(lab_->control_plane().AuditLog())) {
      if (r.component == component && r.code == 403) out.push_back(r);
    }
    return out;
  }
  // A lab (StartLab) from a copy of deploy/ whose `kind` for `component` lacks `verb` on
  // `resource` (of API `group`).
  void StartLabWithout(const std::string& suffix, const std::string& component,
                       const std::string& kind, const std::string& group,
                       const std::string& resource, const std::string& verb) {
    deploy_copy_ = "/tmp/pylon-rbac-deploy-" + std::to_string(getpid()) + "-" + component;
    CopyDeployWithout(deploy_copy_, component, kind, group, resource, verb);
    ASSERT_FALSE(HasFatalFailure());
    StartLab(suffix, deploy_copy_);
  }
  // Whether the audit log shows the server refusing `verb` on `resource` to `component`.
  bool WasDenied(const std::string& component, const std::string& verb,
                 const std::string& resource) {
    for (const Request& d : Denied(component)) {
      if (d.verb == verb && d.resource == resource) return true;
    }
    return false;
  }
  // `component` was refused `verb` on `resource` and nothing else; `other` was refused nothing.
  void ExpectOnlyDenied(const std::string& component, const std::string& verb,
                        const std::string& resource, const std::string& other) {
    for (const Request& d : Denied(component)) {
      EXPECT_TRUE(d.verb == verb && d.resource == resource)
          << "denied something else too: " << Describe(d);
    }
    for (const Request& d : Denied(other)) ADD_FAILURE() << other << " denied: " << Describe(d);
  }

  std::unique_ptr<lab::Lab> lab_;
  std::string deploy_copy_;
};

constexpr const char* kServiceGroup = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: rbac
  namespace: purelb-system
spec:
  local:
    v4pools:
      - subnet: 192.0.2.0/24
        pool: 192.0.2.200-192.0.2.209
)";

constexpr const char* kSgService = R"(apiVersion: v1
kind: Service
metadata:
  name: sg
  namespace: default
  annotations:
    purelb.io/service-group: rbac
spec:
  type: LoadBalancer
  ports: [{port: 80}]
)";

TEST_F(RbacLabTest, EveryRequestIsGrantedAndEveryGrantIsUsed) {
  StartLab("");
  ASSERT_TRUE(lab_->Apply(std::string(kServiceGroup) + "---\n" + kSgService + R"(---
apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: rbac
spec:
  mode: l2
  ipv4Pools:
    - start: 198.51.100.200
      end: 198.51.100.209
---
apiVersion: v1
kind: Service
metadata:
  name: lace
  namespace: default
spec:
  type: LoadBalancer
  loadBalancerClass: lace-cni.io/rbac
  ports: [{port: 80}]
)"));
  ASSERT_TRUE(Eventually([&] {
    Json sg = Get({"get", "service", "-n", "default", "sg"});
    Json lace = Get({"get", "service", "-n", "default", "lace"});
    return Ingress(sg).size() == 1 && Ingress(lace).size() == 1 &&
           !Ann(sg, "purelb.io/announcing-IPv4").empty();
  })) << "allocation + announcement";
  ASSERT_TRUE(Eventually([&] { return L2Count() == 1; })) << "L2Advertisement of the Lace address";
  ASSERT_TRUE(lab_->Kubectl({"delete", "service", "-n", "default", "sg", "lace"}));
  ASSERT_TRUE(Eventually([&] { return L2Count() == 0; })) << "L2Advertisement deleted";
  for (const auto& n : lab_->topology().nodes()) {
    ASSERT_TRUE(lab_->SignalAgent(n.name, SIGTERM));
    EXPECT_TRUE(lab_->WaitAgentExit(n.name, 10000)) << n.name;
  }
  ASSERT_TRUE(lab_->StopAllocator());

  const std::string deploy = std::string(PYLON_SOURCE_DIR) + "/deploy/";
  const std::map<std::string, std::set<Grant>> grants = {
      {"allocator", LoadGrants(deploy + "rbac-allocator.yaml")},
      {"agent", LoadGrants(deploy + "rbac-agent.yaml")}};
  std::map<std::string, std::set<Grant>> used;
  std::map<std::string, int> requests;
  std::set<std::string> reported;  // each problem once
  std::set<std::string> non_resource;
  for (const Request& r : ReadAudit(lab_->control_plane().AuditLog())) {
    if (r.component.empty()) continue;  // the admin (kubectl), the API server itself
    ++requests[r.component];
    if (r.code == 403 && reported.insert("403 " + Describe(r)).second) {
      ADD_FAILURE() << "denied: " << Describe(r) << "\n" << r.line;
    }
    if (r.non_resource) {
      // Discovery and health URLs: the default system:discovery / system:public-info-viewer
      // roles of every authenticated user grant them, deploy/ need not.
      non_resource.insert(r.component + " " + r.verb + " " + r.uri.substr(0, r.uri.find('?')));
      continue;
    }
    // A rule with resourceNames grants only those objects (and never list, watch or create).
    const auto& g = grants.at(r.component);
    std::optional<Grant> match;
    for (const std::string& name : {std::string(), r.name}) {
      const Grant cluster{r.verb, r.group, r.resource, true, name},
          role{r.verb, r.group, r.resource, false, name};
      if (g.count(cluster)) {
        match = cluster;
      } else if (r.ns == kInstallNs && g.count(role)) {
        match = role;
      }
      if (match || r.name.empty()) break;
    }
    if (match) {
      used[r.component].insert(*match);
    } else if (reported.insert("ungranted " + Describe(r)).second) {
      ADD_FAILURE() << "a request deploy/rbac-" << r.component
                    << ".yaml does not allow: " << Describe(r) << "\n"
                    << r.line;
    }
  }
  for (const auto& s : non_resource) std::printf("non-resource request: %s\n", s.c_str());
  EXPECT_GT(requests["allocator"], 0) << "no request as " << kUsers.at("allocator");
  EXPECT_GT(requests["agent"], 0) << "no request as " << kUsers.at("agent");
  for (const auto& [component, gs] : grants) {
    for (const Grant& g : gs) {
      if (used[component].count(g)) continue;
      const std::string key = component + " " + g.String();
      EXPECT_TRUE(kExceptions.count(key)) << "unused rule (remove it or document why): " << key;
      if (kExceptions.count(key))
        std::printf("unused, documented: %s (%s)\n", key.c_str(), kExceptions.at(key).c_str());
    }
  }
}

// The allocator writes a Service's address with PUT on services/status. Without that verb it
// cannot do its job: the Service never gets an address, and the server says why.
TEST_F(RbacLabTest, AllocatorWithoutUpdateOnServiceStatusAllocatesNothing) {
  ASSERT_NO_FATAL_FAILURE(
      StartLabWithout("a", "allocator", "ClusterRole", "", "services/status", "update"));
  auto r = lab_->Kubectl({"auth", "can-i", "update", "services", "--subresource=status", "-n",
                          "default", "--as=" + kUsers.at("allocator")});
  EXPECT_FALSE(r) << "the copy still grants it: " << *r;
  ASSERT_TRUE(lab_->Apply(std::string(kServiceGroup) + "---\n" + kSgService));
  // The allocator tried (and was refused) ...
  ASSERT_TRUE(Eventually([&] { return WasDenied("allocator", "update", "services/status"); }))
      << "no 403 on update services/status in the audit log";
  // ... and the Service has no address, however long one waits (the other writes went through:
  // the ServiceGroup's status says the pool is fine).
  std::this_thread::sleep_for(Ms(5000));
  Json svc = Get({"get", "service", "-n", "default", "sg"});
  EXPECT_TRUE(Ingress(svc).empty()) << svc.dump();
  EXPECT_TRUE(Ann(svc, "purelb.io/announcing-IPv4").empty()) << svc.dump();
  ExpectOnlyDenied("allocator", "update", "services/status", "agent");
}

// An agent keeps its node Lease (create, then update). Without create it never becomes a member:
// no node announces the Service's address, and the server says why.
TEST_F(RbacLabTest, AgentWithoutCreateOnLeasesAnnouncesNothing) {
  ASSERT_NO_FATAL_FAILURE(
      StartLabWithout("g", "agent", "Role", "coordination.k8s.io", "leases", "create"));
  auto r = lab_->Kubectl({"auth", "can-i", "create", "leases.coordination.k8s.io", "-n", kInstallNs,
                          "--as=" + kUsers.at("agent")});
  EXPECT_FALSE(r) << "the copy still grants it: " << *r;
  ASSERT_TRUE(lab_->Apply(std::string(kServiceGroup) + "---\n" + kSgService));
  // The allocator is not affected: the Service gets its address.
  std::string address;
  ASSERT_TRUE(Eventually([&] {
    auto ips = Ingress(Get({"get", "service", "-n", "default", "sg"}));
    if (ips.size() == 1) address = ips[0];
    return !address.empty();
  })) << "allocation";
  ASSERT_TRUE(Eventually([&] { return WasDenied("agent", "create", "leases"); }))
      << "no 403 on create leases in the audit log";
  // An agent with a working lease announces within a second or two; give it five.
  std::this_thread::sleep_for(Ms(5000));
  Json svc = Get({"get", "service", "-n", "default", "sg"});
  EXPECT_TRUE(Ann(svc, "purelb.io/announcing-IPv4").empty()) << svc.dump();
  EXPECT_TRUE(NodesWith(address).empty()) << address << " is on a node";
  ExpectOnlyDenied("agent", "create", "leases", "allocator");
}

}  // namespace
