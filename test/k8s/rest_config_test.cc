// kubeconfig parsing (every field, *-data, files relative to the kubeconfig, errors) and the
// in-cluster config; token file refresh.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "k8s/base64.h"
#include "k8s/rest_config.h"
#include "k8s/token_source.h"

namespace pylon::k8s {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pylon-k8s-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name) << text;
  }

 private:
  std::string path_;
};

const char kCa[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
const char kCert[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
const char kKey[] = "-----BEGIN EC PRIVATE KEY-----\nKEY\n-----END EC PRIVATE KEY-----\n";

std::string Kubeconfig(const std::string& cluster_extra, const std::string& user_extra,
                       const std::string& current = "dev") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\n"
         "clusters:\n"
         "- name: other\n  cluster:\n    server: https://other:6443\n"
         "- name: lab\n  cluster:\n    server: https://127.0.0.1:6443/\n" +
         cluster_extra +
         "contexts:\n"
         "- name: dev\n  context:\n    cluster: lab\n    user: admin\n"
         "- name: nouser\n  context:\n    cluster: lab\n"
         "- name: broken\n  context:\n    cluster: missing\n    user: admin\n"
         "users:\n"
         "- name: admin\n  user:\n" +
         user_extra;
}

TEST(Kubeconfig, DataFields) {
  std::string cluster = "    certificate-authority-data: " + Base64Encode(kCa) +
                        "\n    tls-server-name: kubernetes.default\n";
  std::string user = "    client-certificate-data: " + Base64Encode(kCert) +
                     "\n    client-key-data: " + Base64Encode(kKey) + "\n    token: abc123\n";
  auto cfg = ParseKubeconfig(Kubeconfig(cluster, user), "/nonexistent");
  ASSERT_TRUE(cfg) << cfg.error().message();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->client_cert_pem, kCert);
  EXPECT_EQ(cfg->client_key_pem, kKey);
  EXPECT_EQ(cfg->token, "abc123");
  EXPECT_EQ(cfg->tls_server_name, "kubernetes.default");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
}

TEST(Kubeconfig, FilesRelativeToTheKubeconfig) {
  TempDir dir;
  dir.Write("ca.crt", kCa);
  dir.Write("client.crt", kCert);
  dir.Write("client.key", kKey);
  dir.Write("token", "file-token\n");
  dir.Write("config", Kubeconfig("    certificate-authority: ca.crt\n",
                                 "    client-certificate: client.crt\n"
                                 "    client-key: " +
                                     dir.path() +
                                     "/client.key\n"
                                     "    tokenFile: token\n"));
  auto cfg = LoadKubeconfig(dir.path() + "/config");
  ASSERT_TRUE(cfg) << cfg.error().message();
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->client_cert_pem, kCert);
  EXPECT_EQ(cfg->client_key_pem, kKey);
  EXPECT_EQ(cfg->token_file, dir.path() + "/token");
  FakeClock clock;
  TokenSource tokens(cfg->token, cfg->token_file, clock);
  EXPECT_EQ(*tokens.Get(), "file-token");
}

TEST(Kubeconfig, InsecureAndContexts) {
  auto cfg =
      ParseKubeconfig(Kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), "");
  ASSERT_TRUE(cfg) << cfg.error().message();
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
  auto nouser = ParseKubeconfig(Kubeconfig("", "    token: t\n"), "", "nouser");
  ASSERT_TRUE(nouser) << nouser.error().message();
  EXPECT_EQ(nouser->token, "");
}

