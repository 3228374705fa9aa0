// The kubelet lab (`pylon-dev lab up --kubelet`, docs/lab.md "Kubelet lab"): every node runs its
// own containerd and a real kubelet, in the node's network namespace and the host's mount
// namespace, so that pods are started by a kubelet as in a cluster.
//
// Per node, everything lives in <lab dir>/kubelet-<node>/ (KubeletNode):
//   containerd.toml, containerd.sock, containerd-ttrpc.sock, containerd/{root,state,opt}, runc/
//   the kubelet configuration file, kubelet/ (--root-dir), pki/ (the kubelet's self-signed serving
//   certificate), pod-logs/ (podLogsDir), cni/net.d/ (the node's CNI bridge), cni/ipam/
//   (host-local's leases), kubelet.sock (the API server's way in to the kubelet, see lab.h)
// and its cgroups are /pylon-<lab>-<node> in every hierarchy (cgroupRoot).
//
// What this file holds: the configuration texts (pure functions of a KubeletNode), the kernel
// settings the kubelet rewrites (saved before, restored after) and the teardown helpers that leave
// the machine as it was: no mount, cgroup, shim or container process of a node survives
// TearDownKubeletNode.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace pylon::lab {

// The sandbox image of every node's containerd, imported from scripts/lab-images.sh's archive.
inline constexpr const char* kPauseImage = "registry.k8s.io/pause:3.10";
// The address the API server advertises in kubelet labs (the `kubernetes` Service's endpoint): in
// every node it is on lo, where a forwarder to the API server listens on the API server's port.
// Pods reach the API server at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT (10.96.0.1:443)
// through kube-proxy, as in a cluster. A private address used only inside the lab's namespaces.
inline constexpr const char* kApiAdvertiseAddress = "10.250.0.1";
// The ServiceAccount the kubelets authenticate as, bound to the built-in ClusterRole system:node.
inline constexpr const char* kKubeletRbac = R"(apiVersion: v1
kind: ServiceAccount
metadata:
  name: pylon-lab-kubelet
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: pylon-lab:kubelet
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node
subjects:
- kind: ServiceAccount
  name: pylon-lab-kubelet
  namespace: kube-system
)";

// One node's runtime: where its files are and what its configuration says.
struct KubeletNode {
  std::string lab;   // the lab's name
  std::string node;  // node1, ...
  int index = 1;  // 1-based: the node's pod CIDRs are 10.244.<index>.0/24, fd00:10:244:<index>::/64
  std::string dir;   // <lab dir>/kubelet-<node>
  std::string ipv4;  // the node's addresses (--node-ip)
  std::string ipv6;
  int kubelet_port = 10250;  // the kubelet's API port inside the node
  std::string ca_file;       // client certificates the kubelet accepts (the API server's)
  std::string kubeconfig;    // the kubelet's credentials
  std::string runc = "/usr/sbin/runc";
  std::string cni_bin_dir = "/usr/lib/cni";

  std::string Path(const std::string& file) const { return dir + "/" + file; }
  std::string ContainerdSocket() const { return Path("containerd.sock"); }
  std::string ContainerdConfig() const { return Path("containerd.toml"); }
  std::string KubeletConfig() const { return Path("kubelet.yaml"); }
  std::string RootDir() const { return Path("kubelet"); }
  std::string KubeletSocket() const { return Path("kubelet.sock"); }
  // "/pylon-<lab>-<node>": the kubelet's cgroupRoot, in every cgroup hierarchy.
  std::string CgroupRoot() const { return "/pylon-" + lab + "-" + node; }
};

// containerd 1.6's configuration (version 2): own root, state, sockets, runc state; CRI with the
// pause image, restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE), cgroupfs, the node's
// CNI configuration, and the pods' network namespaces under the state directory.
std::string ContainerdConfigToml(const KubeletNode& n);
// The KubeletConfiguration: cgroup v1 allowed, cgroupfs under CgroupRoot(), no swap check, no
// local storage isolation, eviction on memory only, image GC off, webhook authorization with
// x509 client certificates of ca_file.
std::string KubeletConfigYaml(const KubeletNode& n);
// The CNI network list: a bridge cni0 with the node's gateway addresses, host-local IPAM on both
// pod CIDRs (from .100 / ::100 on, the lab's own pods use .11 - .19), leases under cni/ipam.
std::string CniConfigJson(const KubeletNode& n);
std::vector<std::string> ContainerdArgv(const KubeletNode& n);
std::vector<std::string> KubeletArgv(const std::string& binary, const KubeletNode& n);
// Makes the node's directories, writes its configuration files and creates its cgroupRoot in every
// cgroup hierarchy (the kubelet refuses a cgroupRoot that does not exist).
Status PrepareKubeletNode(const KubeletNode& n);

// --- Kernel settings the kubelet rewrites at start (container_manager_linux.go): /proc/sys paths.
struct KernelSetting {
  std::string key;  // "vm/overcommit_memory"
  std::string value;
  bool operator==(const KernelSetting&) const = default;
};
const std::vector<std::string>& KubeletKernelSettingKeys();
Result<std::vector<KernelSetting>> ReadKernelSettings(const std::vector<std::string>& keys,
                                                      const std::string& proc_sys = "/proc/sys");
// Writes each value back; every key is tried, the first failure is returned.
Status WriteKernelSettings(const std::vector<KernelSetting>& settings,
                           const std::string& proc_sys = "/proc/sys");
// "key=value" lines, and back.
std::string FormatKernelSettings(const std::vector<KernelSetting>& settings);
Result<std::vector<KernelSetting>> ParseKernelSettings(const std::string& text);

// --- Teardown.
// The mount points of /proc/self/mountinfo text at or below `dir`, deepest first (octal escapes
// decoded).
std::vector<std::string> MountPointsUnder(const std::string& mountinfo, const std::string& dir);
// The mount points of every cgroup (v1) and cgroup2 hierarchy in /proc/self/mountinfo text.
std::vector<std::string> CgroupHierarchies(const std::string& mountinfo);
// Whether a /proc/<pid>/cmdline (NUL separated) is a containerd shim of the containerd at
// `socket` ("-address <socket>").
bool IsShimOf(const std::string& cmdline, const std::string& socket);

// Detaches every mount at or below `dir` (a few rounds: stacked mounts); fails if one remains.
Status UnmountUnder(const std::string& dir);
// SIGKILLs every process in `cgroup` (and below) of every hierarchy, then removes the cgroups,
// deepest first, waiting up to `timeout_ms` for the killed processes to leave them.
Status RemoveCgroupTree(const std::string& cgroup, int timeout_ms = 5000);
// The pids of the shims of the containerd at `socket`.
std::vector<pid_t> ShimPids(const std::string& socket);
// Kills what a node's runtime left when its kubelet and containerd are gone or going: the
// containers (by cgroup), the shims, then unmounts everything under the node's directory, removes
// its cgroups, the kubelet's /var/log/containers links into it, and the runtime's state (root,
// state, the kubelet's root dir; logs and configuration stay). Each step runs even if one before
// failed; the first failure is returned.
Status TearDownKubeletNode(const KubeletNode& n);

}  // namespace pylon::lab
