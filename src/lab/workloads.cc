#include "lab/workloads.h"

#include <nlohmann/json.hpp>

namespace pylon::lab {

using Json = nlohmann::json;

std::string EchoDeploymentYaml(const std::string& app, int replicas) {
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

std::string EchoServiceYaml(const std::string& name, const std::string& group,
                            const std::string& app) {
  const std::string flows = std::to_string(kEchoFlowPort);
  return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name +
         "\n  namespace: default\n  annotations:\n    purelb.io/service-group: " + group +
         "\nspec:\n  type: LoadBalancer\n  ipFamilyPolicy: RequireDualStack\n  ipFamilies:\n"
         "  - IPv4\n  - IPv6\n  selector:\n    app: " +
         app +
         "\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n    targetPort: 8080\n"
         "  - name: flows\n    port: " +
         flows + "\n    protocol: TCP\n    targetPort: " + flows + "\n";
}

std::vector<RunningPod> ReadyPods(const Lab& lab, const std::string& selector,
                                  const std::string& ns, size_t* total) {
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

Status ImportEchoImage(const Lab& lab, const std::string& dev_binary) {
  auto archive = lab.BuildImage({"echo", dev_binary});
  if (!archive) return Fail(archive.error());
  return lab.ImportImage(*archive);
}

}  // namespace pylon::lab
