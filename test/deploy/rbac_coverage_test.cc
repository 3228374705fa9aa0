// RBAC coverage: the allocator and two agents run in a lab (src/lab/lab.h) against
// `pylon apiserver --audit-log`; a ServiceGroup Service and a Lace Service are allocated,
// announced and deleted, the agents are stopped with SIGTERM. Then every request each component
// made (audit log, by User-Agent prefix) must be allowed by deploy/rbac-<component>.yaml, and
// every rule in those files must have been used — except the documented kExceptions below.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lab/lab.h"

namespace {

namespace lab = pylon::lab;
using Json = nlohmann::json;
using Ms = std::chrono::milliseconds;
constexpr const char* kInstallNs = "purelb-system";

bool Eventually(const std::function<bool()>& pred, Ms timeout = Ms(20000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(Ms(50));
  }
  return pred();
}

// One permission: verb on group/resource[/subresource], cluster-wide or in one namespace.
struct Grant {
  std::string verb, group, resource;
  bool cluster = false;  // ClusterRole; else a Role in kInstallNs
  bool operator<(const Grant& o) const {
    return std::tie(verb, group, resource, cluster) <
           std::tie(o.verb, o.group, o.resource, o.cluster);
  }
  std::string String() const {
    return (cluster ? "ClusterRole " : "Role ") + verb + " " + (group.empty() ? "core" : group) +
           "/" + resource;
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
      for (const YAML::Node& g : rule["apiGroups"]) {
        for (const YAML::Node& r : rule["resources"]) {
          for (const YAML::Node& v : rule["verbs"]) {
            out.insert({v.as<std::string>(), g.as<std::string>(), r.as<std::string>(),
                        kind == "ClusterRole"});
          }
        }
      }
    }
  }
  return out;
}

// Rules that this run need not exercise, and why.
const std::map<std::string, std::string> kExceptions = {
    {"pylon-allocator ClusterRole patch core/events",
     "events are patched only when one repeats within the recorder's dedup window"},
    {"pylon-agent ClusterRole patch core/events",
     "events are patched only when one repeats within the recorder's dedup window"},
    {"pylon-agent Role get coordination.k8s.io/leases",
     "the lease keeper reads its lease only after a failed update (conflict)"},
};

class RbacCoverageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces)";
    lab::LabConfig cfg;
    cfg.name = "rb" + std::to_string(getpid() % 100000);
    cfg.nodes = 2;
    const char* env = std::getenv("PYLON_LAB_BINARY");
    cfg.binary = env != nullptr && *env != '\0' ? env : PYLON_BINARY;
    cfg.dir = "/tmp/pylon-lab/" + cfg.name;
    lab_ = std::make_unique<lab::Lab>(cfg);
    auto up = lab_->Up();
    ASSERT_TRUE(up) << up.error().message();
  }
  void TearDown() override {
    if (lab_) {
      auto s = lab_->Down();
      EXPECT_TRUE(s) << s.error().message();
    }
  }
  Json Get(const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-o", "json"});
    auto out = lab_->Kubectl(a);
    if (!out) return Json();
    return Json::parse(*out, nullptr, false);
  }
  static std::string Ann(const Json& o, const std::string& key) {
    if (!o.is_object() || !o.contains("metadata") || !o["metadata"].contains("annotations"))
      return "";
    const Json& a = o["metadata"]["annotations"];
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
  }
  static size_t Ingress(const Json& svc) {
    if (!svc.is_object()) return 0;
    return svc.value("/status/loadBalancer/ingress"_json_pointer, Json::array()).size();
  }
  size_t L2Count() {
    Json l = Get({"get", "l2advertisements.lace-cni.io"});
    return l.is_object() && l.contains("items") ? l["items"].size() : 0;
  }
  std::unique_ptr<lab::Lab> lab_;
};

TEST_F(RbacCoverageTest, EveryRequestIsGrantedAndEveryGrantIsUsed) {
  ASSERT_TRUE(lab_->Apply(R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: rbac
  namespace: purelb-system
spec:
  local:
    v4pools:
      - subnet: 192.0.2.0/24
        pool: 192.0.2.200-192.0.2.209
---
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
  name: sg
  namespace: default
  annotations:
    purelb.io/service-group: rbac
spec:
  type: LoadBalancer
  ports: [{port: 80}]
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
    return Ingress(sg) == 1 && Ingress(lace) == 1 && !Ann(sg, "purelb.io/announcing-IPv4").empty();
  })) << "allocation + announcement";
  ASSERT_TRUE(Eventually([&] { return L2Count() == 1; })) << "L2Advertisement of the Lace address";
  ASSERT_TRUE(lab_->Kubectl({"delete", "service", "-n", "default", "sg", "lace"}));
  ASSERT_TRUE(Eventually([&] { return L2Count() == 0; })) << "L2Advertisement deleted";
  for (const auto& n : lab_->topology().nodes()) {
    ASSERT_TRUE(lab_->SignalAgent(n.name, SIGTERM));
    EXPECT_TRUE(lab_->WaitAgentExit(n.name, 10000)) << n.name;
  }

  const std::string deploy = std::string(PYLON_SOURCE_DIR) + "/deploy/";
  const std::map<std::string, std::set<Grant>> grants = {
      {"pylon-allocator", LoadGrants(deploy + "rbac-allocator.yaml")},
      {"pylon-agent", LoadGrants(deploy + "rbac-agent.yaml")}};
  std::map<std::string, std::set<Grant>> used;
  std::map<std::string, int> requests;
  std::set<std::string> denied;  // reported once each
  std::ifstream audit(lab_->Path("audit.log"));
  ASSERT_TRUE(audit) << lab_->Path("audit.log");
  std::string line;
  while (std::getline(audit, line)) {
    Json r = Json::parse(line, nullptr, false);
    ASSERT_TRUE(r.is_object()) << line;
    const std::string ua = r.value("user_agent", "");
    std::string component;
    for (const auto& [c, g] : grants) {
      if (ua.rfind(c + "/", 0) == 0) component = c;
    }
    if (component.empty()) continue;  // kubectl, the lab
    ++requests[component];
    std::string resource = r.value("resource", "");
    if (!r.value("subresource", "").empty()) resource += "/" + r.value("subresource", "");
    const std::string verb = r.value("verb", ""), group = r.value("group", "");
    const std::string ns = r.value("namespace", "");
    const Grant cluster{verb, group, resource, true}, role{verb, group, resource, false};
    const auto& g = grants.at(component);
    if (g.count(cluster)) {
      used[component].insert(cluster);
    } else if (ns == kInstallNs && g.count(role)) {
      used[component].insert(role);
    } else if (denied.insert(component + " " + cluster.String() + " ns=" + ns).second) {
      ADD_FAILURE() << component << " made a request its RBAC does not allow: " << verb << " "
                    << (group.empty() ? "core" : group) << "/" << resource << " namespace \"" << ns
                    << "\" (" << line << ")";
    }
  }
  EXPECT_GT(requests["pylon-allocator"], 0);
  EXPECT_GT(requests["pylon-agent"], 0);
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

}  // namespace
