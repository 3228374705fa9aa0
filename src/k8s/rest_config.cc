#include "k8s/rest_config.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "k8s/base64.h"

namespace pylon::k8s {
namespace {

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// Returns the string at node[key], "" if absent; errors if present but not a scalar.
Result<std::string> Scalar(const YAML::Node& node, const char* key, const std::string& where) {
  YAML::Node v = node[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar()) {
    return Fail(ErrorCode::kInvalidArgument, "kubeconfig: " + where + "." + key + " not a scalar");
  }
  return v.as<std::string>();
}

// Finds the entry named `name` in a list of {name, <field>: {...}}; returns its <field> map.
Result<YAML::Node> Named(const YAML::Node& root, const char* list, const char* field,
                         const std::string& name) {
  YAML::Node items = root[list];
  if (items && !items.IsNull() && !items.IsSequence()) {
    return Fail(ErrorCode::kInvalidArgument, std::string("kubeconfig: ") + list + " not a list");
  }
  if (items) {
    for (const auto& item : items) {
      if (!item.IsMap()) continue;
      YAML::Node n = item["name"];
      if (n && n.IsScalar() && n.as<std::string>() == name) {
        YAML::Node f = item[field];
        if (!f || f.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!f.IsMap()) {
          return Fail(ErrorCode::kInvalidArgument, std::string("kubeconfig: ") + list + "[" + name +
                                                       "]." + field + " not a map");
        }
        return f;
      }
    }
  }
  return Fail(ErrorCode::kNotFound,
              std::string("kubeconfig: no ") + field + " named \"" + name + "\" in " + list);
}

// Loads PEM from `<key>-data` (base64) or `<key>` (a path); at most one may be set.
Result<std::string> Pem(const YAML::Node& node, const std::string& key, const std::string& where,
                        const std::string& base_dir) {
  auto data = Scalar(node, (key + "-data").c_str(), where);
  if (!data) return Fail(data.error());
  auto path = Scalar(node, key.c_str(), where);
  if (!path) return Fail(path.error());
  if (!data->empty()) {
    auto pem = Base64Decode(*data);
    if (!pem) return Fail(pem.error().Wrap("kubeconfig: " + where + "." + key + "-data"));
    return *pem;
  }
  if (!path->empty()) {
    auto pem = ReadFile(Resolve(base_dir, *path));
    if (!pem) return Fail(pem.error().Wrap("kubeconfig: " + where + "." + key));
    return *pem;
  }
  return std::string();
}

Result<RestConfig> ParseKubeconfigOrThrow(std::string_view text, const std::string& base_dir,
                                          std::string_view want_context) {
  YAML::Node root = YAML::Load(std::string(text));
  if (!root.IsMap()) return Fail(ErrorCode::kInvalidArgument, "kubeconfig: not a YAML map");
  std::string ctx_name(want_context);
  if (ctx_name.empty()) {
    auto cur = Scalar(root, "current-context", "");
    if (!cur) return Fail(cur.error());
    ctx_name = *cur;
  }
  if (ctx_name.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "kubeconfig: no current-context and none given");
  }
  auto ctx = Named(root, "contexts", "context", ctx_name);
  if (!ctx) return Fail(ctx.error());
  auto cluster_name = Scalar(*ctx, "cluster", "context");
  if (!cluster_name) return Fail(cluster_name.error());
  if (cluster_name->empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "kubeconfig: context \"" + ctx_name + "\" names no cluster");
  }
  auto cluster = Named(root, "clusters", "cluster", *cluster_name);
  if (!cluster) return Fail(cluster.error());

