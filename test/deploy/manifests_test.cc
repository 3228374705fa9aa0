// deploy/ and the docs against a real control plane (etcd + kube-apiserver of the release that
// scripts/k8s-components.sh builds, src/lab/control_plane.h) and the kubectl of that release, with
// kubectl's DEFAULT validation (server-side strict field validation: an unknown or misspelt field
// is an error, not a silently dropped one). kustomize renders; `kubectl apply -k deploy` creates
// every object of the install, the CRDs' structural schemas included; read back with -o json,
// every field the manifests set is there with the value they set (nothing pruned, nothing
// rewritten); `kubectl get` shows the workloads and the CRDs' printer columns; a changed install
// re-applies as a strategic merge; the documented heartbeat Secret commands work as written;
// every example and every ```yaml block of docs/*.md applies; the status the allocator writes is
// kept whole; the CRD schemas reject what they say they reject, with a message naming the field.
//
// No root, no namespaces: the control plane listens on loopback.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
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

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Quote(const std::string& s) { return pylon::test_support::ShellQuote(s); }

using Output = pylon::test_support::ShellResult;
using pylon::test_support::Shell;

// One YAML document of a multi-document stream, with its top-level kind and metadata.name.
struct Doc {
  std::string text;
  std::string api_version;
  std::string kind;
  std::string name;
  std::string ns;
};

std::vector<Doc> SplitDocs(const std::string& stream) {
  std::vector<Doc> docs;
  std::stringstream in(stream);
  std::string line;
  Doc cur;
  bool in_metadata = false;
  auto flush = [&]() {
    if (!cur.kind.empty()) docs.push_back(cur);
    cur = Doc{};
    in_metadata = false;
  };
  while (std::getline(in, line)) {
    if (line == "---") {
      flush();
      continue;
    }
    cur.text += line + "\n";
    if (line.rfind("kind: ", 0) == 0) cur.kind = line.substr(6);
    if (line.rfind("apiVersion: ", 0) == 0) cur.api_version = line.substr(12);
    if (line.rfind("metadata:", 0) == 0) {
      in_metadata = true;
    } else if (!line.empty() && line[0] != ' ' && line[0] != '#') {
      in_metadata = false;
    }
    if (in_metadata && line.rfind("  name: ", 0) == 0) cur.name = line.substr(8);
    if (in_metadata && line.rfind("  namespace: ", 0) == 0) cur.ns = line.substr(13);
  }
  flush();
  for (auto& d : docs) {
    for (std::string* s : {&d.api_version, &d.kind, &d.name, &d.ns}) {
      if (s->size() >= 2 && s->front() == '"' && s->back() == '"') *s = s->substr(1, s->size() - 2);
    }
  }
  return docs;
}

// ```yaml blocks of a Markdown file. A block whose info string is "yaml fragment" is a partial
// object shown for reading and is not applied.
struct Block {
  int line = 0;
  std::string text;
  bool fragment = false;
};

std::vector<Block> YamlBlocks(const std::string& md) {
  std::vector<Block> out;
  std::stringstream in(md);
  std::string line;
  int n = 0;
  bool inside = false;
  Block cur;
  while (std::getline(in, line)) {
    ++n;
    if (!inside && line.rfind("```yaml", 0) == 0) {
      inside = true;
      cur = Block{n, "", line.find("fragment") != std::string::npos};
    } else if (inside && line.rfind("```", 0) == 0) {
      inside = false;
      out.push_back(cur);
    } else if (inside) {
      cur.text += line + "\n";
    }
  }
  return out;
}

// Every field of `want` must be in `got` with the same value: objects key by key (the server may
// add fields: defaults, metadata, status), lists element by element and of the same length,
// scalars equal (1 and 1.0 are equal). Differences are appended to `diffs` as "path: ...".
void CompareSubset(const Json& want, const Json& got, const std::string& path,
                   std::vector<std::string>* diffs) {
  if (want.is_object()) {
    if (!got.is_object()) {
      diffs->push_back(path + ": want an object, the server has " + got.dump());
      return;
    }
    for (const auto& [k, v] : want.items()) {
      if (!got.contains(k)) {
        diffs->push_back(path + "." + k + ": missing on the server (pruned?), want " + v.dump());
      } else {
        CompareSubset(v, got[k], path + "." + k, diffs);
      }
    }
  } else if (want.is_array()) {
    if (!got.is_array() || got.size() != want.size()) {
      diffs->push_back(path + ": want " + want.dump() + ", the server has " + got.dump());
      return;
    }
    for (std::size_t i = 0; i < want.size(); ++i) {
      CompareSubset(want[i], got[i], path + "[" + std::to_string(i) + "]", diffs);
    }
  } else if (want != got) {
    diffs->push_back(path + ": want " + want.dump() + ", the server has " + got.dump());
  }
}

// The objects of a kubectl -o json answer: a List, or one object, or (kubectl create of several
// objects) a stream of objects one after the other.
std::vector<Json> Items(const std::string& text) {
  std::vector<Json> out;
  std::size_t start = std::string::npos;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      if (depth++ == 0) start = i;
    } else if (c == '}' && depth > 0 && --depth == 0) {
      Json j = Json::parse(text.substr(start, i + 1 - start), nullptr, false);
      if (j.is_object() && j.value("kind", "") == "List") {
        for (const Json& item : j.value("items", Json::array())) out.push_back(item);
      } else if (j.is_object()) {
        out.push_back(j);
      }
    }
  }
  return out;
}

std::string Id(const Json& o) {
  const Json& m = o.value("metadata", Json::object());
  return o.value("kind", "?") + " " + m.value("namespace", "") + "/" + m.value("name", "?");
}

class DeployTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(test_support::StartSuiteControlPlane("deploy-test", &suite_), "");
    if (suite_ == nullptr) return;
    dir_ = &suite_->dir();
    cp_ = &suite_->plane();
    rendered_ = new std::string();
    Output k = Kubectl("kustomize " + Quote(DeployDir()));
    ASSERT_EQ(k.code, 0) << k.out;
    *rendered_ = k.out;
  }

  static void TearDownTestSuite() {
    delete suite_;
    suite_ = nullptr;
    cp_ = nullptr;
    delete rendered_;
    delete install_out_;
    dir_ = nullptr;
    rendered_ = nullptr;
    install_out_ = nullptr;
  }

  void SetUp() override {
    PYLON_NEED_APISERVER();
    ASSERT_NE(cp_, nullptr);
    ASSERT_FALSE(rendered_ == nullptr || rendered_->empty()) << "control plane not started";
  }

  // The kubectl of the server's release, as the admin. Default validation everywhere.
  static std::string KubectlCmd() {
    return Quote(cp_->KubectlBinary()) + " --kubeconfig " + Quote(cp_->AdminKubeconfig()) +
           " --cache-dir " + Quote(*dir_ + "/cache");
  }
  static Output Kubectl(const std::string& args, bool merge_stderr = true) {
    return Shell(KubectlCmd() + " " + args, merge_stderr);
  }
  static Json KubectlJson(const std::string& args) {
    Output r = Kubectl(args + " -o json", /*merge_stderr=*/false);
    EXPECT_EQ(r.code, 0) << "kubectl " << args << "\n" << r.out;
    return Json::parse(r.out, nullptr, false);
  }

  // Runs `kubectl apply <source>`; every printed line must say created/configured/unchanged.
  static Output ApplySource(const std::string& source, const std::string& label) {
    Output r = Kubectl("apply " + source);
    EXPECT_EQ(r.code, 0) << label << ":\n" << r.out;
    std::stringstream in(r.out);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      EXPECT_EQ(line.rfind("Warning: ", 0), std::string::npos) << label << ": " << line;
      ++lines;
      bool ok = line.find(" created") != std::string::npos ||
                line.find(" configured") != std::string::npos ||
                line.find(" unchanged") != std::string::npos;
      EXPECT_TRUE(ok) << label << ": " << line;
    }
    EXPECT_GT(lines, 0) << label;
    return r;
  }

  // An object the server must refuse.
  struct Rejected {
    const char* what;
    const char* yaml;
    std::vector<const char*> errors;  // each in kubectl's output
  };
  // `kubectl apply` of the case's YAML fails, and its output names each of the case's errors.
  static void ExpectRejected(const Rejected& c) {
    Output r = Kubectl("apply -f " + Quote(WriteTemp(c.yaml)));
    EXPECT_NE(r.code, 0) << c.what << ": accepted\n" << r.out;
    for (const char* e : c.errors) {
      EXPECT_NE(r.out.find(e), std::string::npos) << c.what << ": no \"" << e << "\" in\n" << r.out;
    }
  }
  static std::string WriteTemp(const std::string& yaml) {
    static int seq = 0;
    std::string file = *dir_ + "/apply-" + std::to_string(++seq) + ".yaml";
    std::ofstream(file) << yaml;
    return file;
  }

  // kubectl apply of `yaml` written to a file.
  static Output Apply(const std::string& yaml, const std::string& label) {
    return ApplySource("-f " + Quote(WriteTemp(yaml)), label);
  }

  // What `source` (-f file / -k dir) sets, as kubectl sends it (kubectl's own YAML → JSON, so
  // 0400 is 256 as the server sees it), against what the server keeps: every field the manifest
  // sets is read back unchanged. Returns how many objects were compared.
  static int ExpectStoredAsApplied(const std::string& source, const std::string& label) {
    Output local = Kubectl("create --dry-run=client -o json " + source, false);
    EXPECT_EQ(local.code, 0) << label;
    Output live = Kubectl("get -o json " + source, false);
    EXPECT_EQ(live.code, 0) << label;
    std::vector<Json> want = Items(local.out), got = Items(live.out);
    EXPECT_GT(want.size(), 0u) << label << ":\n" << local.out;
    EXPECT_EQ(want.size(), got.size()) << label;
    int n = 0;
    for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
      EXPECT_EQ(Id(want[i]), Id(got[i])) << label;
      std::vector<std::string> diffs;
      CompareSubset(want[i], got[i], "", &diffs);
      for (const auto& d : diffs) ADD_FAILURE() << label << ": " << Id(want[i]) << " " << d;
      ++n;
    }
    return n;
  }

  static std::string DeployDir() { return std::string(PYLON_SOURCE_DIR) + "/deploy"; }

  // What an operator runs (docs/install.md): `kubectl apply -k deploy`. Once per suite; the
  // output of that first apply is kept for the tests that look at it.
  static const std::string& ApplyInstall() {
    if (install_out_ == nullptr) {
      install_out_ =
          new std::string(ApplySource("-k " + Quote(DeployDir()), "apply -k deploy").out);
      Output w = Kubectl("wait --for=condition=Established --timeout=60s crd --all");
      EXPECT_EQ(w.code, 0) << w.out;
    }
    return *install_out_;
  }

  static void ApplyExamples() {
    ApplyInstall();
    if (examples_applied_) return;
    examples_applied_ = true;
    for (const auto& e : fs::directory_iterator(DeployDir() + "/examples")) {
      if (e.path().extension() == ".yaml") ApplySource("-f " + Quote(e.path()), e.path());
    }
  }

  // "Deployment" + "apps/v1" → "deployment.apps"; core kinds have no group suffix.
  static std::string Resource(const Doc& d) {
    std::string kind;
    for (char c : d.kind) kind += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::size_t slash = d.api_version.find('/');
    return slash == std::string::npos ? kind : kind + "." + d.api_version.substr(0, slash);
  }

  static std::string NsFlag(const Doc& d) { return d.ns.empty() ? "" : " -n " + Quote(d.ns); }

  static inline test_support::TestControlPlane* suite_ = nullptr;
  static inline const std::string* dir_ = nullptr;
  static inline std::string* rendered_ = nullptr;
  static inline std::string* install_out_ = nullptr;
  static inline bool examples_applied_ = false;
  static inline lab::ControlPlane* cp_ = nullptr;
};

TEST_F(DeployTest, KustomizeRendersEveryComponentInTheInstallNamespace) {
  std::multiset<std::string> kinds;
  for (const Doc& d : SplitDocs(*rendered_)) {
    kinds.insert(d.kind);
    if (d.kind == "Namespace") {
      EXPECT_EQ(d.name, "purelb-system");
    } else if (d.kind != "CustomResourceDefinition" && d.kind != "ClusterRole" &&
               d.kind != "ClusterRoleBinding") {
      EXPECT_EQ(d.ns, "purelb-system") << d.kind << "/" << d.name;
    }
  }
  const std::map<std::string, std::size_t> want = {
      {"Namespace", 1},          {"CustomResourceDefinition", 7},
      {"ServiceAccount", 2},     {"ClusterRole", 2},
      {"ClusterRoleBinding", 2}, {"Role", 2},
      {"RoleBinding", 2},        {"Deployment", 1},
      {"DaemonSet", 1}};
  for (const auto& [kind, n] : want) EXPECT_EQ(kinds.count(kind), n) << kind;
  // No custom resource: kubectl maps every object before it creates anything, so one whose CRD
  // comes in the same apply would fail it (examples/ has the LBNodeAgent).
  EXPECT_EQ(kinds.size(), 20u);
  EXPECT_NE(rendered_->find("image: pylon:0.1.0"), std::string::npos);
}

