// `pylon-dev fault-proxy`: flag parsing and wiring of the fault-injecting reverse proxy.
#include "faultproxy/command.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/cli.h"
#include "common/log.h"
#include "faultproxy/proxy.h"

namespace pylon::faultproxy {
namespace {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(ErrorCode::kNotFound, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int RunFaultProxyCommand(int argc, char** argv) {
  ProxyOptions o;
  std::string ca_file, address_out, faults_json;
  log::Level level = log::Level::kInfo;
  auto app = cli::NewCommand(
      "pylon-dev fault-proxy",
      "A reverse proxy in front of kube-apiserver that injects faults (docs/fault-proxy.md).\n"
      "Clients speak plain HTTP to it with their own bearer token; it forwards over TLS.\n"
      "Control API: GET|POST /pylon/faults, POST /pylon/faults/cut-watches,\n"
      "POST /pylon/faults/compact.");
  app->add_option("--upstream", o.upstream, "the kube-apiserver to forward to (required)")
      ->type_name("URL");
  app->add_option("--upstream-ca", ca_file,
                  "CA certificate (PEM) that signed the upstream's certificate")
      ->type_name("FILE");
  app->add_option("--listen", o.listen_host, "listen address")->type_name("HOST");
  app->add_option("--port", o.port, "listen port (0: pick a free one)")->type_name("PORT");
  app->add_option("--address-out", address_out, "write http://HOST:PORT to PATH once listening")
      ->type_name("PATH");
  app->add_option("--etcd", o.etcd, "etcd client URL, for POST /pylon/faults/compact")
      ->type_name("URL");
  app->add_option("--faults", faults_json, "initial fault settings (see POST /pylon/faults)")
      ->type_name("JSON");
  cli::AddLogLevel(*app, &level);
  if (auto code = cli::Parse(*app, argc, argv)) return *code;
  // Checked after parsing, so that a bad flag is what a bad command line reports first.
  if (o.upstream.empty()) return cli::UsageError(*app, "--upstream is required");
  log::SetComponent("fault-proxy");
  log::SetLevel(level);
  if (!ca_file.empty()) {
    auto pem = ReadWholeFile(ca_file);
    if (!pem) return cli::UsageError(*app, "--upstream-ca: " + pem.error().message());
    o.upstream_ca_pem = *pem;
  }
  FaultSettings initial;
  if (!faults_json.empty()) {
    Json j = Json::parse(faults_json, nullptr, false);
    auto s = j.is_discarded() ? Result<FaultSettings>(Fail(ErrorCode::kInvalidArgument, "not JSON"))
                              : FaultSettings::FromJson(j);
    if (!s) return cli::UsageError(*app, "--faults: " + s.error().message());
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
    std::fprintf(stderr, "pylon-dev fault-proxy: %s\n", proxy.error().message().c_str());
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
        std::fprintf(stderr, "pylon-dev fault-proxy: cannot write %s\n", tmp.c_str());
        return 1;
      }
    }
    if (std::rename(tmp.c_str(), address_out.c_str()) != 0) {
      std::fprintf(stderr, "pylon-dev fault-proxy: cannot write %s\n", address_out.c_str());
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

const cli::Command kFaultProxyCommand = {
    "fault-proxy", "a fault-injecting reverse proxy in front of kube-apiserver (tests)",
    RunFaultProxyCommand};

}  // namespace pylon::faultproxy
