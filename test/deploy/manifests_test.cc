// deploy/ and the docs against the real kubectl 1.32 and `pylon apiserver` (the built binary, or
// $PYLON_APISERVER_BINARY): kustomize renders, `kubectl apply -k deploy` applies every object of
// the install (the server stores Deployments, DaemonSets, RBAC objects, ServiceAccounts and
// Secrets like a real one), `kubectl get` shows the workloads, a changed install re-applies as a
// strategic merge, the documented heartbeat Secret command switches the agent's optional key
// mount on, every example and every ```yaml block of docs/*.md applies, and the CRD schemas
// reject what they can.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
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
    delete install_out_;
    dir_ = nullptr;
    rendered_ = nullptr;
    install_out_ = nullptr;
  }

  static Output Kubectl(const std::string& args) {
    return Shell("kubectl --kubeconfig " + Quote(*dir_ + "/kubeconfig") + " --cache-dir " +
                 Quote(*dir_ + "/cache") + " " + args);
  }

  // Runs `kubectl apply --validate=false <source>`; every printed line must say
  // created/configured/unchanged.
  static Output ApplySource(const std::string& source, const std::string& label) {
    Output r = Kubectl("apply --validate=false " + source);
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

  // kubectl apply of `yaml` written to a file.
  static Output Apply(const std::string& yaml, const std::string& label) {
    static int seq = 0;
    std::string file = *dir_ + "/apply-" + std::to_string(++seq) + ".yaml";
    std::ofstream(file) << yaml;
    return ApplySource("-f " + Quote(file), label);
  }

  static std::string DeployDir() { return std::string(PYLON_SOURCE_DIR) + "/deploy"; }

  // What an operator runs (docs/install.md): `kubectl apply -k deploy`. Once per suite; the
  // output of that first apply is kept for the tests that look at it.
  static const std::string& ApplyInstall() {
    if (install_out_ == nullptr) {
      install_out_ =
          new std::string(ApplySource("-k " + Quote(DeployDir()), "apply -k deploy").out);
    }
    return *install_out_;
  }

  // "Deployment" + "apps/v1" → "deployment.apps"; core kinds have no group suffix.
  static std::string Resource(const Doc& d) {
    std::string kind;
    for (char c : d.kind) kind += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::size_t slash = d.api_version.find('/');
    return slash == std::string::npos ? kind : kind + "." + d.api_version.substr(0, slash);
  }

  static std::string NsFlag(const Doc& d) { return d.ns.empty() ? "" : " -n " + Quote(d.ns); }

  static inline std::string* dir_ = nullptr;
  static inline std::string* rendered_ = nullptr;
  static inline std::string* install_out_ = nullptr;
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
      {"DaemonSet", 1}};
  for (const auto& [kind, n] : want) EXPECT_EQ(kinds.count(kind), n) << kind;
  // No custom resource: kubectl maps every object before it creates anything, so one whose CRD
  // comes in the same apply would fail it (examples/ has the LBNodeAgent).
  EXPECT_EQ(kinds.size(), 17u);
  EXPECT_NE(rendered_->find("image: pylon:0.1.0"), std::string::npos);
}

TEST_F(DeployTest, ApplyKCreatesEveryObjectOfTheInstall) {
  const std::string& out = ApplyInstall();
  int checked = 0;
  for (const Doc& d : SplitDocs(*rendered_)) {
    // The server starts with purelb-system (for tests), so the namespace is "configured".
    const std::string prefix = Resource(d) + "/" + d.name + " ";
    bool reported = out.find(prefix + "created") != std::string::npos ||
                    (d.kind == "Namespace" && out.find(prefix + "configured") != std::string::npos);
    EXPECT_TRUE(reported) << prefix << "not created:\n" << out;
    // Stored where it belongs (namespaced or cluster-scoped) under the name it was given.
    Output get = Kubectl("get " + Resource(d) + " " + Quote(d.name) + NsFlag(d) + " -o name");
    EXPECT_EQ(get.code, 0) << get.out;
    EXPECT_EQ(get.out, Resource(d) + "/" + d.name + "\n");
    ++checked;
  }
  EXPECT_EQ(checked, 17);
  // Applying it again changes nothing.
  Output again = ApplySource("-k " + Quote(DeployDir()), "apply -k deploy again");
  std::stringstream in(again.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("Warning: ", 0) == 0) continue;
    EXPECT_NE(line.find(" unchanged"), std::string::npos) << line;
  }
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
  EXPECT_EQ(sa.out, "serviceaccount/agent\nserviceaccount/allocator\n");
  // What the server defaulted, as a real one does.
  Output d = Kubectl(
      "-n purelb-system get deploy allocator -o jsonpath="
      "'{.metadata.generation} {.spec.strategy.type} "
      "{.spec.template.spec.containers[0].imagePullPolicy}'");
  EXPECT_EQ(d.out, "1 RollingUpdate IfNotPresent") << d.out;
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
  EXPECT_EQ(c.out,
            "--log-level=debug|NODE_NAME POD_NAMESPACE PURELB_LEASE_DURATION "
            "PURELB_RENEW_DEADLINE PURELB_RETRY_PERIOD PYLON_HEARTBEAT_KEY_FILE|run heartbeat-key|"
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

  // Run the ```sh block of docs/install.md that creates the Secret, as written.
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
  // kubectl's `create secret` posts protobuf, which pylon apiserver does not decode (JSON only):
  // the same generator, run client-side, feeds `kubectl create -f -` instead.
  const std::string prologue =
      "kubectl() { case \" $* \" in *\" create secret \"*) "
      "command kubectl \"$@\" --dry-run=client -o json | command kubectl create --validate=false "
      "-f - ;; "
      "*) command kubectl \"$@\" ;; esac; }\n";
  Output run = Shell("KUBECONFIG=" + Quote(*dir_ + "/kubeconfig") + " KUBECACHEDIR=" +
                     Quote(*dir_ + "/cache") + " sh -ec " + Quote(prologue + snippet));
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
  Output type = Kubectl("-n purelb-system get secrets");
  EXPECT_NE(type.out.find("pylon-heartbeat-key   Opaque   2"), std::string::npos) << type.out;
}

TEST_F(DeployTest, EveryExampleApplies) {
  ApplyInstall();
  int n = 0;
  for (const auto& e : fs::directory_iterator(DeployDir() + "/examples")) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    Apply(ReadFile(e.path()), e.path().string());
  }
  EXPECT_GE(n, 7);
  Output sg = Kubectl("get servicegroups -n purelb-system -o name");
  for (const char* name : {"default", "localdual", "virtual"}) {
    EXPECT_NE(sg.out.find(std::string("servicegroup.purelb.io/") + name), std::string::npos)
        << sg.out;
  }
  Output lna = Kubectl("get lbnodeagents -n purelb-system -o name");
  EXPECT_EQ(lna.out, "lbnodeagent.purelb.io/default\n");
  Output lbc = Kubectl("get loadbalancerclasses");
  EXPECT_NE(lbc.out.find("public"), std::string::npos) << lbc.out;
  EXPECT_NE(lbc.out.find("l2"), std::string::npos) << "Mode column: " << lbc.out;
  // Printer columns of the CRDs reach kubectl.
  Output cols = Kubectl(
      "get crd servicegroups.purelb.io -o "
      "jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}");
  EXPECT_NE(cols.out.find("IPv4 Size"), std::string::npos) << cols.out;
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
