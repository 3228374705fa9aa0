#include "lab/control_plane.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/fd.h"
#include "common/log.h"
#include "k8s/curl_transport.h"
#include "k8s/rest_config.h"
#include "lab/files.h"

#ifndef PYLON_K8S_BIN_DIR
#define PYLON_K8S_BIN_DIR ""
#endif

namespace pylon::lab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string RandomHex(size_t bytes) {
  std::ifstream rnd("/dev/urandom", std::ios::binary);
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (size_t i = 0; i < bytes; ++i) {
    unsigned char b = 0;
    rnd.read(reinterpret_cast<char*>(&b), 1);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The last lines of a log, for an error message.
std::string Tail(const std::string& path, size_t lines = 15) {
  std::string text = ReadText(path);
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos != std::string::npos && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

constexpr const char* kAuditPolicy = R"(apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
)";

}  // namespace

std::string K8sBinDir() {
  const char* env = std::getenv("PYLON_K8S_BIN_DIR");
  if (env != nullptr && *env != '\0') return env;
  return PYLON_K8S_BIN_DIR;
}

Result<int> FreeLoopbackPort() {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return FailErrno(errno, "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return FailErrno(errno, "bind 127.0.0.1:0");
  }
  socklen_t len = sizeof a;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return FailErrno(errno, "getsockname");
  }
  return static_cast<int>(ntohs(a.sin_port));
}