  RestConfig cfg;
  const std::string cw = "clusters[" + *cluster_name + "]";
  auto server = Scalar(*cluster, "server", cw);
  if (!server) return Fail(server.error());
  if (server->empty()) return Fail(ErrorCode::kInvalidArgument, "kubeconfig: " + cw + " no server");
  cfg.server = *server;
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0 &&
      cfg.server.rfind("unix:///", 0) != 0) {
    return Fail(ErrorCode::kInvalidArgument, "kubeconfig: " + cw + ".server \"" + cfg.server +
                                                 "\" is not an http(s) URL or unix:///path");
  }
  auto ca = Pem(*cluster, "certificate-authority", cw, base_dir);
  if (!ca) return Fail(ca.error());
  cfg.ca_pem = *ca;
  if (YAML::Node insecure = (*cluster)["insecure-skip-tls-verify"];
      insecure && !insecure.IsNull()) {
    bool v = false;
    if (!insecure.IsScalar() || !YAML::convert<bool>::decode(insecure, v)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "kubeconfig: " + cw + ".insecure-skip-tls-verify is not a boolean");
    }
    cfg.insecure_skip_tls_verify = v;
  }
  if (cfg.insecure_skip_tls_verify && !cfg.ca_pem.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "kubeconfig: " + cw +
                    ": certificate-authority and insecure-skip-tls-verify are mutually exclusive");
  }
  auto sni = Scalar(*cluster, "tls-server-name", cw);
  if (!sni) return Fail(sni.error());
  cfg.tls_server_name = *sni;

  auto user_name = Scalar(*ctx, "user", "context");
  if (!user_name) return Fail(user_name.error());
  if (!user_name->empty()) {
    auto user = Named(root, "users", "user", *user_name);
    if (!user) return Fail(user.error());
    const std::string uw = "users[" + *user_name + "]";
    auto cert = Pem(*user, "client-certificate", uw, base_dir);
    if (!cert) return Fail(cert.error());
    auto key = Pem(*user, "client-key", uw, base_dir);
    if (!key) return Fail(key.error());
    if (cert->empty() != key->empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "kubeconfig: " + uw + ": client certificate and key must be given together");
    }
    cfg.client_cert_pem = *cert;
    cfg.client_key_pem = *key;
    auto token = Scalar(*user, "token", uw);
    if (!token) return Fail(token.error());
    cfg.token = *token;
    auto token_file = Scalar(*user, "tokenFile", uw);
    if (!token_file) return Fail(token_file.error());
    if (!token_file->empty()) cfg.token_file = Resolve(base_dir, *token_file);
  }
  return cfg;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FailErrno(errno, "open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return FailErrno(errno, "read " + path);
  return ss.str();
}

Result<RestConfig> ParseKubeconfig(std::string_view yaml, const std::string& base_dir,
                                   std::string_view context) {
  try {
    return ParseKubeconfigOrThrow(yaml, base_dir, context);
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kInvalidArgument, std::string("kubeconfig: ") + e.what());
  }
}

Result<RestConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  auto text = ReadFile(path);
  if (!text) return Fail(text.error().Wrap("kubeconfig"));
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty()) dir = "/";
  auto cfg = ParseKubeconfig(*text, dir, context);
  if (!cfg) return Fail(cfg.error().Wrap(path));
  return cfg;
}

Result<RestConfig> InClusterConfig(const std::string& dir, const EnvLookup& env) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return Fail(ErrorCode::kNotFound,
                "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set");
  }
  RestConfig cfg;
  std::string h = *host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  cfg.server = "https://" + h + ":" + *port;
  auto ca = ReadFile(dir + "/ca.crt");
  if (!ca) return Fail(ca.error().Wrap("in-cluster config"));
  cfg.ca_pem = *ca;
  cfg.token_file = dir + "/token";
  auto token = ReadFile(cfg.token_file);
  if (!token) return Fail(token.error().Wrap("in-cluster config"));
  return cfg;
}

Result<RestConfig> LoadRestConfig(const std::string& kubeconfig, const EnvLookup& env) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig);
  if (auto p = env("KUBECONFIG"); p && !p->empty()) {
    // Only the first entry of a colon-separated list is used.
    return LoadKubeconfig(p->substr(0, p->find(':')));
  }
  if (auto h = env("KUBERNETES_SERVICE_HOST"); h && !h->empty()) return InClusterConfig();
  auto home = env("HOME");
  if (!home) return Fail(ErrorCode::kNotFound, "no kubeconfig: HOME not set");
  return LoadKubeconfig(*home + "/.kube/config");
}

}  // namespace pylon::k8s
