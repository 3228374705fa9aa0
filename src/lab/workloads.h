// Workloads of the kubelet lab (docs/lab.md "Kubelet lab"): Deployments of the lab's echo image
// (scripts/lab-images.sh `echo`: `pylon-dev lab serve` answering "pod=<name> node=<node>" on 8080
// and echoing long-lived flows on kEchoFlowPort), and the Ready pods of a selector. Used by
// `pylon-dev lab lifecycle` and the kubelet lab's tests.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "lab/lab.h"

namespace pylon::lab {

// The port of the echo pods' long-lived flows (`lab serve --echo-port`, StreamSet).
inline constexpr int kEchoFlowPort = 9000;

// A Deployment `app` (label app: <app>) of `replicas` echo pods, spread one per node, Ready once
// they answer.
std::string EchoDeploymentYaml(const std::string& app, int replicas);

// A RequireDualStack LoadBalancer Service `name` of ServiceGroup `group` selecting app: `app`:
// port 80 → the pods' 8080 (HTTP) and kEchoFlowPort (flows).
std::string EchoServiceYaml(const std::string& name, const std::string& group,
                            const std::string& app);

struct RunningPod {
  std::string name;
  std::string node;
  std::vector<std::string> ips;
  std::vector<std::string> images;  // of its init containers and containers (spec)
};

// The pods of `selector` in `ns` that run, are Ready and are not being deleted; `total` (if
// given) gets how many pods match at all.
std::vector<RunningPod> ReadyPods(const Lab& lab, const std::string& selector,
                                  const std::string& ns = "default", size_t* total = nullptr);

// Builds the echo image with `dev_binary` (pylon-dev) and imports it into every node.
Status ImportEchoImage(const Lab& lab, const std::string& dev_binary);

}  // namespace pylon::lab