Result<int> FreeLoopbackPortIn(int first, int last) {
  std::ifstream rnd("/dev/urandom", std::ios::binary);
  unsigned int start = 0;
  rnd.read(reinterpret_cast<char*>(&start), sizeof start);
  const int span = last - first + 1;
  for (int i = 0; i < span; ++i) {
    const int port = first + static_cast<int>((start + static_cast<unsigned int>(i)) %
                                              static_cast<unsigned int>(span));
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return FailErrno(errno, "socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return port;
  }
  return Fail(ErrorCode::kExhausted,
              "no free port on 127.0.0.1 in " + std::to_string(first) + "-" + std::to_string(last));
}

ControlPlane::ControlPlane(ControlPlaneConfig config) : config_(std::move(config)) {
  if (config_.bin_dir.empty()) config_.bin_dir = K8sBinDir();
}

ControlPlane::~ControlPlane() {
  if (!detached_) Stop();
}

std::string ControlPlane::Server() const { return "https://127.0.0.1:" + std::to_string(port_); }

Status ControlPlane::MakePki() {
  const std::string pki = Path("pki");
  if (fs::exists(pki + "/sa.pub") && fs::exists(Path("tokens.csv"))) {
    // Reused directory: keep its CA (kubeconfigs already trust it) and admin token.
    std::string line = ReadText(Path("tokens.csv"));
    admin_token_ = line.substr(0, line.find(','));
    return Ok();
  }
  std::error_code ec;
  fs::create_directories(pki, ec);
  if (ec) return Fail(ErrorCode::kSystem, "create " + pki + ": " + ec.message());
  const std::string san =
      "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
      "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1\n";
  if (auto s = WriteTextFile(pki + "/san.cnf", san); !s) return s;
  const std::vector<std::vector<std::string>> steps = {
      {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", pki + "/ca.key",
       "-out", pki + "/ca.crt", "-days", "3650", "-subj", "/CN=pylon-lab-ca"},
      {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", pki + "/apiserver.key", "-out",
       pki + "/apiserver.csr", "-subj", "/CN=kube-apiserver"},
      {"openssl", "x509", "-req", "-in", pki + "/apiserver.csr", "-CA", pki + "/ca.crt", "-CAkey",
       pki + "/ca.key", "-CAcreateserial", "-out", pki + "/apiserver.crt", "-days", "3650",
       "-extfile", pki + "/san.cnf"},
      {"openssl", "genrsa", "-out", pki + "/sa.key", "2048"},
      {"openssl", "rsa", "-in", pki + "/sa.key", "-pubout", "-out", pki + "/sa.pub"},
  };
  for (const auto& argv : steps) {
    if (auto r = RunCommandChecked(argv); !r) return Fail(r.error().Wrap("make certificates"));
  }
  admin_token_ = RandomHex(24);
  // token,user,uid,"group1,group2"
  return WriteTextFile(Path("tokens.csv"), admin_token_ + ",admin,admin,\"system:masters\"\n",
                       0600);
}

Status ControlPlane::MakeKubeletClientCert() {
  const std::string pki = Path("pki");
  if (fs::exists(pki + "/kubelet-client.crt")) return Ok();
  const std::vector<std::vector<std::string>> steps = {
      {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", pki + "/kubelet-client.key",
       "-out", pki + "/kubelet-client.csr", "-subj",
       "/O=system:masters/CN=kube-apiserver-kubelet-client"},
      {"openssl", "x509", "-req", "-in", pki + "/kubelet-client.csr", "-CA", pki + "/ca.crt",
       "-CAkey", pki + "/ca.key", "-CAcreateserial", "-out", pki + "/kubelet-client.crt", "-days",
       "3650"},
  };
  for (const auto& argv : steps) {
    if (auto r = RunCommandChecked(argv); !r) return Fail(r.error().Wrap("make certificates"));
  }
  return Ok();
}

Status ControlPlane::StartEtcd() {
  auto c = FreeLoopbackPort();
  if (!c) return Fail(c.error());
  auto p = FreeLoopbackPort();
  if (!p) return Fail(p.error());
  etcd_port_ = *c;
  etcd_peer_port_ = *p;
  const std::string client = "http://127.0.0.1:" + std::to_string(etcd_port_);
  const std::string peer = "http://127.0.0.1:" + std::to_string(etcd_peer_port_);
  SpawnOptions o;
  o.argv = {Binary("etcd"),
            "--name=lab",
            "--data-dir=" + Path("etcd"),
            "--listen-client-urls=" + client,
            "--advertise-client-urls=" + client,
            "--listen-peer-urls=" + peer,
            "--initial-advertise-peer-urls=" + peer,
            "--initial-cluster=lab=" + peer,
            "--unsafe-no-fsync=true",
            "--log-level=warn"};
  o.log_path = Path("etcd.log");
  auto proc = Process::Spawn(o);
  if (!proc) return Fail(proc.error().Wrap("start etcd"));
  etcd_ = std::move(*proc);
  return Ok();
}

Status ControlPlane::StartApiserver() {
  if (port_ == 0) {
    auto p = FreeLoopbackPort();
    if (!p) return Fail(p.error());
    port_ = *p;
  }
  const std::string pki = Path("pki");
  SpawnOptions o;
  const bool advertise = !config_.advertise_address.empty();
  o.argv = {Binary("kube-apiserver"),
            "--etcd-servers=http://127.0.0.1:" + std::to_string(etcd_port_),
            "--bind-address=127.0.0.1",
            "--advertise-address=" + (advertise ? config_.advertise_address : "127.0.0.1"),
            "--secure-port=" + std::to_string(port_),
            "--cert-dir=" + pki,
            "--tls-cert-file=" + pki + "/apiserver.crt",
            "--tls-private-key-file=" + pki + "/apiserver.key",
            "--client-ca-file=" + pki + "/ca.crt",
            "--token-auth-file=" + Path("tokens.csv"),
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file=" + pki + "/sa.pub",
            "--service-account-signing-key-file=" + pki + "/sa.key",
            "--service-cluster-ip-range=" + config_.service_cidrs,
            "--allow-privileged=true",
            std::string("--endpoint-reconciler-type=") + (advertise ? "lease" : "none"),
            "--profiling=false",
            "--v=1"};
  if (config_.audit) {
    if (auto s = WriteTextFile(Path("audit-policy.yaml"), kAuditPolicy); !s) return s;
    o.argv.insert(o.argv.end(), {"--audit-policy-file=" + Path("audit-policy.yaml"),
                                 "--audit-log-path=" + AuditLog(), "--audit-log-format=json",
                                 "--audit-log-mode=blocking"});
  }
  if (config_.kubelet_client_cert) {
    o.argv.insert(o.argv.end(), {"--kubelet-client-certificate=" + pki + "/kubelet-client.crt",
                                 "--kubelet-client-key=" + pki + "/kubelet-client.key",
                                 "--kubelet-preferred-address-types=Hostname"});
  }
  o.argv.insert(o.argv.end(), config_.apiserver_args.begin(), config_.apiserver_args.end());
  if (!config_.hosts_file.empty()) {
    // unshare execs sh, sh execs the API server: the pid stays the API server's.
    std::vector<std::string> argv = {"unshare",
                                     "--mount",
                                     "--propagation",
                                     "private",
                                     "sh",
                                     "-c",
                                     "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
                                     config_.hosts_file};
    argv.insert(argv.end(), o.argv.begin(), o.argv.end());
    o.argv = std::move(argv);
  }
  o.log_path = ApiserverLog();
  auto proc = Process::Spawn(o);
  if (!proc) return Fail(proc.error().Wrap("start kube-apiserver"));
  apiserver_ = std::move(*proc);
  return WaitReady();
}

Status ControlPlane::WaitReady() {
  // One HTTPS connection polled every 250 ms (a kubectl process per poll cost CPU the starting
  // API server needs).
  auto rc = k8s::LoadKubeconfig(AdminKubeconfig());
  if (!rc) return Fail(rc.error());
  rc->connect_timeout = 2s;
  rc->request_timeout = 5s;
  auto transport = k8s::CurlTransport::Create(*rc);
  if (!transport) return Fail(transport.error());
  k8s::HttpRequest req;
  req.path = "/readyz";
  req.accept = "text/plain";
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!apiserver_.running()) {
      return Fail(ErrorCode::kUnavailable,
                  "kube-apiserver exited; " + ApiserverLog() + ":\n" + Tail(ApiserverLog()));
    }
    auto r = (*transport)->Do(req);
    if (r && r->status == 200) return Ok();
    last = r ? "HTTP " + std::to_string(r->status) : r.error().message();
    std::this_thread::sleep_for(250ms);
  }
  return Fail(ErrorCode::kUnavailable, "kube-apiserver not ready after 90 s (" + last + "); see " +
                                           ApiserverLog() + ":\n" + Tail(ApiserverLog()));
}

