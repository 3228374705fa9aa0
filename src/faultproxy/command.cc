// `pylon fault-proxy`: flag parsing and wiring of the fault-injecting reverse proxy.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/log.h"
#include "faultproxy/proxy.h"

namespace pylon::faultproxy {
namespace {

constexpr const char* kUsage =
    "usage: pylon fault-proxy --upstream https://127.0.0.1:PORT --upstream-ca FILE [flags]\n\n"
    "A reverse proxy in front of kube-apiserver that injects faults (docs/fault-proxy.md).\n"
    "Clients speak plain HTTP to it with their own bearer token; it forwards over TLS.\n\n"
    "  --upstream URL        the kube-apiserver to forward to (required)\n"
    "  --upstream-ca FILE    CA certificate (PEM) that signed the upstream's certificate\n"
    "  --listen HOST         listen address (default 127.0.0.1)\n"
    "  --port N              listen port (default 0: pick a free one)\n"
    "  --address-out PATH    write http://HOST:PORT to PATH once listening\n"
    "  --etcd URL            etcd client URL, for POST /pylon/faults/compact\n"
    "  --faults JSON         initial fault settings (see POST /pylon/faults)\n"
    "  --log-level LEVEL     debug|info|warn|error (default info)\n\n"
    "Control API: GET|POST /pylon/faults, POST /pylon/faults/cut-watches,\n"
    "POST /pylon/faults/compact.\n";

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(ErrorCode::kNotFound, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int RunFaultProxyCommand(int argc, char** argv) {
  log::SetComponent("fault-proxy");
  ProxyOptions o;
  std::string ca_file, address_out, faults_json;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    static const std::set<std::string> kFlags = {"--upstream", "--upstream-ca", "--listen",
                                                 "--port",     "--address-out", "--etcd",
                                                 "--faults",   "--log-level"};
    if (kFlags.count(a) == 0) {
      std::fprintf(stderr, "pylon fault-proxy: unknown flag %s\n\n%s", a.c_str(), kUsage);
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "pylon fault-proxy: %s needs a value\n\n%s", a.c_str(), kUsage);
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--upstream") {
      o.upstream = v;
    } else if (a == "--upstream-ca") {
      ca_file = v;
    } else if (a == "--listen") {
      o.listen_host = v;
    } else if (a == "--port") {
      char* end = nullptr;
      long p = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || p < 0 || p > 65535) {
        std::fprintf(stderr, "pylon fault-proxy: bad --port %s\n", v.c_str());
        return 2;
      }
      o.port = static_cast<std::uint16_t>(p);
    } else if (a == "--address-out") {
      address_out = v;
    } else if (a == "--etcd") {
      o.etcd = v;
    } else if (a == "--faults") {
      faults_json = v;
    } else if (a == "--log-level") {
      log::Level level;
      if (!log::ParseLevel(v, &level)) {
        std::fprintf(stderr, "pylon fault-proxy: bad --log-level %s\n", v.c_str());
        return 2;
      }
      log::SetLevel(level);
    }
  }
  if (o.upstream.empty()) {
    std::fprintf(stderr, "pylon fault-proxy: --upstream is required\n\n%s", kUsage);
    return 2;
  }
  if (!ca_file.empty()) {
    auto pem = ReadWholeFile(ca_file);
    if (!pem) {
      std::fprintf(stderr, "pylon fault-proxy: --upstream-ca: %s\n", pem.error().message().c_str());
      return 2;
    }
    o.upstream_ca_pem = *pem;
  }
  FaultSettings initial;
  if (!faults_json.empty()) {
    Json j = Json::parse(faults_json, nullptr, false);
    auto s = j.is_discarded() ? Result<FaultSettings>(Fail(ErrorCode::kInvalidArgument, "not JSON"))
                              : FaultSettings::FromJson(j);
    if (!s) {
      std::fprintf(stderr, "pylon fault-proxy: --faults: %s\n", s.error().message().c_str());
      return 2;
    }
    initial = *s;
  }

  // Block the stop signals in every thread; the main thread waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto proxy = FaultProxy::Start(o, initial);
  if (!proxy) {
    std::fprintf(stderr, "pylon fault-proxy: %s\n", proxy.error().message().c_str());
    return 1;
  }
  std::string url = (*proxy)->Url();
  if (!address_out.empty()) {
    // Written atomically (rename), so a reader never sees half a file.
    std::string tmp = address_out + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << url << "\n";
      if (!f) {
        std::fprintf(stderr, "pylon fault-proxy: cannot write %s\n", tmp.c_str());
        return 1;
      }
    }
    if (std::rename(tmp.c_str(), address_out.c_str()) != 0) {
      std::fprintf(stderr, "pylon fault-proxy: cannot write %s\n", address_out.c_str());
      return 1;
    }
  }
  log::Info("serving", {{"url", url}, {"upstream", o.upstream}});
  std::printf("%s\n", url.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  log::Info("stopping", {{"signal", std::to_string(sig)}});
  (*proxy)->Stop();
  return 0;
}

}  // namespace pylon::faultproxy
