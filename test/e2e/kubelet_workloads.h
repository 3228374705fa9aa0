// Workloads of the kubelet lab (docs/lab.md "Kubelet lab"): Deployments of the lab's echo image
// (scripts/lab-images.sh `echo`: `pylon-dev lab serve` answering "pod=<name> node=<node>"), and the
// Ready pods of one. Shared by the kubelet lab's tests.
#pragma once

#include <string>
#include <vector>

#include "e2e_lab.h"

namespace pylon::e2e {

// The port of the echo pods' long-lived flows (`lab serve --echo-port`, lab::StreamSet).
inline constexpr int kEchoFlowPort = 9000;

// A Deployment `app` (label app: <app>, the selector of ServiceYaml(app, ...)) of `replicas` echo
// pods answering HTTP on port 8080 and echoing flows on kEchoFlowPort, spread one per node, Ready
// once they answer.
inline std::string EchoDeploymentYaml(const std::string& app, int replicas) {
  return R"yaml(apiVersion: apps/v1
kind: Deployment
metadata:
  name: )yaml" +
         app + R"yaml(
  namespace: default
spec:
  replicas: )yaml" +
         std::to_string(replicas) +
         R"yaml(
  selector:
    matchLabels:
      app: )yaml" +
         app + R"yaml(
  template:
    metadata:
      labels:
        app: )yaml" +
         app + R"yaml(
    spec:
      terminationGracePeriodSeconds: 5
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels:
            app: )yaml" +
         app + R"yaml(
      containers:
      - name: echo
        image: pylon-lab-echo:lab
        imagePullPolicy: Never
        args: ["--port", "8080", "--text", "pod=$(POD_NAME) node=$(NODE_NAME)",
               "--echo-port", "9000"]
        env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        ports:
        - containerPort: 8080
        - containerPort: 9000
        readinessProbe:
          httpGet:
            path: /
            port: 8080
          periodSeconds: 1
)yaml";
}

// ServiceYaml with a second port, "flows" kEchoFlowPort → the pods' echo port.
inline std::string WithFlowPort(std::string service_yaml) {
  const std::string port = std::to_string(kEchoFlowPort);
  service_yaml +=
      "  - name: flows\n    port: " + port + "\n    protocol: TCP\n    targetPort: " + port + "\n";
  // Two ports need names.
  const std::string first = "  ports:\n  - port:";
  const auto at = service_yaml.find(first);
  if (at != std::string::npos) {
    service_yaml.replace(at, first.size(), "  ports:\n  - name: http\n    port:");
  }
  return service_yaml;
}

struct RunningPod {
  std::string name;
  std::string node;
  std::vector<std::string> ips;
  std::vector<std::string> images;  // of its init containers and containers (spec)
};

// The pods of `selector` in `ns` that run, are Ready and are not being deleted; `total` (if
// given) gets how many pods match at all.
inline std::vector<RunningPod> ReadyPods(const lab::Lab& lab, const std::string& selector,
                                         const std::string& ns = "default",
                                         size_t* total = nullptr) {
  std::vector<RunningPod> out;
  auto text = lab.Kubectl({"get", "pods", "-n", ns, "-l", selector, "-o", "json"});
  Json pods = text ? Json::parse(*text, nullptr, false) : Json();
  if (total != nullptr) *total = pods.is_object() ? pods.value("items", Json::array()).size() : 0;
  if (!pods.is_object()) return out;
  for (const auto& p : pods.value("items", Json::array())) {
    if (p["metadata"].contains("deletionTimestamp")) continue;
    if (p["status"].value("phase", "") != "Running") continue;
    bool ready = false;
    for (const auto& c : p["status"].value("conditions", Json::array())) {
      if (c.value("type", "") == "Ready" && c.value("status", "") == "True") ready = true;
    }
    if (!ready) continue;
    RunningPod e;
    e.name = p["metadata"].value("name", "");
    e.node = p["spec"].value("nodeName", "");
    for (const auto& ip : p["status"].value("podIPs", Json::array())) {
      e.ips.push_back(ip.value("ip", ""));
    }
    // From the spec: the kubelet's status reports one of the names of the image it ran, which
    // for two tags of the same image can be either.
    for (const char* kind : {"initContainers", "containers"}) {
      for (const auto& c : p["spec"].value(kind, Json::array())) {
        e.images.push_back(c.value("image", ""));
      }
    }
    out.push_back(e);
  }
  return out;
}

// Builds the echo image with this build's pylon-dev and imports it into every node.
inline void ImportEchoImage(lab::Lab& lab) {
  auto archive = lab.BuildImage({"echo", test_support::DevBinary()});
  ASSERT_TRUE(archive) << archive.error().message();
  auto imported = lab.ImportImage(*archive);
  ASSERT_TRUE(imported) << imported.error().message();
}

}  // namespace pylon::e2e