// The BGP component (docs/bgp.md "Install") on top of the base: BIRD as a native sidecar with only
// its three capabilities, the agent's flags and shared socket directory, the extra RBAC; and it
// applies.
TEST_F(DeployTest, BgpComponentAddsTheBirdSidecarAndItsRbac) {
  const std::string overlay = *dir_ + "/bgp-overlay";
  fs::create_directories(overlay);
  {
    std::ofstream k(overlay + "/kustomization.yaml");
    // kustomize takes relative paths only.
    const std::string rel = fs::relative(DeployDir(), overlay).string();
    k << "resources: [" << rel << "]\ncomponents: [" << rel << "/components/bgp]\n";
  }
  // Server-side dry run on top of the installed base: strict validation, nothing persisted.
  ApplyInstall();
  Output k = Kubectl("apply --dry-run=server -o json -k " + Quote(overlay));
  ASSERT_EQ(k.code, 0) << k.out;
  Json list = Json::parse(k.out, nullptr, false);
  ASSERT_TRUE(list.is_object()) << k.out;
  Json ds;
  std::multiset<std::string> kinds;
  for (const Json& item : list.value("items", Json::array())) {
    kinds.insert(item.value("kind", ""));
    if (item.value("kind", "") == "DaemonSet") ds = item;
  }
  EXPECT_EQ(kinds.count("ClusterRole"), 3u);
  EXPECT_EQ(kinds.count("Role"), 3u);
  ASSERT_TRUE(ds.is_object());
  const Json& pod = ds["spec"]["template"]["spec"];
  // After the base's prepare-node step (it exits; BIRD then runs alongside the agent).
  ASSERT_EQ(pod["initContainers"].size(), 2u);
  EXPECT_EQ(pod["initContainers"][0]["name"], "prepare-node");
  const Json& bird = pod["initContainers"][1];
  EXPECT_EQ(bird["name"], "bird");
  EXPECT_EQ(bird["restartPolicy"], "Always");  // a native sidecar: stopped after the agent
  EXPECT_EQ(bird["image"], "pylon-bird:0.1.0");
  EXPECT_EQ(bird["securityContext"]["capabilities"]["drop"], Json::array({"ALL"}));
  EXPECT_EQ(bird["securityContext"]["capabilities"]["add"],
            Json::array({"NET_ADMIN", "NET_BIND_SERVICE", "NET_RAW"}));
  EXPECT_EQ(bird["securityContext"]["allowPrivilegeEscalation"], false);
  const std::string agent = pod["containers"][0].dump();
  EXPECT_NE(agent.find("--bird-socket=/run/pylon-bird/bird.ctl"), std::string::npos) << agent;
  EXPECT_NE(agent.find("/run/pylon-bird"), std::string::npos);
  EXPECT_NE(agent.find("heartbeat-key"), std::string::npos) << "base mounts kept";
}

