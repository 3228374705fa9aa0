// `pylon apiserver`: flag parsing and wiring of the in-memory API server.
#pragma once

#include <string>

#include "common/result.h"
#include "net/ip.h"

namespace pylon::apiserver {

struct CommandOptions {
  std::string listen_host = "127.0.0.1";
  int listen_port = 0;
  std::string kubeconfig_out;
  std::string listen_unix;          // also serve on this unix socket
  std::string kubeconfig_unix_out;  // kubeconfig with server unix:///<listen_unix>
  bool tls = false;
  std::string audit_log;
  std::size_t history = 5000;
  double bookmark_interval_seconds = 60;
  net::Family primary_family = net::Family::kV4;
  std::string service_cidr_v4 = "10.96.0.0/12";
  std::string service_cidr_v6 = "fd00:10:96::/112";
  std::string faults_json;  // initial fault settings (JSON), from --faults
};

// Parses argv (argv[0] is the command name). Fails with a usage message.
Result<CommandOptions> ParseCommandLine(int argc, char** argv);

// A kubeconfig (YAML) for `server` with a token user; ca_pem may be empty (plain HTTP).
std::string MakeKubeconfig(const std::string& server, const std::string& ca_pem,
                           const std::string& token);

}  // namespace pylon::apiserver
