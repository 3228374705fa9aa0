// The Helm chart deploy/helm/pylon with the helm that scripts/helm.sh builds: `helm lint`; `helm
// template` with the default values renders exactly the objects of `kubectl kustomize deploy`
// (but the Namespace, which Helm's --create-namespace makes); each value renders what it says;
// `helm install` and `helm uninstall` on a real control plane (etcd + kube-apiserver on loopback,
// src/lab/control_plane.h), a ServiceGroup from the values included. No root, no namespaces.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lab/control_plane.h"
#include "support/apiserver.h"
#include "support/shell.h"

namespace {

namespace fs = std::filesystem;
namespace lab = pylon::lab;
namespace test_support = pylon::test_support;
using Json = nlohmann::json;

std::string Quote(const std::string& s) { return pylon::test_support::ShellQuote(s); }

using Output = pylon::test_support::ShellResult;
using pylon::test_support::Shell;

// A YAML node as JSON, typed the way kubectl's YAML 1.1 decoder types it: a plain scalar is null,
// a boolean, an integer (a leading 0 is octal, so defaultMode 0400 is 256) or a float when it reads
// as one, else a string; a quoted scalar is always a string.
Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const YAML::Node& e : n) a.push_back(ToJson(e));
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = ToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar: {
      const std::string v = n.Scalar();
      if (n.Tag() == "!") return v;  // quoted
      if (v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
      if (v == "true" || v == "True" || v == "TRUE") return true;
      if (v == "false" || v == "False" || v == "FALSE") return false;
      bool digits = !v.empty();
      std::size_t start = (v[0] == '-' || v[0] == '+') ? 1 : 0;
      if (start == v.size()) digits = false;
      for (std::size_t i = start; i < v.size() && digits; ++i) {
        digits = std::isdigit(static_cast<unsigned char>(v[i])) != 0;
      }
      if (digits) {
        const bool octal = v.size() - start > 1 && v[start] == '0';
        return std::stoll(v, nullptr, octal ? 8 : 10);
      }
      return v;
    }
    default:
      return nullptr;
  }
}

// Every non-empty document of a YAML stream.
std::vector<Json> YamlDocs(const std::string& text) {
  std::vector<Json> out;
  for (const YAML::Node& doc : YAML::LoadAll(text)) {
    if (doc.IsMap()) out.push_back(ToJson(doc));
  }
  return out;
}

std::string Id(const Json& o) {
  const Json& m = o.value("metadata", Json::object());
  return o.value("kind", "?") + " " + m.value("namespace", "") + "/" + m.value("name", "?");
}

// helm template renders offline for Kubernetes 1.20 unless told; the chart needs 1.30 or later.
constexpr char kKubeVersion[] = "--kube-version 1.35.4";

class HelmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(test_support::StartSuiteControlPlane("helm-test", &suite_), "");
  }
  static void TearDownTestSuite() {
    delete suite_;
    suite_ = nullptr;
  }
  void SetUp() override {
    PYLON_NEED_APISERVER();
    ASSERT_NE(suite_, nullptr);
    ASSERT_TRUE(fs::exists(HelmBinary())) << HelmBinary() << ": build it with scripts/helm.sh";
  }

  static std::string HelmBinary() {
    const char* env = std::getenv("PYLON_HELM");
    return env != nullptr && *env != '\0' ? env : PYLON_HELM_BIN;
  }
  static std::string Chart() { return std::string(PYLON_SOURCE_DIR) + "/deploy/helm/pylon"; }
  static Output Helm(const std::string& args, bool merge_stderr = true) {
    const std::string home = dir() + "/helm";
    return Shell("HELM_CACHE_HOME=" + Quote(home + "/cache") +
                     " HELM_CONFIG_HOME=" + Quote(home + "/config") +
                     " HELM_DATA_HOME=" + Quote(home + "/data") + " " + Quote(HelmBinary()) +
                     " --kubeconfig " + Quote(cp().AdminKubeconfig()) + " " + args,
                 merge_stderr);
  }
  static Output Kubectl(const std::string& args, bool merge_stderr = true) {
    return Shell(Quote(cp().KubectlBinary()) + " --kubeconfig " + Quote(cp().AdminKubeconfig()) +
                     " --cache-dir " + Quote(dir() + "/cache") + " " + args,
                 merge_stderr);
  }
  static std::string WriteTemp(const std::string& text) {
    static int seq = 0;
    std::string file = dir() + "/file-" + std::to_string(++seq) + ".yaml";
    std::ofstream(file) << text;
    return file;
  }
  static std::vector<Json> AsJson(const std::string& yaml) { return YamlDocs(yaml); }
  // `helm template` of the chart in purelb-system with `args`, as JSON objects by Id.
  static std::map<std::string, Json> Template(const std::string& args) {
    const std::string cmd =
        "template pylon " + Quote(Chart()) + " -n purelb-system " + kKubeVersion + " " + args;
    Output r = Helm(cmd, false);
    EXPECT_EQ(r.code, 0) << Helm(cmd).out;
    std::map<std::string, Json> out;
    for (Json& o : AsJson(r.out)) {
      const std::string id = Id(o);  // before the move: operator= takes its argument by value
      out[id] = std::move(o);
    }
    return out;
  }

  // `helm template` output `helm` holds the objects of `kubectl kustomize <dir>` (but the
  // Namespace), field for field, and nothing else.
  static void ExpectSameAsKustomize(const std::map<std::string, Json>& helm,
                                    const std::string& dir) {
    Output k = Kubectl("kustomize --load-restrictor LoadRestrictionsNone " + Quote(dir), false);
    ASSERT_EQ(k.code, 0) << k.out;
    std::map<std::string, Json> kustomize;
    for (Json& o : AsJson(k.out)) {
      const std::string id = Id(o);
      kustomize[id] = std::move(o);
    }
    ASSERT_GE(kustomize.size(), 14u);
    for (const auto& [id, want] : kustomize) {
      if (want.value("kind", "") == "Namespace") {
        EXPECT_EQ(helm.count(id), 0u) << id << ": Helm's --create-namespace makes it";
        continue;
      }
      auto it = helm.find(id);
      if (it == helm.end()) {
        ADD_FAILURE() << id << ": missing from helm template";
        continue;
      }
      EXPECT_EQ(it->second, want) << id << "\nhelm:      " << it->second.dump()
                                  << "\nkustomize: " << want.dump();
    }
    for (const auto& [id, o] : helm) {
      EXPECT_EQ(kustomize.count(id), 1u) << id << ": rendered by helm only";
    }
  }

  // The suite's control plane and test directory.
  static lab::ControlPlane& cp() { return suite_->plane(); }
  static const std::string& dir() { return suite_->dir(); }

  static inline test_support::TestControlPlane* suite_ = nullptr;
};

TEST_F(HelmTest, LintPasses) {
  Output r = Helm("lint --strict " + Quote(Chart()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 chart(s) linted, 0 chart(s) failed"), std::string::npos) << r.out;
  // A ServiceGroup asked for without a spec fails the render with a message that says so (lint
  // reports a template's `fail` only as [INFO]).
  Output bad = Helm("template pylon " + Quote(Chart()) + " " + kKubeVersion +
                    " --set serviceGroup.create=true");
  EXPECT_NE(bad.code, 0) << bad.out;
  EXPECT_NE(bad.out.find("serviceGroup.spec is empty"), std::string::npos) << bad.out;
}

// The CRDs in the chart are deploy/crds, byte for byte (Helm needs its own copy in crds/).
TEST_F(HelmTest, ChartCrdsAreTheDeployCrds) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(PYLON_SOURCE_DIR) + "/deploy/crds")) {
    std::ifstream a(e.path()), b(Chart() + "/crds/" + e.path().filename().string());
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    EXPECT_FALSE(sa.str().empty());
    EXPECT_EQ(sa.str(), sb.str()) << e.path().filename() << ": copy deploy/crds to the chart";
    ++n;
  }
  EXPECT_EQ(n, 7);
  int in_chart = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(Chart() + "/crds")) ++in_chart;
  EXPECT_EQ(in_chart, n);
}

TEST_F(HelmTest, DefaultValuesRenderExactlyTheKustomizeInstall) {
  ExpectSameAsKustomize(Template("--include-crds"), std::string(PYLON_SOURCE_DIR) + "/deploy");
}

// bgp.enabled renders what the kustomize component deploy/components/bgp adds (docs/bgp.md).
TEST_F(HelmTest, BgpValueRendersExactlyTheKustomizeBgpComponent) {
  const std::string overlay = dir() + "/bgp-overlay";
  fs::create_directories(overlay);
  const std::string rel = fs::relative(std::string(PYLON_SOURCE_DIR) + "/deploy", overlay).string();
  std::ofstream(overlay + "/kustomization.yaml")
      << "resources: [" << rel << "]\ncomponents: [" << rel << "/components/bgp]\n";
  auto t = Template("--include-crds --set bgp.enabled=true");
  ExpectSameAsKustomize(t, overlay);
  EXPECT_EQ(t.count("ClusterRole /pylon:agent-bgp"), 1u);
}

