#include "apiserver/command.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "apiserver/handler.h"
#include "common/log.h"
#include "http/server.h"
#include "http/tls.h"
#include "main/commands.h"

namespace pylon::apiserver {

namespace {
const char* kUsage =
    "usage: pylon apiserver [flags]\n"
    "  --listen ADDR:PORT          listen address (default 127.0.0.1:0; port 0 picks a free port)\n"
    "  --kubeconfig-out FILE       write a kubeconfig for this server\n"
    "  --listen-unix PATH          also serve on a unix socket (reachable from every netns)\n"
    "  --kubeconfig-unix-out FILE  write a kubeconfig (server unix:///PATH) for Pylon's own "
    "client\n"
    "  --tls                       serve HTTPS with a generated self-signed CA\n"
    "  --audit-log FILE            append one JSON line per request\n"
    "  --history N                 watch history length in events (default 5000)\n"
    "  --bookmark-interval SECS    watch bookmark interval (default 60)\n"
    "  --primary-family IPv4|IPv6  the cluster's primary IP family (default IPv4)\n"
    "  --service-cidr CIDR         IPv4 service CIDR (default 10.96.0.0/12)\n"
    "  --service-cidr-v6 CIDR      IPv6 service CIDR (default fd00:10:96::/112)\n"
    "  --faults JSON               initial fault injection settings (see POST /pylon/faults)\n"
    "  --log-level LEVEL           debug|info|warn|error\n";
}

Result<CommandOptions> ParseCommandLine(int argc, char** argv) {
  CommandOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string val;
    bool has_val = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      val = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_val = true;
    }
    auto need = [&]() -> Result<std::string> {
      if (has_val) return val;
      if (i + 1 >= argc) return Fail(ErrorCode::kInvalidArgument, a + " needs a value\n" + kUsage);
      return std::string(argv[++i]);
    };
    if (a == "--help" || a == "-h") return Fail(ErrorCode::kInvalidArgument, kUsage);
    if (a == "--tls") {
      o.tls = true;
      continue;
    }
    auto v = need();
    if (!v) return Fail(v.error());
    if (a == "--listen") {
      std::string s = *v;
      std::size_t colon = s.rfind(':');
      if (colon == std::string::npos)
        return Fail(ErrorCode::kInvalidArgument, "--listen wants ADDR:PORT");
      std::string host = s.substr(0, colon);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
      if (!host.empty()) o.listen_host = host;
      try {
        o.listen_port = std::stoi(s.substr(colon + 1));
      } catch (...) {
        return Fail(ErrorCode::kInvalidArgument, "--listen: bad port in \"" + s + "\"");
      }
      if (o.listen_port < 0 || o.listen_port > 65535)
        return Fail(ErrorCode::kInvalidArgument, "--listen: port out of range");
    } else if (a == "--kubeconfig-out") {
      o.kubeconfig_out = *v;
    } else if (a == "--listen-unix") {
      o.listen_unix = *v;
    } else if (a == "--kubeconfig-unix-out") {
      o.kubeconfig_unix_out = *v;
    } else if (a == "--audit-log") {
      o.audit_log = *v;
    } else if (a == "--history") {
      try {
        o.history = static_cast<std::size_t>(std::stoul(*v));
      } catch (...) {
        return Fail(ErrorCode::kInvalidArgument, "--history wants a number");
      }
      if (o.history == 0) return Fail(ErrorCode::kInvalidArgument, "--history must be at least 1");
    } else if (a == "--bookmark-interval") {
      try {
        o.bookmark_interval_seconds = std::stod(*v);
      } catch (...) {
        return Fail(ErrorCode::kInvalidArgument, "--bookmark-interval wants seconds");
      }
      if (o.bookmark_interval_seconds <= 0)
        return Fail(ErrorCode::kInvalidArgument, "--bookmark-interval must be > 0");
    } else if (a == "--primary-family") {
      auto f = net::ParseFamilyName(*v);
      if (!f) return Fail(ErrorCode::kInvalidArgument, "--primary-family wants IPv4 or IPv6");
      o.primary_family = *f;
    } else if (a == "--service-cidr") {
      o.service_cidr_v4 = *v;
    } else if (a == "--service-cidr-v6") {
      o.service_cidr_v6 = *v;
    } else if (a == "--faults") {
      o.faults_json = *v;
    } else if (a == "--log-level") {
      log::Level lvl;
      if (!log::ParseLevel(*v, &lvl))
        return Fail(ErrorCode::kInvalidArgument, "--log-level: debug|info|warn|error");
      log::SetLevel(lvl);
    } else {
      return Fail(ErrorCode::kInvalidArgument, "unknown flag " + a + "\n" + kUsage);
    }
  }
  return o;
}

std::string MakeKubeconfig(const std::string& server, const std::string& ca_pem,
                           const std::string& token) {
  std::string out =
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: pylon\n"
      "  cluster:\n"
      "    server: " +
      server + "\n";
  if (!ca_pem.empty()) out += "    certificate-authority-data: " + Base64Encode(ca_pem) + "\n";
  out +=
      "contexts:\n"
      "- name: pylon\n"
      "  context:\n"
      "    cluster: pylon\n"
      "    user: pylon\n"
      "    namespace: default\n"
      "current-context: pylon\n"
      "users:\n"
      "- name: pylon\n"
      "  user:\n"
      "    token: " +
      token + "\n";
  return out;
}

}  // namespace pylon::apiserver