// Strict ARP (docs/agent.md "Node sysctls"): /proc/sys is read-only in a non-privileged container
// even with hostNetwork, so one privileged init container of the same image runs
// `pylon prepare-node` before the agent; the agent's own container stays non-privileged with its
// two capabilities.
TEST_F(DeployTest, AgentPreparesTheNodeInAPrivilegedInitContainer) {
  Output r = Kubectl("create --dry-run=client -o json -k " + Quote(DeployDir()), false);
  ASSERT_EQ(r.code, 0) << r.out;
  Json ds;
  for (const Json& item : Items(r.out)) {
    if (item.value("kind", "") == "DaemonSet") ds = item;
  }
  ASSERT_TRUE(ds.is_object()) << r.out;
  const Json& pod = ds["spec"]["template"]["spec"];
  EXPECT_EQ(pod["hostNetwork"], true);
  ASSERT_EQ(pod["initContainers"].size(), 1u);
  const Json& prep = pod["initContainers"][0];
  EXPECT_EQ(prep["name"], "prepare-node");
  EXPECT_EQ(prep["image"], "pylon:0.1.0");
  EXPECT_EQ(prep["args"], Json::array({"prepare-node"}));
  EXPECT_FALSE(prep.contains("restartPolicy")) << "a step that exits, not a sidecar";
  EXPECT_EQ(prep["securityContext"]["privileged"], true);
  EXPECT_EQ(prep["securityContext"]["runAsUser"], 0);
  ASSERT_EQ(pod["containers"].size(), 1u);
  const Json& agent = pod["containers"][0];
  EXPECT_EQ(agent["image"], prep["image"]);
  EXPECT_EQ(agent["securityContext"]["privileged"], false);
  EXPECT_EQ(agent["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(agent["securityContext"]["capabilities"]["add"], Json::array({"NET_ADMIN", "NET_RAW"}));
}

TEST_F(DeployTest, ApplyKCreatesEveryObjectOfTheInstall) {
  const std::string& out = ApplyInstall();
  int checked = 0;
  for (const Doc& d : SplitDocs(*rendered_)) {
    const std::string prefix = Resource(d) + "/" + d.name + " ";
    EXPECT_NE(out.find(prefix + "created"), std::string::npos) << prefix << "not created:\n" << out;
    // Stored where it belongs (namespaced or cluster-scoped) under the name it was given.
    Output get = Kubectl("get " + Resource(d) + " " + Quote(d.name) + NsFlag(d) + " -o name");
    EXPECT_EQ(get.code, 0) << get.out;
    EXPECT_EQ(get.out, Resource(d) + "/" + d.name + "\n");
    ++checked;
  }
  EXPECT_EQ(checked, 20);
  // The CRDs' schemas are structural: the server accepted them and says so.
  for (const char* crd :
       {"servicegroups.purelb.io", "lbnodeagents.purelb.io", "loadbalancerclasses.lace-cni.io",
        "l2advertisements.lace-cni.io", "bgppeers.lace-cni.io", "bfdprofiles.lace-cni.io",
        "bgpadvertisements.lace-cni.io"}) {
    Json c = KubectlJson(std::string("get crd ") + crd);
    std::map<std::string, std::string> conds;
    for (const Json& x : c["status"].value("conditions", Json::array())) {
      conds[x.value("type", "")] = x.value("status", "") + " " + x.value("message", "");
    }
    EXPECT_EQ(conds["Established"].rfind("True", 0), 0u) << crd << ": " << c["status"].dump();
    EXPECT_EQ(conds["NamesAccepted"].rfind("True", 0), 0u) << crd << ": " << c["status"].dump();
    EXPECT_EQ(conds.count("NonStructuralSchema"), 0u)
        << crd << ": " << conds["NonStructuralSchema"];
  }
  // Applying it again changes nothing.
  Output again = ApplySource("-k " + Quote(DeployDir()), "apply -k deploy again");
  std::stringstream in(again.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    EXPECT_NE(line.find(" unchanged"), std::string::npos) << line;
  }
}

TEST_F(DeployTest, TheInstallIsStoredAsWritten) {
  ApplyInstall();
  EXPECT_EQ(ExpectStoredAsApplied("-k " + Quote(DeployDir()), "deploy"), 20);
}

TEST_F(DeployTest, KubectlGetShowsTheWorkloads) {
  ApplyInstall();
  // The check of docs/install.md, as documented.
  Output r = Kubectl("-n purelb-system get deploy,ds,lease");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("deployment.apps/allocator"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0/2"), std::string::npos) << "no controller runs it: 0 of 2 ready\n"
                                                  << r.out;
  EXPECT_NE(r.out.find("daemonset.apps/agent"), std::string::npos) << r.out;
  Output ds = Kubectl("-n purelb-system get ds agent -o wide");
  EXPECT_EQ(ds.code, 0) << ds.out;
  for (const char* s : {"NODE SELECTOR", "CONTAINERS", "IMAGES", "pylon:0.1.0",
                        "app.kubernetes.io/component=agent,app.kubernetes.io/name=pylon"}) {
    EXPECT_NE(ds.out.find(s), std::string::npos) << s << "\n" << ds.out;
  }
  Output rb = Kubectl("-n purelb-system get rolebindings -o wide");
  EXPECT_NE(rb.out.find("Role/pylon:allocator"), std::string::npos) << rb.out;
  EXPECT_NE(rb.out.find("purelb-system/agent"), std::string::npos) << rb.out;
  Output crb = Kubectl("get clusterrolebinding pylon:agent");
  EXPECT_NE(crb.out.find("ClusterRole/pylon:agent"), std::string::npos) << crb.out;
  Output sa = Kubectl("-n purelb-system get serviceaccounts -o name");
  EXPECT_NE(sa.out.find("serviceaccount/agent\n"), std::string::npos) << sa.out;
  EXPECT_NE(sa.out.find("serviceaccount/allocator\n"), std::string::npos) << sa.out;
  // What the server defaulted.
  Output d = Kubectl(
      "-n purelb-system get deploy allocator -o jsonpath="
      "'{.metadata.generation} {.spec.strategy.type} "
      "{.spec.template.spec.containers[0].imagePullPolicy}'");
  EXPECT_EQ(d.out, "1 RollingUpdate IfNotPresent") << d.out;
  // The ServiceAccounts authenticate, and RBAC gives them what deploy/ says (a sample).
  for (const auto& [who, verb, what, ns, want] :
       std::vector<std::tuple<const char*, const char*, const char*, const char*, const char*>>{
           {"allocator", "update", "services --subresource=status", "default", "yes"},
           {"allocator", "update", "services", "default", "no"},
           {"allocator", "update", "leases.coordination.k8s.io", "purelb-system", "yes"},
           {"allocator", "update", "leases.coordination.k8s.io", "default", "no"},
           {"allocator", "watch", "leases.coordination.k8s.io", "purelb-system", "yes"},
           {"allocator", "watch", "leases.coordination.k8s.io", "default", "no"},
           {"agent", "create", "l2advertisements.lace-cni.io", "", "yes"},
           {"agent", "update", "services --subresource=status", "default", "no"},
           {"agent", "delete", "leases.coordination.k8s.io", "purelb-system", "yes"},
       }) {
    Output can = Kubectl(std::string("auth can-i ") + verb + " " + what +
                         (*ns != 0 ? std::string(" -n ") + ns : std::string()) +
                         " --as=system:serviceaccount:purelb-system:" + who);
    // The answer is the last line (kubectl warns first when a namespace is given for a
    // cluster-scoped resource: the kubeconfig's default namespace).
    std::string answer = can.out.substr(0, can.out.size() - 1);
    answer = answer.substr(answer.rfind('\n') + 1);
    EXPECT_EQ(answer, want) << who << " " << verb << " " << what << " " << ns << ": " << can.out;
  }
}

TEST_F(DeployTest, ChangedInstallReappliesAsAStrategicMerge) {
  ApplyInstall();
  // An operator's edits: 3 allocator replicas and debug logging on the agents.
  std::string changed = *rendered_;
  auto replace = [&](const std::string& from, const std::string& to) {
    std::size_t p = changed.find(from);
    ASSERT_NE(p, std::string::npos) << from;
    changed.replace(p, from.size(), to);
  };
  replace("replicas: 2", "replicas: 3");
  std::size_t agent = changed.find("- agent\n");
  ASSERT_NE(agent, std::string::npos);
  std::size_t level = changed.find("--log-level=info", agent);
  ASSERT_NE(level, std::string::npos);
  changed.replace(level, 16, "--log-level=debug");
  const std::string get_ds =
      "-n purelb-system get ds agent -o jsonpath="
      "'{.metadata.annotations.deprecated\\.daemonset\\.template\\.generation}'";
  const std::string before = Kubectl(get_ds).out;
  Output r = Apply(changed, "changed install");
  EXPECT_NE(r.out.find("deployment.apps/allocator configured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("daemonset.apps/agent configured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("clusterrole.rbac.authorization.k8s.io/pylon:agent unchanged"),
            std::string::npos)
      << r.out;
  EXPECT_NE(Kubectl("-n purelb-system get deploy allocator").out.find("0/3"), std::string::npos);
  // The merge kept every env entry, mount and volume of the container, in manifest order.
  Output c = Kubectl(
      "-n purelb-system get ds agent -o jsonpath="
      "'{.spec.template.spec.containers[0].args[4]}|"
      "{.spec.template.spec.containers[0].env[*].name}|"
      "{.spec.template.spec.containers[0].volumeMounts[*].name}|"
      "{.spec.template.spec.volumes[*].name}'");
  EXPECT_EQ(
      c.out,
      "--log-level=debug|NODE_NAME POD_NAMESPACE PURELB_POD_UID POD_NAME PURELB_LEASE_DURATION "
      "PURELB_RENEW_DEADLINE PURELB_RETRY_PERIOD PYLON_HEARTBEAT_KEY_FILE "
      "PYLON_HEARTBEAT_KEY_SECRET|run heartbeat-key|"
      "run heartbeat-key");
  // A template change is a new template generation.
  const std::string after = Kubectl(get_ds).out;
  EXPECT_EQ(std::atoi(after.c_str()), std::atoi(before.c_str()) + 1) << before << " " << after;
  // Back to the shipped install.
  Output back = ApplySource("-k " + Quote(DeployDir()), "apply -k deploy (restore)");
  EXPECT_NE(back.out.find("deployment.apps/allocator configured"), std::string::npos) << back.out;
}

TEST_F(DeployTest, DocumentedHeartbeatSecretSwitchesTheAgentKeyOn) {
  ApplyInstall();
  // The DaemonSet mounts the Secret and takes the key file path from it, both optional.
  Output v = Kubectl(
      "-n purelb-system get ds agent -o jsonpath="
      "'{.spec.template.spec.volumes[?(@.name==\"heartbeat-key\")].secret}|"
      "{.spec.template.spec.containers[0].volumeMounts[?(@.name==\"heartbeat-key\")].mountPath}|"
      "{.spec.template.spec.containers[0].env[?(@.name==\"PYLON_HEARTBEAT_KEY_FILE\")]"
      ".valueFrom.secretKeyRef}'");
  EXPECT_EQ(v.out, R"({"defaultMode":256,"optional":true,"secretName":"pylon-heartbeat-key"}|)"
                   R"(/etc/pylon/heartbeat|)"
                   R"({"key":"key-file","name":"pylon-heartbeat-key","optional":true})")
      << v.out;

  // Run the ```sh block of docs/install.md that creates the Secret, as written, with the
  // server's kubectl first on PATH.
  std::string md = ReadFile(std::string(PYLON_SOURCE_DIR) + "/docs/install.md");
  std::size_t at = md.find("create secret generic pylon-heartbeat-key");
  ASSERT_NE(at, std::string::npos);
  std::size_t open = md.rfind("```sh\n", at);
  std::size_t close = md.find("```", at);
  ASSERT_TRUE(open != std::string::npos && close != std::string::npos);
  const std::string snippet = md.substr(open + 6, close - open - 6);
  const std::string get_gen =
      "-n purelb-system get ds agent -o jsonpath="
      "'{.metadata.annotations.deprecated\\.daemonset\\.template\\.generation}'";
  const int before = std::atoi(Kubectl(get_gen).out.c_str());
  const std::string bin = fs::path(cp_->KubectlBinary()).parent_path().string();
  Output run =
      Shell("PATH=" + Quote(bin) + ":\"$PATH\" KUBECONFIG=" + Quote(cp_->AdminKubeconfig()) +
            " KUBECACHEDIR=" + Quote(*dir_ + "/cache") + " sh -ec " + Quote(snippet));
  ASSERT_EQ(run.code, 0) << snippet << "\n" << run.out;
  EXPECT_NE(run.out.find("secret/pylon-heartbeat-key created"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("daemonset.apps/agent restarted"), std::string::npos) << run.out;
  // The restart is a template change (kubectl.kubernetes.io/restartedAt).
  EXPECT_EQ(std::atoi(Kubectl(get_gen).out.c_str()), before + 1);

  // The Secret names the file the mount provides, and holds a key the agent accepts (16+ bytes).
  Output data = Kubectl(
      "-n purelb-system get secret pylon-heartbeat-key -o jsonpath='{.data.key-file} {.data.key}'");
  std::string file_b64 = data.out.substr(0, data.out.find(' '));
  std::string key_b64 = data.out.substr(data.out.find(' ') + 1);
  Output file = Shell("printf %s " + Quote(file_b64) + " | base64 -d");
  EXPECT_EQ(file.out, "/etc/pylon/heartbeat/key");
  Output key = Shell("printf %s " + Quote(key_b64) + " | base64 -d | wc -c");
  EXPECT_GE(std::atoi(key.out.c_str()), 16) << key.out;
  Output type = Kubectl("-n purelb-system get secret pylon-heartbeat-key");
  EXPECT_NE(type.out.find("pylon-heartbeat-key   Opaque   2"), std::string::npos) << type.out;
}

TEST_F(DeployTest, EveryExampleAppliesAndIsStoredAsWritten) {
  ApplyExamples();
  int n = 0;
  for (const auto& e : fs::directory_iterator(DeployDir() + "/examples")) {
    if (e.path().extension() != ".yaml") continue;
    n += ExpectStoredAsApplied("-f " + Quote(e.path()), e.path().filename());
  }
  EXPECT_GE(n, 7);
  Output sg = Kubectl("get servicegroups -n purelb-system -o name");
  for (const char* name : {"default", "localdual", "virtual"}) {
    EXPECT_NE(sg.out.find(std::string("servicegroup.purelb.io/") + name), std::string::npos)
        << sg.out;
  }
  Output lna = Kubectl("get lbnodeagents -n purelb-system -o name");
  EXPECT_EQ(lna.out, "lbnodeagent.purelb.io/default\n");
  // The dual-stack example got a ClusterIP of each family (the server has both ranges).
  Output dual = Kubectl(
      "get service -n default kuard-svc-dual-remote -o jsonpath='{.spec.ipFamilies} "
      "{.spec.clusterIPs}'");
  EXPECT_NE(dual.out.find(R"(["IPv4","IPv6"])"), std::string::npos) << dual.out;
  // The check itself sees a dropped field: status is a subresource, so a create drops it.
  const std::string with_status = WriteTemp(
      "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
      "metadata: {name: with-status, namespace: purelb-system}\n"
      "spec: {local: {v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.96/28}]}}\n"
      "status: {valid: true}\n");
  ApplySource("-f " + Quote(with_status), "ServiceGroup with a status");
  EXPECT_NONFATAL_FAILURE(ExpectStoredAsApplied("-f " + Quote(with_status), "self-check"),
                          ".status: missing on the server (pruned?)");
  EXPECT_EQ(Kubectl("delete -f " + Quote(with_status)).code, 0);
  // The schema's default: a LoadBalancerClass without a mode is l2.
  Apply(
      "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata: {name: nomode}\n"
      "spec: {ipv4Pools: [{cidr: 192.0.2.64/28}]}\n",
      "class without mode");
  EXPECT_EQ(Kubectl("get lbc nomode -o jsonpath={.spec.mode}").out, "l2");
  EXPECT_EQ(Kubectl("delete lbc nomode").code, 0);
}

// kubectl get shows the CRDs' printer columns, the allocator's status in them, and the status
// it writes comes back whole (a status field missing from the schema would be dropped).
TEST_F(DeployTest, PrinterColumnsShowTheStatusTheAllocatorWrites) {
  ApplyExamples();
  const Json status = R"({
    "observedGeneration": 1, "valid": true, "message": "",
    "warnings": ["pool 192.0.2.240-192.0.2.250: a warning"],
    "ipv4": {"size": "11", "inUse": "1"},
    "ipv6": {"size": "65536", "inUse": "0"},
    "conflicts": [{"address": "192.0.2.241", "mac": "02:6e:1f:00:00:02", "node": "node2",
                   "interface": "eth0", "service": "default/web",
                   "since": "2025-03-01T10:00:00Z", "until": "2025-03-01T10:05:00Z",
                   "action": "Reallocated"}],
    "conflictCount": 1,
    "conditions": [{"type": "Valid", "status": "True", "reason": "Valid", "message": "",
                    "lastTransitionTime": "2025-03-01T10:00:00Z", "observedGeneration": 1}]
  })"_json;
  const Json body = Json{{"status", status}};
  // A ServiceGroup's also shows the addresses probed ahead and the ones found taken that way.
  Json group_status = status;
  group_status["probeAhead"] = R"({"ipv4": ["192.0.2.242", "192.0.2.243"], "ipv6": []})"_json;
  group_status["conflicts"].push_back(R"({"address": "192.0.2.244", "mac": "02:6e:1f:00:00:03",
      "node": "node1", "interface": "", "service": "", "since": "2025-03-01T10:00:00Z",
      "until": "2025-03-01T10:05:00Z", "action": "Skipped"})"_json);
  group_status["conflictCount"] = 2;
  // PUT on /status as the allocator does it, as the allocator (its RBAC allows it).
  for (const auto& [what, name] : std::vector<std::pair<std::string, std::string>>{
           {"servicegroup -n purelb-system", "default"}, {"loadbalancerclass", "public"}}) {
    Json obj = KubectlJson("get " + what + " " + name);
    ASSERT_TRUE(obj.is_object());
    const Json& want = what == "loadbalancerclass" ? body["status"] : group_status;
    obj["status"] = want;
    const std::string file = WriteTemp(obj.dump());
    Output r = Kubectl("replace --subresource=status -f " + Quote(file) +
                       " --as=system:serviceaccount:purelb-system:allocator");
    ASSERT_EQ(r.code, 0) << what << ": " << r.out;
    EXPECT_EQ(r.out.find("Warning"), std::string::npos) << r.out;
    Json back = KubectlJson("get " + what + " " + name);
    std::vector<std::string> diffs;
    CompareSubset(want, back.value("status", Json()), ".status", &diffs);
    for (const auto& d : diffs) ADD_FAILURE() << what << " " << name << " " << d;
  }
  // v1 shows Pylon's columns; v2 (kubectl's preferred version) shows PureLB 0.17's by default.
  Output sg = Kubectl("get servicegroups.v1.purelb.io -n purelb-system default");
  EXPECT_EQ(sg.code, 0) << sg.out;
  for (const char* s : {"VALID", "IPV4 SIZE", "IPV4 IN USE", "IPV6 SIZE", "IPV6 IN USE", "AGE",
                        "true", "11", "65536"}) {
    EXPECT_NE(sg.out.find(s), std::string::npos) << s << "\n" << sg.out;
  }
  Output lbc = Kubectl("get loadbalancerclasses public");
  for (const char* s : {"MODE", "VALID", "IPV4 SIZE", "l2", "true", "11"}) {
    EXPECT_NE(lbc.out.find(s), std::string::npos) << s << "\n" << lbc.out;
  }
  // LBNodeAgent: each version shows its own field names (kubectl prefers v2).
  Output lna = Kubectl("get lbnodeagents.v1.purelb.io -n purelb-system");
  for (const char* s : {"LOCAL INT", "EXTLB INT", "SEND GARP", "default", "kube-lb0", "true"}) {
    EXPECT_NE(lna.out.find(s), std::string::npos) << s << "\n" << lna.out;
  }
  Output lna2 = Kubectl("get lbnodeagents -n purelb-system");
  for (const char* s : {"LOCAL INTERFACE", "DUMMY INTERFACE", "GARP", "default"}) {
    EXPECT_NE(lna2.out.find(s), std::string::npos) << s << "\n" << lna2.out;
  }
  EXPECT_EQ(lna2.out.find("EXTLB INT"), std::string::npos) << lna2.out;
  // An L2Advertisement as the agent writes it (the agent's RBAC allows it); Class is -o wide.
  Apply(
      "apiVersion: lace-cni.io/v1alpha1\nkind: L2Advertisement\n"
      "metadata: {name: ipv4-198-51-100-7}\n"
      "spec: {address: 198.51.100.7, service: {namespace: default, name: web},\n"
      "       loadBalancerClass: lace-cni.io/public, node: node1, interface: eth0}\n",
      "L2Advertisement");
  Output l2 = Kubectl("get l2adv");
  for (const char* s :
       {"ADDRESS", "SERVICE", "NODE", "INTERFACE", "198.51.100.7", "web", "node1", "eth0"}) {
    EXPECT_NE(l2.out.find(s), std::string::npos) << s << "\n" << l2.out;
  }
  EXPECT_EQ(l2.out.find("CLASS"), std::string::npos) << l2.out;
  Output wide = Kubectl("get l2adv -o wide");
  EXPECT_NE(wide.out.find("CLASS"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("lace-cni.io/public"), std::string::npos) << wide.out;
  EXPECT_EQ(Kubectl("delete l2adv ipv4-198-51-100-7").code, 0);
}

TEST_F(DeployTest, EveryYamlBlockInTheDocsApplies) {
  ApplyInstall();
  int applied = 0;
  for (const auto& e : fs::directory_iterator(std::string(PYLON_SOURCE_DIR) + "/docs")) {
    if (e.path().extension() != ".md") continue;
    for (const Block& b : YamlBlocks(ReadFile(e.path()))) {
      const std::string where = e.path().filename().string() + ":" + std::to_string(b.line);
      if (b.fragment) continue;
      ASSERT_FALSE(SplitDocs(b.text).empty())
          << where << ": no kind (mark partial blocks ```yaml fragment)";
      Apply(b.text, where);
      ++applied;
    }
  }
  EXPECT_GE(applied, 3) << "docs/install.md and docs/configure.md show applicable objects";
}

TEST_F(DeployTest, CrdSchemasRejectWhatTheyCan) {
  ApplyInstall();
  const Rejected cases[] = {
      {"mode outside the enum",
       "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata: {name: bad-mode}\n"
       "spec: {mode: bgp, ipv4Pools: [{cidr: 192.0.2.0/24}]}\n",
       {"spec.mode", "Unsupported value: \"bgp\"", "\"l2\"", "\"l3\""}},
      {"empty pool entry",
       "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata: {name: bad-pool}\n"
       "spec: {ipv4Pools: [{}]}\n",
       {"spec.ipv4Pools[0]", "at least 1 properties"}},
      {"misspelt field (strict validation)",
       "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata: {name: typo}\n"
       "spec: {ipv4pools: [{cidr: 192.0.2.0/24}]}\n",
       {"unknown field \"spec.ipv4pools\""}},
      {"ServiceGroup without spec.local",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: no-local, namespace: purelb-system}\nspec: {}\n",
       {"spec.local", "Required value"}},
      {"pool without subnet",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: no-subnet, namespace: purelb-system}\n"
       "spec: {local: {v4pools: [{pool: 192.0.2.0/24}]}}\n",
       {"spec.local.v4pools[0].subnet", "Required value"}},
      {"aggregation neither default nor /N",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: bad-agg, namespace: purelb-system}\n"
       "spec: {local: {v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.0/24, aggregation: "
       "\"24\"}]}}\n",
       {"spec.local.v4pools[0].aggregation", "should match"}},
      {"PureLB's netbox group",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: netbox, namespace: purelb-system}\n"
       "spec: {netbox: {url: http://netbox, tenant: t}}\n",
       {"unknown field \"spec.netbox\""}},
      {"virtual interface name over 15 characters",
       "apiVersion: purelb.io/v1\nkind: LBNodeAgent\n"
       "metadata: {name: long, namespace: purelb-system}\n"
       "spec: {local: {extlbint: a-very-long-interface-name}}\n",
       {"spec.local.extlbint", "15"}},
      {"L2Advertisement without a node",
       "apiVersion: lace-cni.io/v1alpha1\nkind: L2Advertisement\nmetadata: {name: ipv4-192-0-2-9}\n"
       "spec: {address: 192.0.2.9, service: {namespace: default, name: web}}\n",
       {"spec.node", "Required value"}},
  };
  for (const Rejected& c : cases) ExpectRejected(c);
  // A status value outside its enum: the status subresource validates too.
  ApplyExamples();
  Json obj = KubectlJson("get servicegroup -n purelb-system virtual");
  ASSERT_TRUE(obj.is_object());
  obj["status"] = R"({"conflicts": [{"address": "203.0.113.9", "action": "Ignored"}]})"_json;
  Output r = Kubectl("replace --subresource=status -f " + Quote(WriteTemp(obj.dump())));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("status.conflicts[0].action"), std::string::npos) << r.out;
}