Status ControlPlane::StartControllers() {
  // Admin credentials (system:masters), HTTPS on a free loopback port, one instance each.
  auto start = [this](const std::string& name, std::vector<std::string> extra,
                      Process* proc) -> Status {
    auto port = FreeLoopbackPort();
    if (!port) return Fail(port.error());
    SpawnOptions o;
    o.argv = {Binary(name),
              "--kubeconfig=" + AdminKubeconfig(),
              "--authentication-kubeconfig=" + AdminKubeconfig(),
              "--authorization-kubeconfig=" + AdminKubeconfig(),
              "--bind-address=127.0.0.1",
              "--secure-port=" + std::to_string(*port),
              "--leader-elect=false",
              "--v=1"};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.log_path = Path(name + ".log");
    auto p = Process::Spawn(o);
    if (!p) return Fail(p.error().Wrap("start " + name));
    *proc = std::move(*p);
    return Ok();
  };
  // The root CA for the kube-root-ca.crt ConfigMaps that projected ServiceAccount tokens mount.
  if (auto s = start(
          "kube-controller-manager",
          {"--root-ca-file=" + CaFile(), "--service-account-private-key-file=" + Path("pki/sa.key"),
           "--use-service-account-credentials=false", "--cluster-name=pylon-lab"},
          &controller_manager_);
      !s) {
    return s;
  }
  return start("kube-scheduler", {}, &scheduler_);
}

Status ControlPlane::CheckBinaries() const {
  std::vector<std::string> need = {"etcd", "kube-apiserver", "kubectl"};
  if (config_.controllers) need.insert(need.end(), {"kube-controller-manager", "kube-scheduler"});
  for (const auto& b : need) {
    if (access(Binary(b).c_str(), X_OK) != 0) {
      return Fail(ErrorCode::kNotFound,
                  "no " + b + " in \"" + config_.bin_dir +
                      "\": run scripts/k8s-components.sh (it builds the Kubernetes components) "
                      "and set PYLON_K8S_BIN_DIR to the directory it prints");
    }
  }
  return Ok();
}

