// Pylon installed into a kubelet lab as a user installs it (LabConfig::install; docs/lab.md
// "Installing Pylon as a user does"): the images built from the Dockerfile by scripts/image.sh and
// imported into every node's containerd, then `kubectl apply -k` or `helm install`. The allocator's
// Deployment and the agents' DaemonSet then run as pods, with the manifests' ServiceAccounts,
// probes, resources and securityContext.
#include <filesystem>
#include <sstream>

#include "lab/files.h"
#include "lab/lab.h"

namespace pylon::lab {

namespace fs = std::filesystem;

std::string Lab::ImageRepository(const std::string& target) {
  return target == "bird" ? "docker.io/library/pylon-bird" : "docker.io/library/pylon";
}

Status Lab::BuildAndImportPylonImages(const std::vector<std::string>& targets,
                                      const std::string& tag) {
  std::vector<std::string> argv = {"bash", config_.image_script, "--binary", config_.binary};
  if (!tag.empty()) argv.insert(argv.end(), {"--tag", tag});
  argv.insert(argv.end(), targets.begin(), targets.end());
  auto out = RunCommandChecked(argv);
  if (!out) return Fail(out.error());
  // Its last line: the archives, in the order of the targets.
  std::string text = *out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const size_t nl = text.rfind('\n');
  std::istringstream last(nl == std::string::npos ? text : text.substr(nl + 1));
  std::vector<std::string> archives;
  for (std::string a; last >> a;) archives.push_back(a);
  if (archives.size() != targets.size()) {
    return Fail(ErrorCode::kInternal, config_.image_script + " printed no archive per target: " +
                                          (nl == std::string::npos ? text : text.substr(nl + 1)));
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (auto s = ImportImage(archives[i], ImageRepository(targets[i])); !s) return s;
  }
  return Ok();
}

Status Lab::WaitRollout(const std::string& kind_name, std::chrono::seconds timeout) {
  auto r = Kubectl({"rollout", "status", kind_name, "-n", "purelb-system",
                    "--timeout=" + std::to_string(timeout.count()) + "s"});
  if (r) return Ok();
  // What the pods say, for an install that does not come up.
  auto pods = Kubectl({"get", "pods", "-n", "purelb-system", "-o", "wide"});
  auto events = Kubectl({"get", "events", "-n", "purelb-system", "--sort-by=.lastTimestamp"});
  return Fail(r.error().Wrap(kind_name + " did not roll out; pods:\n" + pods.value_or("") +
                             "\nevents:\n" + events.value_or("")));
}

Status Lab::InstallPylon() {
  std::vector<std::string> targets = {"pylon"};
  if (config_.bgp) targets.push_back("bird");
  if (auto s = BuildAndImportPylonImages(targets); !s) return s;
  if (config_.install == "helm") {
    std::vector<std::string> args = {"install", "pylon",         config_.helm_chart,
                                     "-n",      "purelb-system", "--create-namespace"};
    if (config_.bgp) args.insert(args.end(), {"--set", "bgp.enabled=true"});
    if (auto r = Helm(args); !r) return Fail(r.error());
  } else {
    std::string dir = config_.deploy_dir;
    if (config_.bgp) {
      // As docs/bgp.md tells users: an overlay of deploy/ with the component components/bgp.
      dir = Path("kustomize");
      std::error_code ec;
      fs::create_directories(dir, ec);
      // kustomize takes no absolute root: deploy/ as seen from the overlay.
      const std::string base = fs::relative(config_.deploy_dir, dir, ec).string();
      if (ec || base.empty()) {
        return Fail(ErrorCode::kInternal, "no relative path from " + dir + " to " +
                                              config_.deploy_dir + ": " + ec.message());
      }
      const std::string overlay =
          "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " +
          base + "\ncomponents:\n- " + base + "/components/bgp\n";
      if (auto s = WriteTextFile(dir + "/kustomization.yaml", overlay); !s) return s;
    }
    if (auto r = Kubectl({"apply", "-k", dir}); !r) return Fail(r.error());
  }
  if (auto r = Kubectl({"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"});
      !r) {
    return Fail(r.error());
  }
  if (auto s = WaitRollout("deployment/allocator", std::chrono::seconds(240)); !s) return s;
  return WaitRollout("daemonset/agent", std::chrono::seconds(240));
}

void Lab::RemoveAgentHostFiles() const {
  // The agents' hostPath /run/pylon is the host's: every node's agent keeps its record there
  // under its node's name (deploy/agent.yaml --state-file).
  std::error_code ec;
  for (const auto& n : topology_.nodes()) {
    fs::remove("/run/pylon/agent-addresses-" + n.name, ec);
  }
  fs::remove("/run/pylon", ec);  // only if empty
}

}  // namespace pylon::lab