// purelb.io/v1 and purelb.io/v2 are served together (conversion None, one superset schema,
// docs/purelb-v2.md): each version's manifests apply unchanged; an object written as either
// version reads back whole as the other, and survives a write through the other; spec.writtenAs
// keeps the version written; each version's own CEL rules and defaults apply to its writes.
TEST_F(DeployTest, PurelbV1AndV2ServedTogetherNothingLost) {
  ApplyInstall();
  for (const char* res : {"servicegroups.v1.purelb.io", "servicegroups.v2.purelb.io",
                          "lbnodeagents.v1.purelb.io", "lbnodeagents.v2.purelb.io"}) {
    Output r = Kubectl(std::string("get ") + res + " -A");
    EXPECT_EQ(r.code, 0) << res << ": " << r.out;
  }
  const std::string v1_sg =
      "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
      "metadata: {name: rt-v1, namespace: purelb-system}\n"
      "spec:\n  local:\n"
      "    v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.200-192.0.2.209, aggregation: "
      "default}]\n"
      "    v6pool: {subnet: 2001:db8:77::/64, pool: 2001:db8:77::/120, aggregation: /128}\n";
  const std::string v2_sg =
      "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
      "metadata: {name: rt-v2, namespace: purelb-system}\n"
      "spec:\n  remote:\n"
      "    v4pools: [{subnet: 203.0.113.0/24, pool: 203.0.113.200/29, aggregation: /32}]\n"
      "    multiPool: true\n"
      "  namespaces: [team-a, team-b]\n  enforceNamespaces: true\n";
  const std::string v1_lbna =
      "apiVersion: purelb.io/v1\nkind: LBNodeAgent\n"
      "metadata: {name: rt-v1, namespace: purelb-system}\n"
      "spec: {local: {localint: eth0, extlbint: kube-lb1, sendgarp: false, interfaces: [eth1]}}\n";
  const std::string v2_lbna =
      "apiVersion: purelb.io/v2\nkind: LBNodeAgent\n"
      "metadata: {name: rt-v2, namespace: purelb-system}\n"
      "spec:\n  nodeSelector: {matchLabels: {pool: edge}, matchExpressions: [{key: zone, "
      "operator: In, values: [a, b]}]}\n"
      "  local:\n    localInterface: '^enp'\n    dummyInterface: kube-lb0\n"
      "    interfaces: [eth2]\n    garpConfig: {count: 5, interval: 250ms}\n"
      "    addressConfig: {localInterface: {validLifetime: 600, noPrefixRoute: true}}\n";
  struct Obj {
    std::string yaml, resource, name, written;
  };
  const Obj objs[] = {{v1_sg, "servicegroups", "rt-v1", "v1"},
                      {v2_sg, "servicegroups", "rt-v2", "v2"},
                      {v1_lbna, "lbnodeagents", "rt-v1", "v1"},
                      {v2_lbna, "lbnodeagents", "rt-v2", "v2"}};
  for (const Obj& o : objs) {
    const std::string file = WriteTemp(o.yaml);
    ApplySource("-f " + Quote(file), o.resource + " " + o.name);
    // What the manifest sets is there, read as the version written.
    ExpectStoredAsApplied("-f " + Quote(file), o.resource + " " + o.name);
    const std::string get = "get -n purelb-system " + o.resource;
    Json as_v1 = KubectlJson(get + ".v1.purelb.io " + o.name);
    Json as_v2 = KubectlJson(get + ".v2.purelb.io " + o.name);
    ASSERT_TRUE(as_v1.is_object() && as_v2.is_object()) << o.name;
    EXPECT_EQ(as_v1.value("apiVersion", ""), "purelb.io/v1");
    EXPECT_EQ(as_v2.value("apiVersion", ""), "purelb.io/v2");
    // Nothing lost either way: the same spec through both versions, the version written kept.
    EXPECT_EQ(as_v1["spec"], as_v2["spec"]) << o.resource << " " << o.name;
    EXPECT_EQ(as_v2["spec"].value("writtenAs", ""), o.written) << o.name;
    // A write through the other version (a label) keeps the whole spec and writtenAs.
    const std::string other = o.written == "v1" ? "v2" : "v1";
    Json via = o.written == "v1" ? as_v2 : as_v1;
    via["metadata"]["labels"]["touched-via"] = other;
    via["metadata"].erase("managedFields");
    Output rep = Kubectl("replace -f " + Quote(WriteTemp(via.dump())));
    EXPECT_EQ(rep.code, 0) << o.name << " via " << other << ": " << rep.out;
    Json after = KubectlJson(get + "." + o.written + ".purelb.io " + o.name);
    EXPECT_EQ(after["spec"], as_v1["spec"]) << o.name << " after a write via " << other;
    EXPECT_EQ(after["metadata"]["labels"].value("touched-via", ""), other);
  }
  // The defaults are those of the version written (garpConfig's, when it is present).
  Json na2 = KubectlJson("get -n purelb-system lbnodeagents.v1.purelb.io rt-v2");
  EXPECT_EQ(na2["spec"]["local"]["garpConfig"],
            R"({"count": 5, "interval": "250ms", "enabled": true, "initialDelay": "100ms",
                "verifyBeforeSend": true})"_json);
  // The status subresource through v2, read back through v1.
  Json st = KubectlJson("get -n purelb-system servicegroups.v2.purelb.io rt-v2");
  st["status"] = R"({"valid": true, "ipv4": {"size": "8", "inUse": "1"}})"_json;
  Output sr = Kubectl("replace --subresource=status -f " + Quote(WriteTemp(st.dump())));
  EXPECT_EQ(sr.code, 0) << sr.out;
  Json st1 = KubectlJson("get -n purelb-system servicegroups.v1.purelb.io rt-v2");
  EXPECT_EQ(st1["status"]["ipv4"]["size"], "8") << st1.dump();
  // PureLB 0.17's columns in -o wide, from the v2 status.
  Json full = KubectlJson("get -n purelb-system servicegroups.v2.purelb.io rt-v2");
  full["status"] = R"({"valid": true, "announce": "Remote", "allocatedIPv4": "3",
                       "availableIPv4": "5"})"_json;
  ASSERT_EQ(Kubectl("replace --subresource=status -f " + Quote(WriteTemp(full.dump()))).code, 0);
  Output narrow = Kubectl("get -n purelb-system sg rt-v2");
  for (const char* col : {"ANNOUNCE", "IPAM", "ALLOCATED-V4", "ALLOCATED-V6", "VALID", "Remote"}) {
    EXPECT_NE(narrow.out.find(col), std::string::npos) << col << "\n" << narrow.out;
  }
  EXPECT_EQ(narrow.out.find("AVAILABLE-V4"), std::string::npos) << narrow.out;
  Output wide = Kubectl("get -n purelb-system sg rt-v2 -o wide");
  for (const char* col : {"ANNOUNCE", "ALLOCATED-V4", "AVAILABLE-V4", "NAMESPACES", "ENFORCED",
                          "BOUND", "IPV4 SIZE", "Remote", "team-a"}) {
    EXPECT_NE(wide.out.find(col), std::string::npos) << col << "\n" << wide.out;
  }
  // Both versions list every object.
  for (const char* v : {"v1", "v2"}) {
    Output names =
        Kubectl(std::string("get -n purelb-system -o name servicegroups.") + v + ".purelb.io");
    EXPECT_NE(names.out.find("servicegroup.purelb.io/rt-v1"), std::string::npos) << names.out;
    EXPECT_NE(names.out.find("servicegroup.purelb.io/rt-v2"), std::string::npos) << names.out;
  }
  for (const char* n : {"rt-v1", "rt-v2"}) {
    EXPECT_EQ(Kubectl(std::string("delete -n purelb-system servicegroup ") + n).code, 0);
    EXPECT_EQ(Kubectl(std::string("delete -n purelb-system lbnodeagent ") + n).code, 0);
  }
}