TEST_F(HelmTest, EachValueRendersWhatItSays) {
  const Json svcgroup_spec =
      R"({"local":{"v4pools":[{"subnet":"192.0.2.0/24","pool":"192.0.2.100-192.0.2.119"}]}})"_json;
  std::map<std::string, Json> t = Template(
      "--set image.repository=registry.example/pylon --set image.tag=1.2.3 "
      "--set image.pullPolicy=Always "
      "--set leaseConfig.leaseDuration=20s --set leaseConfig.renewDeadline=15s "
      "--set leaseConfig.retryPeriod=3s "
      "--set serviceGroup.create=true --set-json " +
      Quote("serviceGroup.spec=" + svcgroup_spec.dump()) +
      " --set heartbeat.key=c2VjcmV0LWtleS0xMjM0NTY3ODkw "
      "--set allocator.replicas=3 --set-json " +
      Quote(R"(allocator.resources={"limits":{"memory":"256Mi"}})") + " --set-json " +
      Quote(R"(agent.nodeSelector={"node-role.example/lb":"true"})") + " --set-json " +
      Quote(R"(agent.tolerations=[{"key":"lb","operator":"Exists","effect":"NoSchedule"}])") +
      " --set prometheus.serviceMonitor.enabled=true --set prometheus.rules.enabled=true "
      "--set grafana.dashboard.enabled=true");
  Json dep = t["Deployment purelb-system/allocator"];
  Json ds = t["DaemonSet purelb-system/agent"];
  ASSERT_TRUE(dep.is_object() && ds.is_object());
  Json ac = dep["spec"]["template"]["spec"]["containers"][0];
  Json gc = ds["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(ac["image"], "registry.example/pylon:1.2.3");
  EXPECT_EQ(gc["image"], "registry.example/pylon:1.2.3");
  EXPECT_EQ(ac["imagePullPolicy"], "Always");
  EXPECT_EQ(dep["spec"]["replicas"], 3);
  // Helm merges a map value into the default: the requests stay.
  EXPECT_EQ(ac["resources"],
            R"({"limits":{"memory":"256Mi"},"requests":{"cpu":"50m","memory":"32Mi"}})"_json);
  std::map<std::string, std::string> env;
  for (Json e : gc["env"]) {
    if (e.contains("value")) env[e["name"]] = e["value"];
  }
  EXPECT_EQ(env["PURELB_LEASE_DURATION"], "20s");
  EXPECT_EQ(env["PURELB_RENEW_DEADLINE"], "15s");
  EXPECT_EQ(env["PURELB_RETRY_PERIOD"], "3s");
  EXPECT_EQ(ds["spec"]["template"]["spec"]["nodeSelector"],
            R"({"node-role.example/lb":"true"})"_json);
  EXPECT_EQ(ds["spec"]["template"]["spec"]["tolerations"],
            R"([{"key":"lb","operator":"Exists","effect":"NoSchedule"}])"_json);
  Json sg = t["ServiceGroup purelb-system/default"];
  EXPECT_EQ(sg.value("apiVersion", ""), "purelb.io/v2");
  EXPECT_EQ(sg["spec"], svcgroup_spec);
  Json secret = t["Secret purelb-system/pylon-heartbeat-key"];
  EXPECT_EQ(secret["stringData"]["key"], "c2VjcmV0LWtleS0xMjM0NTY3ODkw");
  EXPECT_EQ(secret["stringData"]["key-file"], "/etc/pylon/heartbeat/key");
  // Metrics Services select the components' pods; the ServiceMonitor selects the Services.
  for (const char* c : {"allocator", "agent"}) {
    Json svc = t[std::string("Service purelb-system/pylon-") + c + "-metrics"];
    ASSERT_TRUE(svc.is_object()) << c;
    EXPECT_EQ(svc["spec"]["selector"]["app.kubernetes.io/component"], c);
    EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"], "metrics");
  }
  Json sm = t["ServiceMonitor purelb-system/pylon"];
  EXPECT_EQ(sm["spec"]["selector"]["matchLabels"]["pylon.io/metrics"], "true");
  Json rules = t["PrometheusRule purelb-system/pylon"];
  std::set<std::string> alerts;
  for (Json r : rules["spec"]["groups"][0]["rules"]) alerts.insert(r["alert"]);
  EXPECT_EQ(alerts, (std::set<std::string>{"PylonNoHealthyLease", "PylonNoAllocatorLeader",
                                           "PylonPoolNearlyExhausted", "PylonPoolExhausted",
                                           "PylonAddressConflict", "PylonAnnouncementFailures"}));
  // Prometheus templating survives Helm's.
  bool has_label_ref = false;
  for (Json r : rules["spec"]["groups"][0]["rules"]) {
    if (r["annotations"]["summary"].get<std::string>().find("{{ $labels.pool }}") !=
        std::string::npos) {
      has_label_ref = true;
    }
    if (r["alert"] == "PylonPoolNearlyExhausted") {
      EXPECT_NE(r["expr"].get<std::string>().find("> 0.9"), std::string::npos) << r["expr"];
    }
  }
  EXPECT_TRUE(has_label_ref);
  Json cm = t["ConfigMap purelb-system/pylon-dashboard"];
  EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"], "1");
  Json dash = Json::parse(cm["data"]["pylon.json"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(dash.is_object()) << cm["data"]["pylon.json"];
  EXPECT_EQ(dash["uid"], "pylon");
  EXPECT_GE(dash["panels"].size(), 8u);
  // Off by default: none of these.
  std::map<std::string, Json> plain = Template("");
  for (const char* id :
       {"Secret purelb-system/pylon-heartbeat-key", "ServiceMonitor purelb-system/pylon",
        "PrometheusRule purelb-system/pylon", "ConfigMap purelb-system/pylon-dashboard",
        "ServiceGroup purelb-system/default"}) {
    EXPECT_EQ(plain.count(id), 0u) << id;
  }
}

// helm install, upgrade and uninstall on kube-apiserver: the objects exist, the ServiceGroup from
// the values is accepted by the CRD (as purelb.io/v2), and uninstall removes what it installed
// but the CRDs (Helm never deletes crds/).
TEST_F(HelmTest, InstallUpgradeUninstallOnTheApiServer) {
  const std::string values = WriteTemp(R"(serviceGroup:
  create: true
  spec:
    remote:
      v4pools:
        - subnet: 198.18.0.0/24
          pool: 198.18.0.0/26
          aggregation: /32
heartbeat:
  key: c2VjcmV0LWtleS0xMjM0NTY3ODkw
)");
  Output in = Helm("install pylon " + Quote(Chart()) +
                   " -n purelb-system --create-namespace --wait=false -f " + Quote(values));
  ASSERT_EQ(in.code, 0) << in.out;
  for (const char* what : {"deployment/allocator", "daemonset/agent", "serviceaccount/allocator",
                           "serviceaccount/agent", "secret/pylon-heartbeat-key",
                           "servicegroup/default", "role.rbac.authorization.k8s.io/pylon:agent"}) {
    Output r = Kubectl(std::string("get -n purelb-system ") + what);
    EXPECT_EQ(r.code, 0) << what << ": " << r.out;
  }
  for (const char* crd : {"servicegroups.purelb.io", "lbnodeagents.purelb.io",
                          "loadbalancerclasses.lace-cni.io", "l2advertisements.lace-cni.io"}) {
    EXPECT_EQ(Kubectl(std::string("get crd ") + crd).code, 0) << crd;
  }
  Output sg = Kubectl(
      "get -n purelb-system servicegroups.v1.purelb.io default -o "
      "jsonpath={.spec.writtenAs}/{.spec.remote.v4pools[0].pool}");
  EXPECT_EQ(sg.out, "v2/198.18.0.0/26");
  // An upgrade with other lease timings rewrites the DaemonSet.
  Output up = Helm("upgrade pylon " + Quote(Chart()) + " -n purelb-system -f " + Quote(values) +
                   " --set leaseConfig.leaseDuration=15s");
  ASSERT_EQ(up.code, 0) << up.out;
  Output env = Kubectl("get -n purelb-system daemonset/agent -o " +
                       Quote("jsonpath={.spec.template.spec.containers[0].env[?(@.name==\""
                             "PURELB_LEASE_DURATION\")].value}"));
  EXPECT_EQ(env.out, "15s");
  Output un = Helm("uninstall pylon -n purelb-system --wait");
  ASSERT_EQ(un.code, 0) << un.out;
  for (const char* what : {"deployment/allocator", "daemonset/agent", "secret/pylon-heartbeat-key",
                           "servicegroup/default"}) {
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = Kubectl(std::string("get -n purelb-system ") + what).code != 0;
      if (!gone) usleep(100 * 1000);
    }
    EXPECT_TRUE(gone) << what << " still there after helm uninstall";
  }
  EXPECT_EQ(Kubectl("get crd servicegroups.purelb.io").code, 0) << "Helm keeps crds/";
}

}  // namespace