Status ControlPlane::Start() {
  if (config_.dir.empty()) return Fail(ErrorCode::kInvalidArgument, "control plane: no dir");
  if (auto s = CheckBinaries(); !s) return s;
  std::error_code ec;
  fs::create_directories(config_.dir, ec);
  if (ec) return Fail(ErrorCode::kSystem, "create " + config_.dir + ": " + ec.message());
  if (auto s = MakePki(); !s) return s;
  if (config_.kubelet_client_cert) {
    if (auto s = MakeKubeletClientCert(); !s) return s;
  }
  if (auto s = StartEtcd(); !s) return s;
  auto p = FreeLoopbackPort();
  if (!p) return Fail(p.error());
  port_ = *p;
  if (auto s = WriteKubeconfig(AdminKubeconfig(), admin_token_); !s) {
    Stop();
    return s;
  }
  if (auto s = StartApiserver(); !s) {
    Stop();
    return s;
  }
  if (config_.controllers) {
    if (auto s = StartControllers(); !s) {
      Stop();
      return s;
    }
  }
  return Ok();
}

void ControlPlane::Stop() {
  scheduler_.Stop(5s);
  controller_manager_.Stop(5s);
  apiserver_.Stop(5s);
  etcd_.Stop(5s);
}

std::map<std::string, int> ControlPlane::Pids() const {
  std::map<std::string, int> out;
  if (etcd_.pid() > 0) out["etcd"] = etcd_.pid();
  if (apiserver_.pid() > 0) out["kube-apiserver"] = apiserver_.pid();
  if (controller_manager_.pid() > 0) out["kube-controller-manager"] = controller_manager_.pid();
  if (scheduler_.pid() > 0) out["kube-scheduler"] = scheduler_.pid();
  return out;
}

void ControlPlane::Detach() {
  detached_ = true;
  etcd_.Detach();
  apiserver_.Detach();
  controller_manager_.Detach();
  scheduler_.Detach();
}

Status ControlPlane::StopApiserver() {
  apiserver_.Stop(5s);
  return Ok();
}

Status ControlPlane::SignalApiserver(int sig) { return apiserver_.Signal(sig); }

Result<std::string> ControlPlane::Kubectl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {KubectlBinary(), "--kubeconfig", AdminKubeconfig(),
                                   "--cache-dir", Path("kubectl-cache")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommandChecked(argv);
}

Result<std::string> ControlPlane::ServiceAccountToken(const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& duration) const {
  std::vector<std::string> argv = {KubectlBinary(), "--kubeconfig", AdminKubeconfig(), "create",
                                   "token",         name,           "--namespace",     ns,
                                   "--duration",    duration};
  std::string out;
  auto rc = RunCommand(argv, &out, "", /*merge_stderr=*/false);
  if (!rc) return Fail(rc.error());
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (*rc != 0 || out.empty()) {
    return Fail(ErrorCode::kUnavailable, "TokenRequest for serviceaccount " + ns + "/" + name +
                                             " failed (kubectl create token exited " +
                                             std::to_string(*rc) + ")");
  }
  return out;
}

Status ControlPlane::WriteKubeconfig(const std::string& path, const std::string& token,
                                     const std::string& server) const {
  std::ostringstream y;
  y << "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n"
    << "    server: " << (server.empty() ? Server() : server) << "\n"
    << "    certificate-authority: " << CaFile() << "\n"
    << "users:\n- name: user\n  user:\n    token: " << token << "\n"
    << "contexts:\n- name: lab\n  context:\n    cluster: lab\n    user: user\n"
    << "current-context: lab\n";
  return WriteTextFile(path, y.str(), 0600);
}

Status ControlPlane::WriteServiceAccountKubeconfig(const std::string& path, const std::string& ns,
                                                   const std::string& name,
                                                   const std::string& server) const {
  auto token = ServiceAccountToken(ns, name);
  if (!token) return Fail(token.error());
  return WriteKubeconfig(path, *token, server);
}

}  // namespace pylon::lab
