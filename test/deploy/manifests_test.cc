// deploy/ and the docs against the real kubectl 1.32 and `pylon apiserver` (the built binary, or
// $PYLON_APISERVER_BINARY): kustomize renders, the kinds the server serves apply, every example
// and every ```yaml block of docs/*.md applies, and the CRD schemas reject what they can.
//
// `pylon apiserver` serves Namespace, Service, Event, Node, Lease, EndpointSlice, CRDs and custom
// resources only: apps/v1 (Deployment, DaemonSet), rbac.authorization.k8s.io/v1 and
// ServiceAccounts answer 404. The test asserts that (ServerDoesNotServeWorkloadKinds) and skips
// exactly those kinds, so it fails the day the server learns them and they must be applied too.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::set<std::string> kUnservedKinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                              "Role",           "RoleBinding", "Deployment",
                                              "DaemonSet"};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

struct Output {
  int code = -1;
  std::string out;  // stdout and stderr
};

Output Shell(const std::string& cmd) {
  Output r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  int st = pclose(f);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// One YAML document of a multi-document stream, with its top-level kind and metadata.name.
struct Doc {
  std::string text;
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
    for (std::string* s : {&d.kind, &d.name, &d.ns}) {
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

class DeployTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* env = std::getenv("PYLON_APISERVER_BINARY");
    std::string binary = env != nullptr && *env != '\0' ? env : PYLON_BINARY;
    ASSERT_EQ(access(binary.c_str(), X_OK), 0) << "no pylon binary at " << binary;
    ASSERT_EQ(Shell("kubectl version --client").code, 0) << "kubectl missing";
    char tmpl[] = "/tmp/pylon-deploy-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    const std::string kubeconfig = *dir_ + "/kubeconfig";
    const std::string log = *dir_ + "/apiserver.log";
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      if (f != nullptr) dup2(fileno(stdout), STDERR_FILENO);
      execl(binary.c_str(), binary.c_str(), "apiserver", "--listen", "127.0.0.1:0",
            "--kubeconfig-out", kubeconfig.c_str(), "--log-level", "warn",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(kubeconfig)) {
      int status = 0;
      ASSERT_NE(waitpid(pid_, &status, WNOHANG), pid_) << "apiserver exited: " << ReadFile(log);
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "apiserver wrote no kubeconfig";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Everything in dependency order: CRDs and the namespace before the objects needing them.
    rendered_ = new std::string();
    Output k = Shell("kubectl kustomize " + Quote(std::string(PYLON_SOURCE_DIR) + "/deploy"));
    ASSERT_EQ(k.code, 0) << k.out;
    *rendered_ = k.out;
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    if (dir_ != nullptr) {
      std::error_code ec;
      fs::remove_all(*dir_, ec);
    }
    delete dir_;
    delete rendered_;
    dir_ = nullptr;
    rendered_ = nullptr;
  }

  static Output Kubectl(const std::string& args) {
    return Shell("kubectl --kubeconfig " + Quote(*dir_ + "/kubeconfig") + " --cache-dir " +
                 Quote(*dir_ + "/cache") + " " + args);
  }

  // kubectl apply of `yaml`; every printed line must say created/configured/unchanged.
  static Output Apply(const std::string& yaml, const std::string& label) {
    static int seq = 0;
    std::string file = *dir_ + "/apply-" + std::to_string(++seq) + ".yaml";
    std::ofstream(file) << yaml;
    Output r = Kubectl("apply --validate=false -f " + Quote(file));
    EXPECT_EQ(r.code, 0) << label << ":\n" << r.out;
    std::stringstream in(r.out);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      if (line.empty() || line.rfind("Warning: ", 0) == 0) continue;
      ++lines;
      bool ok = line.find(" created") != std::string::npos ||
                line.find(" configured") != std::string::npos ||
                line.find(" unchanged") != std::string::npos;
      EXPECT_TRUE(ok) << label << ": " << line;
    }
    EXPECT_GT(lines, 0) << label;
    return r;
  }

  static void ApplyBase() {
    static bool done = false;
    if (done) return;
    done = true;
    std::string crds_and_ns, rest;
    for (const Doc& d : SplitDocs(*rendered_)) {
      if (kUnservedKinds.count(d.kind)) continue;
      if (d.kind == "CustomResourceDefinition" || d.kind == "Namespace") {
        crds_and_ns += "---\n" + d.text;
      } else {
        rest += "---\n" + d.text;
      }
    }
    Output a = Apply(crds_and_ns, "deploy CRDs + namespace");
    for (const char* crd : {"servicegroups.purelb.io", "lbnodeagents.purelb.io",
                            "loadbalancerclasses.lace-cni.io", "l2advertisements.lace-cni.io"}) {
      EXPECT_NE(a.out.find(std::string("customresourcedefinition.apiextensions.k8s.io/") + crd +
                           " created"),
                std::string::npos)
          << a.out;
    }
    // The server starts with default, kube-system and (for tests) purelb-system namespaces.
    EXPECT_TRUE(a.out.find("namespace/purelb-system created") != std::string::npos ||
                a.out.find("namespace/purelb-system configured") != std::string::npos)
        << a.out;
    Output b = Apply(rest, "deploy custom resources");
    EXPECT_NE(b.out.find("lbnodeagent.purelb.io/default created"), std::string::npos) << b.out;
  }

  static inline std::string* dir_ = nullptr;
  static inline std::string* rendered_ = nullptr;
  static inline pid_t pid_ = -1;
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
      {"Namespace", 1},          {"CustomResourceDefinition", 4},
      {"ServiceAccount", 2},     {"ClusterRole", 2},
      {"ClusterRoleBinding", 2}, {"Role", 2},
      {"RoleBinding", 2},        {"Deployment", 1},
      {"DaemonSet", 1},          {"LBNodeAgent", 1}};
  for (const auto& [kind, n] : want) EXPECT_EQ(kinds.count(kind), n) << kind;
  EXPECT_EQ(kinds.size(), 18u);
  EXPECT_NE(rendered_->find("image: pylon:0.1.0"), std::string::npos);
}