// Each version's own rules, on the real server.
TEST_F(DeployTest, PurelbV2CelRulesAndV1Boundaries) {
  ApplyInstall();
  const Rejected cases[] = {
      {"v2: local and remote",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: both, namespace: purelb-system}\n"
       "spec: {local: {v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.1/32}]},\n"
       "       remote: {v4pools: [{subnet: 203.0.113.0/24, pool: 203.0.113.1/32}]}}\n",
       {"exactly one of local, remote, or external must be specified"}},
      {"v2: none of them",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: none, namespace: purelb-system}\nspec: {namespaces: [a]}\n",
       {"exactly one of local, remote, or external must be specified"}},
      {"v2: enforceNamespaces without namespaces",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: enf, namespace: purelb-system}\n"
       "spec: {enforceNamespaces: true, local: {v4pools: [{subnet: 192.0.2.0/24, pool: "
       "192.0.2.1/32}]}}\n",
       {"enforceNamespaces requires a non-empty namespaces list"}},
      {"v2: namespaceDefault with an empty list",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: nsd, namespace: purelb-system}\n"
       "spec: {namespaces: [], namespaceDefault: true, local: {v4pools: [{subnet: 192.0.2.0/24, "
       "pool: 192.0.2.1/32}]}}\n",
       {"namespaceDefault requires a non-empty namespaces list"}},
      {"v2: aggregation without the slash",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: agg, namespace: purelb-system}\n"
       "spec: {remote: {v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.1/32, aggregation: "
       "\"32\"}]}}\n",
       {"spec.remote.v4pools[0].aggregation", "should match"}},
      {"v2: the v1 flat form",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: flat, namespace: purelb-system}\n"
       "spec: {local: {subnet: 192.0.2.0/24, pool: 192.0.2.1/32}}\n",
       {"purelb.io/v1 single-pool form"}},
      {"v2: external without announce",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: ext, namespace: purelb-system}\n"
       "spec: {external: {provider: netbox}}\n",
       {"spec.external.announce", "Required value"}},
      {"v2: a namespace that is no DNS label",
       "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
       "metadata: {name: badns, namespace: purelb-system}\n"
       "spec: {namespaces: [Team_A], local: {v4pools: [{subnet: 192.0.2.0/24, pool: "
       "192.0.2.1/32}]}}\n",
       {"spec.namespaces[0]", "should match"}},
      {"v1: remote is a v2 field",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: v1remote, namespace: purelb-system}\n"
       "spec: {remote: {v4pools: [{subnet: 203.0.113.0/24, pool: 203.0.113.1/32}]}}\n",
       {"spec.local", "Required value", "are purelb.io/v2 fields"}},
      {"v1: namespaces is a v2 field",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: v1ns, namespace: purelb-system}\n"
       "spec: {namespaces: [a], local: {v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.1/32}]}}\n",
       {"are purelb.io/v2 fields: write the object as apiVersion purelb.io/v2"}},
      {"v2 LBNodeAgent: a v1 field name",
       "apiVersion: purelb.io/v2\nkind: LBNodeAgent\n"
       "metadata: {name: v2old, namespace: purelb-system}\n"
       "spec: {local: {localint: eth0}}\n",
       {"localint, extlbint and sendgarp are purelb.io/v1 fields"}},
      {"v1 LBNodeAgent: a v2 field name",
       "apiVersion: purelb.io/v1\nkind: LBNodeAgent\n"
       "metadata: {name: v1new, namespace: purelb-system}\n"
       "spec: {local: {garpConfig: {enabled: true}}}\n",
       {"are purelb.io/v2 fields"}},
      {"v2 LBNodeAgent: garp count over 10",
       "apiVersion: purelb.io/v2\nkind: LBNodeAgent\n"
       "metadata: {name: garp, namespace: purelb-system}\n"
       "spec: {local: {garpConfig: {count: 11}}}\n",
       {"spec.local.garpConfig.count", "less than or equal to 10"}},
      {"v2 LBNodeAgent: no spec",
       "apiVersion: purelb.io/v2\nkind: LBNodeAgent\n"
       "metadata: {name: nospec, namespace: purelb-system}\n",
       {"spec", "Required value"}},
  };
  for (const Rejected& c : cases) ExpectRejected(c);
  // What the API server accepts and Pylon refuses itself (with a condition): external IPAM.
  Apply(
      "apiVersion: purelb.io/v2\nkind: ServiceGroup\n"
      "metadata: {name: ext-ok, namespace: purelb-system}\n"
      "spec: {external: {provider: netbox, announce: local}}\n",
      "external group");
  EXPECT_EQ(Kubectl("get -n purelb-system sg ext-ok -o jsonpath={.spec.external.socket}").out,
            "/var/run/purelb/ipam.sock");
  EXPECT_EQ(Kubectl("delete -n purelb-system sg ext-ok").code, 0);
}

