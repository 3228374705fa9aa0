// kube-proxy in the lab (docs/datapath.md): the real kube-proxy of the control plane's release,
// one per node, inside the node's network namespace, authenticated as the ServiceAccount
// kube-system/kube-proxy bound to the built-in ClusterRole system:node-proxier (what kubeadm
// does), reaching the API server at https://127.0.0.1:6443 in the node like the agents.
//
// Flags that matter in a network namespace (all measured on this kernel, docs/datapath.md):
//   --conntrack-max-per-core=0   nf_conntrack_max is global and read-only in a namespace: leave it
//   --oom-score-adj=0            lowering oom_score_adj needs CAP_SYS_RESOURCE in the init userns
//   --healthz-bind-address=0.0.0.0:10256, --metrics-bind-address=127.0.0.1:10249
// nf_conntrack_tcp_timeout_{established,close_wait} and route_localnet are per namespace:
// kube-proxy writes them in the node's namespace only.
#pragma once

#include <string>
#include <vector>

namespace pylon::lab {

inline constexpr int kKubeProxyHealthzPort = 10256;
// Pod CIDRs of the whole lab cluster (private ranges, used only inside the lab's namespaces).
inline constexpr const char* kClusterCidrs = "10.244.0.0/16,fd00:10:244::/48";

// The ServiceAccount kube-proxy runs as and its binding to system:node-proxier.
inline constexpr const char* kKubeProxyRbac = R"(apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-proxy
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: pylon-lab:kube-proxy
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-proxier
subjects:
- kind: ServiceAccount
  name: kube-proxy
  namespace: kube-system
)";

// The command line of kube-proxy for `node` (mode "nftables" or "iptables").
std::vector<std::string> KubeProxyArgv(const std::string& binary, const std::string& kubeconfig,
                                       const std::string& node, const std::string& mode);

}  // namespace pylon::lab