TEST_F(DeployTest, ServerDoesNotServeWorkloadKinds) {
  // The kinds skipped below: if the server starts serving them, apply them here instead.
  for (const char* path : {"/apis/apps/v1", "/apis/rbac.authorization.k8s.io/v1",
                           "/api/v1/namespaces/default/serviceaccounts"}) {
    Output r = Kubectl(std::string("get --raw ") + path);
    EXPECT_NE(r.code, 0) << path << " is served now: apply its kinds in this test\n" << r.out;
    EXPECT_NE(r.out.find("NotFound"), std::string::npos) << path << ": " << r.out;
  }
  Output ok = Kubectl("get --raw /apis/coordination.k8s.io/v1");
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST_F(DeployTest, AppliesTheServedKindsOfTheInstall) {
  ApplyBase();
  Output r = Kubectl("get lbnodeagents -n purelb-system");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("default"), std::string::npos) << r.out;
  // Printer columns of the CRDs reach kubectl.
  Output sg = Kubectl(
      "get crd servicegroups.purelb.io -o "
      "jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}");
  EXPECT_NE(sg.out.find("IPv4 Size"), std::string::npos) << sg.out;
}

TEST_F(DeployTest, EveryExampleApplies) {
  ApplyBase();
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(PYLON_SOURCE_DIR) + "/deploy/examples")) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    std::string text = ReadFile(e.path());
    for (const Doc& d : SplitDocs(text)) {
      EXPECT_EQ(kUnservedKinds.count(d.kind), 0u) << e.path() << ": " << d.kind;
    }
    Apply(text, e.path().string());
  }
  EXPECT_GE(n, 6);
  Output sg = Kubectl("get servicegroups -n purelb-system -o name");
  for (const char* name : {"default", "localdual", "virtual"}) {
    EXPECT_NE(sg.out.find(std::string("servicegroup.purelb.io/") + name), std::string::npos)
        << sg.out;
  }
  Output lbc = Kubectl("get loadbalancerclasses");
  EXPECT_NE(lbc.out.find("public"), std::string::npos) << lbc.out;
  EXPECT_NE(lbc.out.find("l2"), std::string::npos) << "Mode column: " << lbc.out;
}

TEST_F(DeployTest, EveryYamlBlockInTheDocsApplies) {
  ApplyBase();
  int applied = 0;
  for (const auto& e : fs::directory_iterator(std::string(PYLON_SOURCE_DIR) + "/docs")) {
    if (e.path().extension() != ".md") continue;
    for (const Block& b : YamlBlocks(ReadFile(e.path()))) {
      const std::string where = e.path().filename().string() + ":" + std::to_string(b.line);
      if (b.fragment) continue;
      std::vector<Doc> docs = SplitDocs(b.text);
      ASSERT_FALSE(docs.empty()) << where << ": no kind (mark partial blocks ```yaml fragment)";
      std::string served;
      for (const Doc& d : docs) {
        if (!kUnservedKinds.count(d.kind)) served += "---\n" + d.text;
      }
      if (served.empty()) continue;
      Apply(served, where);
      ++applied;
    }
  }
  EXPECT_GE(applied, 3) << "docs/install.md and docs/configure.md show applicable objects";
}

TEST_F(DeployTest, CrdSchemasRejectWhatTheyCan) {
  ApplyBase();
  struct Case {
    const char* what;
    const char* yaml;
    const char* error;  // in kubectl's output
  };
  const Case cases[] = {
      {"mode outside the enum",
       "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata: {name: bad-mode}\n"
       "spec: {mode: bgp, ipv4Pools: [{cidr: 192.0.2.0/24}]}\n",
       "spec.mode"},
      {"ServiceGroup without spec.local",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: no-local, namespace: purelb-system}\nspec: {}\n",
       "spec.local"},
      {"pool without subnet",
       "apiVersion: purelb.io/v1\nkind: ServiceGroup\n"
       "metadata: {name: no-subnet, namespace: purelb-system}\n"
       "spec: {local: {v4pools: [{pool: 192.0.2.0/24}]}}\n",
       "subnet"},
      {"L2Advertisement without a node",
       "apiVersion: lace-cni.io/v1alpha1\nkind: L2Advertisement\nmetadata: {name: ipv4-192-0-2-9}\n"
       "spec: {address: 192.0.2.9, service: {namespace: default, name: web}}\n",
       "spec.node"},
  };
  for (const Case& c : cases) {
    std::string file = *dir_ + "/bad.yaml";
    std::ofstream(file) << c.yaml;
    Output r = Kubectl("apply --validate=false -f " + Quote(file));
    EXPECT_NE(r.code, 0) << c.what << ": accepted\n" << r.out;
    EXPECT_NE(r.out.find(c.error), std::string::npos) << c.what << ": " << r.out;
  }
}

}  // namespace
