// A real Kubernetes control plane for the lab and the end-to-end tests: etcd and kube-apiserver
// of the release that scripts/k8s-components.sh builds, run as child processes on loopback.
// TLS with a CA made for it, the RBAC authorizer, a
// service-account issuer (so the TokenRequest API mints tokens), the Service CIDRs of both
// families. The admin (system:masters) authenticates with a static token; components get
// ServiceAccount tokens, so the RBAC that deploy/ ships is the RBAC that is enforced.
//
// Everything lives in one directory: certificates, etcd's data, logs, kubeconfigs, the audit log.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "lab/process.h"

namespace pylon::lab {

struct ControlPlaneConfig {
  std::string dir;      // required; created if missing
  std::string bin_dir;  // kube-apiserver, etcd, kubectl, ...; default K8sBinDir()
  // Both families, in private ranges used only inside the lab's namespaces.
  std::string service_cidrs = "10.96.0.0/16,fd00:10:96::/112";
  bool audit = true;  // audit log of every request (metadata level) in audit.log
  std::vector<std::string> apiserver_args;  // extra kube-apiserver flags
  // --- For kubelets (the kubelet lab, kubelet.h) ---
  // kube-controller-manager and kube-scheduler beside the API server (admin credentials, loopback,
  // no leader election).
  bool controllers = false;
  // A client certificate (O=system:masters) the API server presents to kubelets, for logs, exec
  // and port-forward.
  bool kubelet_client_cert = false;
  // When set, kube-apiserver runs in a private mount namespace with this file bind-mounted on
  // /etc/hosts: how it finds kubelets by their Hostname address (lab.h). The host's /etc/hosts is
  // untouched.
  std::string hosts_file;
  // When set, --advertise-address and the lease endpoint reconciler: the `kubernetes` Service gets
  // this address and the secure port as its endpoint. Else 127.0.0.1 and no endpoints.
  std::string advertise_address;
};

// The directory with the Kubernetes binaries: $PYLON_K8S_BIN_DIR, else the one the build was
// configured with (scripts/build.sh runs scripts/k8s-components.sh). "" if neither is set.
std::string K8sBinDir();

class ControlPlane {
 public:
  explicit ControlPlane(ControlPlaneConfig config);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Makes certificates (once per directory), starts etcd and kube-apiserver, waits for /readyz,
  // writes the admin kubeconfig. On failure stops what it started; the error names the log.
  Status Start();
  // Whether etcd, kube-apiserver and kubectl are in the binary directory; the error says how to
  // build them.
  Status CheckBinaries() const;
  // Stops every process (etcd's data stays in the directory).
  void Stop();

  // The API server alone, etcd kept: a restart, or a hang (SIGSTOP / SIGCONT).
  Status StopApiserver();
  Status StartApiserver();
  Status SignalApiserver(int sig);

  const std::string& dir() const { return config_.dir; }
  std::string Path(const std::string& file) const { return config_.dir + "/" + file; }
  // https://127.0.0.1:<port>
  std::string Server() const;
  int port() const { return port_; }
  // http://127.0.0.1:<port> of etcd's client API (its v3 JSON gateway too: compaction in tests).
  std::string EtcdEndpoint() const { return "http://127.0.0.1:" + std::to_string(etcd_port_); }
  // The admin's bearer token (system:masters).
  const std::string& admin_token() const { return admin_token_; }
  std::string AdminKubeconfig() const { return Path("kubeconfig"); }
  std::string CaFile() const { return Path("pki/ca.crt"); }
  std::string AuditLog() const { return Path("audit.log"); }
  std::string ApiserverLog() const { return Path("kube-apiserver.log"); }
  std::string KubectlBinary() const { return config_.bin_dir + "/kubectl"; }
  std::string Binary(const std::string& name) const { return config_.bin_dir + "/" + name; }
  pid_t apiserver_pid() const { return apiserver_.pid(); }
  // Name → pid of every process running now (for a lab's state file).
  std::map<std::string, int> Pids() const;
  // Keeps the processes running after this object is destroyed (`pylon-dev lab up`).
  void Detach();

  // kubectl as the admin.
  Result<std::string> Kubectl(const std::vector<std::string>& args) const;
  // A token for a ServiceAccount from the TokenRequest API (kubectl create token). A year: a lab
  // left running for days keeps working (the agents and the allocator do not renew it).
  Result<std::string> ServiceAccountToken(const std::string& ns, const std::string& name,
                                          const std::string& duration = "8760h") const;
  // Writes a kubeconfig at `path` for `server` (default Server()) that authenticates with `token`
  // and trusts this control plane's CA.
  Status WriteKubeconfig(const std::string& path, const std::string& token,
                         const std::string& server = "") const;
  // ServiceAccountToken + WriteKubeconfig.
  Status WriteServiceAccountKubeconfig(const std::string& path, const std::string& ns,
                                       const std::string& name,
                                       const std::string& server = "") const;

 private:
  Status MakePki();
  Status MakeKubeletClientCert();
  Status StartEtcd();
  Status StartControllers();
  Status WaitReady();
  ControlPlaneConfig config_;
  int port_ = 0;
  int etcd_port_ = 0;
  int etcd_peer_port_ = 0;
  std::string admin_token_;
  Process etcd_;
  Process apiserver_;
  Process controller_manager_;
  Process scheduler_;
  bool detached_ = false;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to 0, read, close).
Result<int> FreeLoopbackPort();
// A TCP port in [first, last] free on 127.0.0.1 a moment ago, tried from a random start. For a
// port that must also be free inside a network namespace: below the kernel's ephemeral range
// (32768 on), no outgoing connection there can hold it.
Result<int> FreeLoopbackPortIn(int first, int last);

}  // namespace pylon::lab
