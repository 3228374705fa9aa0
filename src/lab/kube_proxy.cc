#include "lab/kube_proxy.h"

namespace pylon::lab {

std::vector<std::string> KubeProxyArgv(const std::string& binary, const std::string& kubeconfig,
                                       const std::string& node, const std::string& mode) {
  return {binary, "--kubeconfig=" + kubeconfig, "--hostname-override=" + node,
          "--proxy-mode=" + mode, std::string("--cluster-cidr=") + kClusterCidrs,
          "--healthz-bind-address=0.0.0.0:" + std::to_string(kKubeProxyHealthzPort),
          "--metrics-bind-address=127.0.0.1:10249",
          // Node IPs only (the Node objects' InternalIPs): NodePorts and the health check
          // ports of externalTrafficPolicy Local Services listen there.
          "--nodeport-addresses=primary", "--conntrack-max-per-core=0", "--oom-score-adj=0",
          "--v=2"};
}

}  // namespace pylon::lab