// Objects a PureLB v2 install stored (a v2-only CRD, storage v2, no spec.writtenAs) read as v2
// objects once Pylon's CRD (storage v1, both served) replaces it: the API server defaults an
// object read from etcd with the schema of the version it was stored as, so writtenAs is v2.
// Checked on a copy of the ServiceGroup CRD under another group, to leave purelb.io alone.
TEST_F(DeployTest, ObjectsStoredByAV2OnlyCrdReadAsWrittenV2) {
  ApplyInstall();
  Json crd = KubectlJson("create --dry-run=client -f " +
                         Quote(DeployDir() + "/crds/servicegroups.purelb.io.yaml"));
  ASSERT_TRUE(crd.is_object());
  crd["metadata"]["name"] = "servicegroups.pylon-mig.test";
  crd["spec"]["group"] = "pylon-mig.test";
  Json pylon_crd = crd;
  // PureLB's: v2 only, no writtenAs, no rules that read it.
  Json v2 = crd["spec"]["versions"][1];
  ASSERT_EQ(v2["name"], "v2");
  v2["storage"] = true;
  Json& spec_schema = v2["schema"]["openAPIV3Schema"]["properties"]["spec"];
  spec_schema["properties"].erase("writtenAs");
  spec_schema.erase("x-kubernetes-validations");
  crd["spec"]["versions"] = Json::array({v2});
  ASSERT_EQ(Kubectl("apply -f " + Quote(WriteTemp(crd.dump()))).code, 0);
  ASSERT_EQ(Kubectl("wait --for=condition=Established --timeout=60s crd "
                    "servicegroups.pylon-mig.test")
                .code,
            0);
  Apply(
      "apiVersion: pylon-mig.test/v2\nkind: ServiceGroup\n"
      "metadata: {name: stored-v2, namespace: purelb-system}\n"
      "spec: {remote: {v4pools: [{subnet: 203.0.113.0/24, pool: 203.0.113.64/29}]},\n"
      "       namespaces: [team-a]}\n",
      "object of the v2-only CRD");
  Json before = KubectlJson("get -n purelb-system servicegroups.v2.pylon-mig.test stored-v2");
  EXPECT_FALSE(before["spec"].contains("writtenAs")) << before.dump();
  // Pylon's CRD over it.
  Output up = Kubectl("apply -f " + Quote(WriteTemp(pylon_crd.dump())));
  ASSERT_EQ(up.code, 0) << up.out;
  ASSERT_TRUE([&] {
    for (int i = 0; i < 100; ++i) {
      Output r =
          Kubectl("get -n purelb-system servicegroups.v1.pylon-mig.test stored-v2 -o json", false);
      if (r.code == 0) return true;
      usleep(100 * 1000);
    }
    return false;
  }());
  for (const char* v : {"v1", "v2"}) {
    Json o = KubectlJson(std::string("get -n purelb-system servicegroups.") + v +
                         ".pylon-mig.test stored-v2");
    EXPECT_EQ(o["spec"].value("writtenAs", ""), "v2") << v << ": " << o.dump();
    EXPECT_EQ(o["spec"]["remote"], before["spec"]["remote"]) << v;
    EXPECT_EQ(o["spec"]["namespaces"], before["spec"]["namespaces"]) << v;
  }
  // A new object through v1 is v1.
  Apply(
      "apiVersion: pylon-mig.test/v1\nkind: ServiceGroup\n"
      "metadata: {name: new-v1, namespace: purelb-system}\n"
      "spec: {local: {v4pools: [{subnet: 192.0.2.0/24, pool: 192.0.2.64/29}]}}\n",
      "v1 object after the switch");
  EXPECT_EQ(Kubectl("get -n purelb-system servicegroups.v2.pylon-mig.test new-v1 "
                    "-o jsonpath={.spec.writtenAs}")
                .out,
            "v1");
  EXPECT_EQ(Kubectl("delete crd servicegroups.pylon-mig.test").code, 0);
}

}  // namespace