namespace pylon {

int RunApiserver(int argc, char** argv) {
  using namespace apiserver;
  log::SetComponent("apiserver");
  auto opts = ParseCommandLine(argc, argv);
  if (!opts) {
    std::fprintf(stderr, "%s\n", opts.error().message().c_str());
    return 2;
  }
  StoreOptions so;
  so.history = opts->history;
  auto v4 = net::Prefix::Parse(opts->service_cidr_v4);
  auto v6 = net::Prefix::Parse(opts->service_cidr_v6);
  if (!v4 || !v4->address().is_v4() || !v6 || !v6->address().is_v6()) {
    std::fprintf(stderr, "pylon apiserver: bad --service-cidr / --service-cidr-v6\n");
    return 2;
  }
  so.service_network.v4 = *v4;
  so.service_network.v6 = *v6;
  so.service_network.primary = opts->primary_family;

  Faults faults;
  if (!opts->faults_json.empty()) {
    std::string err;
    auto j = ParseJson(opts->faults_json, &err);
    if (!j) {
      std::fprintf(stderr, "pylon apiserver: --faults: %s\n", err.c_str());
      return 2;
    }
    auto fs = FaultSettings::FromJson(*j);
    if (!fs || !faults.Set(*fs)) {
      std::fprintf(stderr, "pylon apiserver: --faults: %s\n",
                   fs ? "invalid regex" : fs.error().message().c_str());
      return 2;
    }
  }
  std::unique_ptr<AuditLog> audit;
  if (!opts->audit_log.empty()) {
    auto a = AuditLog::Open(opts->audit_log);
    if (!a) {
      std::fprintf(stderr, "pylon apiserver: %s\n", a.error().message().c_str());
      return 1;
    }
    audit = std::move(*a);
  }

  // Block the stop signals in every thread; the main thread waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  http::ServerOptions hso;
  hso.address = opts->listen_host;
  hso.port = static_cast<std::uint16_t>(opts->listen_port);
  std::string ca_pem;
  if (opts->tls) {
    std::vector<std::string> sans = {"127.0.0.1",  "localhost",          "::1",
                                     "kubernetes", "kubernetes.default", "kubernetes.default.svc"};
    if (std::find(sans.begin(), sans.end(), opts->listen_host) == sans.end())
      sans.push_back(opts->listen_host);
    auto certs = http::GenerateCertificates("pylon-apiserver", sans);
    if (!certs) {
      std::fprintf(stderr, "pylon apiserver: %s\n", certs.error().message().c_str());
      return 1;
    }
    auto ctx = http::TlsContext::FromPem(certs->server_cert_pem, certs->server_key_pem);
    if (!ctx) {
      std::fprintf(stderr, "pylon apiserver: %s\n", ctx.error().message().c_str());
      return 1;
    }
    hso.tls = *ctx;
    ca_pem = certs->ca_cert_pem;
  }
  Store store(SystemClock::Instance(), so);
  HandlerOptions ho;
  ho.bookmark_interval =
      std::chrono::milliseconds(static_cast<long long>(opts->bookmark_interval_seconds * 1000));
  ApiHandler handler(store, faults, audit.get(), SystemClock::Instance(), ho);
  auto server = http::Server::Start(
      hso, [&](const http::Request& r, http::ResponseWriter& w) { handler.Handle(r, w); });
  if (!server) {
    std::fprintf(stderr, "pylon apiserver: %s\n", server.error().message().c_str());
    return 1;
  }
  std::string url = (*server)->Url();
  handler.set_server_address(url.substr(url.find("://") + 3));
  std::unique_ptr<http::Server> unix_server;
  if (!opts->listen_unix.empty()) {
    http::ServerOptions uso;
    uso.unix_path = opts->listen_unix;
    auto us = http::Server::Start(
        uso, [&](const http::Request& r, http::ResponseWriter& w) { handler.Handle(r, w); });
    if (!us) {
      std::fprintf(stderr, "pylon apiserver: %s\n", us.error().message().c_str());
      return 1;
    }
    unix_server = std::move(*us);
  }
  // Written atomically (rename), so a reader never sees half a file.
  auto write_kubeconfig = [](const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << text;
      if (!f) return false;
    }
    return std::rename(tmp.c_str(), path.c_str()) == 0;
  };
  if (!opts->kubeconfig_unix_out.empty() && !unix_server) {
    std::fprintf(stderr, "pylon apiserver: --kubeconfig-unix-out needs --listen-unix\n");
    return 1;
  }
  if (unix_server && !opts->kubeconfig_unix_out.empty() &&
      !write_kubeconfig(opts->kubeconfig_unix_out,
                        MakeKubeconfig(unix_server->Url(), "", "pylon-test-token"))) {
    std::fprintf(stderr, "pylon apiserver: cannot write %s\n", opts->kubeconfig_unix_out.c_str());
    return 1;
  }
  if (!opts->kubeconfig_out.empty() &&
      !write_kubeconfig(opts->kubeconfig_out, MakeKubeconfig(url, ca_pem, "pylon-test-token"))) {
    std::fprintf(stderr, "pylon apiserver: cannot write %s\n", opts->kubeconfig_out.c_str());
    return 1;
  }
  log::Info("serving", {{"url", url}, {"tls", opts->tls ? "true" : "false"}});
  std::printf("%s\n", url.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log::Info("stopping", {{"signal", std::to_string(sig)}});
  store.CloseAllWatches();
  if (unix_server) unix_server->Stop();
  (*server)->Stop();
  return 0;
}

}  // namespace pylon
