// How to reach and authenticate to an API server: from a kubeconfig (yaml-cpp) or from the
// in-cluster service account. Loading reads files; no network.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/env.h"
#include "common/result.h"

namespace pylon::k8s {

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct RestConfig {
  // "https://host:port" (no trailing slash), or "unix:///path/to.sock": plain HTTP over a
  // unix-domain socket (Pylon's lab: unix sockets reach across network namespaces).
  std::string server;
  // PEM bytes, not paths: kubeconfig files and *-data fields are both loaded into memory.
  std::string ca_pem;  // empty: the system trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // verify the server certificate for this name instead of the host
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // static bearer token
  std::string token_file;  // bearer token file, re-read every minute and after a 401
  std::string user_agent = "pylon/0.1.0";
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds request_timeout{30000};  // non-watch requests
};

// Parses kubeconfig text. `base_dir` resolves relative file paths (the kubeconfig's directory);
// `context` "" means current-context. Errors: YAML syntax, missing context/cluster/user, no
// server, certificate-authority together with insecure-skip-tls-verify, bad base64, a client
// certificate without key (or the reverse), unreadable files.
Result<RestConfig> ParseKubeconfig(std::string_view yaml, const std::string& base_dir,
                                   std::string_view context = "");
Result<RestConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

// In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 bracketed), CA
// `<dir>/ca.crt`, token file `<dir>/token` (must exist now).
Result<RestConfig> InClusterConfig(const std::string& dir = kServiceAccountDir,
                                   const EnvLookup& env = ProcessEnv);

// `kubeconfig` if given, else $KUBECONFIG, else in-cluster when KUBERNETES_SERVICE_HOST is set,
// else ~/.kube/config.
Result<RestConfig> LoadRestConfig(const std::string& kubeconfig, const EnvLookup& env = ProcessEnv);

// Reads a whole file.
Result<std::string> ReadFile(const std::string& path);

}  // namespace pylon::k8s