TEST(Kubeconfig, ErrorTable) {
  const std::string ca = "    certificate-authority-data: " + Base64Encode(kCa) + "\n";
  struct Row {
    const char* what;
    std::string yaml;
    std::string context;
    const char* fragment;
  };
  const Row rows[] = {
      {"CA + insecure", Kubeconfig(ca + "    insecure-skip-tls-verify: true\n", "    token: t\n"),
       "", "mutually exclusive"},
      {"unknown context", Kubeconfig("", "    token: t\n"), "nope", "no context named \"nope\""},
      {"missing cluster", Kubeconfig("", "    token: t\n"), "broken", "no cluster named"},
      {"no current context", Kubeconfig("", "    token: t\n", "\"\""), "", "no current-context"},
      {"bad base64", Kubeconfig("    certificate-authority-data: '%%%'\n", "    token: t\n"), "",
       "base64"},
      {"cert without key",
       Kubeconfig("", "    client-certificate-data: " + Base64Encode(kCert) + "\n"), "",
       "together"},
      {"missing CA file", Kubeconfig("    certificate-authority: /nonexistent/ca.crt\n", ""), "",
       "/nonexistent/ca.crt"},
      {"insecure not bool", Kubeconfig("    insecure-skip-tls-verify: maybe\n", ""), "",
       "not a boolean"},
      {"yaml syntax", "clusters: [\n", "", "kubeconfig"},
      {"not a map", "- a\n- b\n", "", "not a YAML map"},
      {"server not url",
       "current-context: c\nclusters:\n- name: x\n  cluster:\n    server: localhost:6443\n"
       "contexts:\n- name: c\n  context:\n    cluster: x\n",
       "", "not an http(s) URL"},
      {"no server",
       "current-context: c\nclusters:\n- name: x\n  cluster: {}\ncontexts:\n- name: c\n"
       "  context:\n    cluster: x\n",
       "", "no server"},
  };
  for (const auto& r : rows) {
    auto cfg = ParseKubeconfig(r.yaml, "", r.context);
    ASSERT_FALSE(cfg) << r.what;
    EXPECT_NE(cfg.error().message().find(r.fragment), std::string::npos)
        << r.what << ": " << cfg.error().message();
  }
  EXPECT_FALSE(LoadKubeconfig("/nonexistent/kubeconfig"));
}

TEST(InCluster, HostPortCaToken) {
  TempDir dir;
  dir.Write("ca.crt", kCa);
  dir.Write("token", "sa-token");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto cfg = InClusterConfig(dir.path(), lookup);
  ASSERT_TRUE(cfg) << cfg.error().message();
  EXPECT_EQ(cfg->server, "https://[fd00::1]:443");
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->token_file, dir.path() + "/token");
  env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  EXPECT_EQ(InClusterConfig(dir.path(), lookup)->server, "https://10.96.0.1:443");
  env.erase("KUBERNETES_SERVICE_PORT");
  EXPECT_FALSE(InClusterConfig(dir.path(), lookup));
  env["KUBERNETES_SERVICE_PORT"] = "443";
  EXPECT_FALSE(InClusterConfig(dir.path() + "/missing", lookup));
}

TEST(TokenSource, RereadsEveryMinuteAndAfterInvalidate) {
  TempDir dir;
  dir.Write("token", "one\n");
  FakeClock clock;
  TokenSource tokens("", dir.path() + "/token", clock);
  EXPECT_EQ(*tokens.Get(), "one");
  dir.Write("token", "two");
  EXPECT_EQ(*tokens.Get(), "one");  // cached within the minute
  clock.Advance(std::chrono::seconds(61));
  EXPECT_EQ(*tokens.Get(), "two");
  dir.Write("token", "three");
  tokens.Invalidate();  // after a 401
  EXPECT_EQ(*tokens.Get(), "three");
  fs::remove(dir.path() + "/token");
  clock.Advance(std::chrono::minutes(2));
  EXPECT_EQ(*tokens.Get(), "three");  // unreadable later: keep the last good one
  TokenSource missing("", dir.path() + "/nope", clock);
  EXPECT_FALSE(missing.Get());
  TokenSource fixed("static", "", clock);
  EXPECT_EQ(*fixed.Get(), "static");
}

}  // namespace
}  // namespace pylon::k8s
