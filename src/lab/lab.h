// A whole cluster on one machine: the lab network (topology.h), a real control plane (etcd and
// kube-apiserver, control_plane.h), the allocator and one agent per node as real processes, and a
// small HTTP responder in every node that answers with the node's name. Everything a lab writes
// lives in its directory (logs, kubeconfigs, certificates, etcd's data, state).
//
// The API server listens on the host's loopback. Each node reaches it at https://127.0.0.1:6443
// inside its own namespace, as nodes reach a local API proxy on many clusters: a socat in the node
// forwards to a unix socket in the lab directory (unix sockets reach across network namespaces),
// and a socat on the host forwards that socket to the API server.
//
// Lab's members are implemented by concept: lab.cc (up, down, the control plane, the allocator,
// the agents, kubectl), kube_proxy.cc (kube-proxy), pods.cc (pods and their EndpointSlices),
// kubelet_lab.cc (the kubelet lab's containerd and kubelets).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/command.h"
#include "common/result.h"
#include "lab/control_plane.h"
#include "lab/kubelet.h"
#include "lab/pods.h"
#include "lab/process.h"
#include "lab/topology.h"

namespace pylon::lab {

struct LabConfig {
  std::string name = "demo";
  int nodes = 3;
  std::string dir;  // default /tmp/pylon-lab/<name>
  // The product binary whose `allocator` and `agent` the lab runs; default: the file "pylon" in the
  // directory of this executable (SelfExe()).
  std::string binary;
  // The binary whose `lab serve` answers in every node and pod (pylon-dev); `pylon-dev lab` sets
  // its own. Default: the file "pylon-dev" beside `binary`, else `binary` itself (a pylon binary
  // that still holds the lab).
  std::string dev_binary;
  std::string deploy_dir;   // default <source>/deploy: its namespace, CRDs and RBAC are applied
  std::string k8s_bin_dir;  // default K8sBinDir()
  // Election timing handed to the agents (PURELB_* environment variables).
  std::string lease_duration = "3s";
  std::string renew_deadline = "2s";
  std::string retry_period = "500ms";
  std::vector<std::string> agent_args;      // extra flags for every agent
  std::vector<std::string> allocator_args;  // extra flags for the allocator
  // Direct heartbeats between agents (docs/failover.md), as a default install runs them: no key
  // file; every agent gets --heartbeat-key-secret pylon-heartbeat-key (the DaemonSet's
  // PYLON_HEARTBEAT_KEY_SECRET) and the first one creates the Secret with a random key.
  bool heartbeat = true;
  bool start_allocator = true;
  bool start_agents = true;
  // kube-proxy on every node and pods behind Services (docs/datapath.md). When kube-proxy cannot
  // start, the lab says why (log, kube_proxy_problem()) and goes on without it.
  bool kube_proxy = false;
  std::string proxy_mode = "nftables";  // or "iptables"
  // BGP (docs/bgp.md "Lab"): BIRD 2 on the gateway as the upstream router (dynamic neighbours,
  // BFD, multipath routes), BIRD 2 on every node driven by its agent (--bird-socket), the
  // BGPPeers lab-router / lab-router-v6 with BFDProfile lab-fast, and a WAN client behind the
  // gateway (topology.h).
  bool bgp = false;
  // Install Pylon's namespace, CRDs and RBAC with `helm install` of this chart (release "pylon" in
  // purelb-system, deploy/helm/pylon) instead of applying deploy/. The chart's Deployment and
  // DaemonSet are created but never run (the lab has no kubelet): the lab runs the allocator and
  // the agents itself, as the chart's ServiceAccounts, so the chart's RBAC is what is enforced.
  std::string helm_chart;
  std::string helm_binary = "helm";
  // The kubelet lab (kubelet.h; docs/lab.md "Kubelet lab"): a containerd and a real kubelet on
  // every node, kube-controller-manager and kube-scheduler in the control plane, a CNI bridge per
  // node on its pod CIDRs. Implies kube_proxy (pods reach the API server through the `kubernetes`
  // Service). The allocator and the agents still run as processes unless start_* say otherwise.
  bool kubelet = false;
  // Builds the lab's images (pause, echo); default <source>/scripts/lab-images.sh.
  std::string lab_images_script;
  // How Pylon gets into a kubelet lab (docs/lab.md "Installing Pylon as a user does"):
  //   ""           the lab runs the allocator and the agents as processes (start_*);
  //   "kustomize"  `kubectl apply -k` of deploy_dir (with deploy_dir/components/bgp when bgp);
  //   "helm"       `helm install` of helm_chart (bgp.enabled=true when bgp).
  // Both run the images of image_script (the Dockerfile, built with this lab's `binary`), imported
  // into every node's containerd; the Deployment and the DaemonSet then run as pods. Needs kubelet.
  std::string install;
  // Builds Pylon's images from the Dockerfile; default <source>/scripts/image.sh.
  std::string image_script;
};

// A ServiceGroup of virtual addresses for BGP labs (no node subnet holds them; one host route
// each): what `demo --bgp` and the BGP tests announce.
inline constexpr const char* kRoutedServiceGroup = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: routed
  namespace: purelb-system
spec:
  local:
    v4pools:
    - pool: 203.0.113.10-203.0.113.20
      subnet: 203.0.113.0/24
      aggregation: /32
    v6pools:
    - pool: 2001:db8:beef::10-2001:db8:beef::20
      subnet: 2001:db8:beef::/64
      aggregation: /128
)";

class Lab {
 public:
  // The port every node reaches the API server on, at 127.0.0.1 in its namespace.
  static constexpr int kNodeApiPort = 6443;

  explicit Lab(LabConfig config);
  ~Lab();
  Lab(const Lab&) = delete;
  Lab& operator=(const Lab&) = delete;

  // Brings everything up; on failure (or an interrupt) tears down what it made.
  Status Up();
  // Stops every process and removes the network. Works on a lab made by another process too.
  Status Down();
  // Keeps the processes running after this object is destroyed (for `pylon-dev lab up`).
  void Detach();

  const LabConfig& config() const { return config_; }
  const Topology& topology() const { return topology_; }
  std::string Path(const std::string& file) const { return config_.dir + "/" + file; }
  // The admin's kubeconfig for kubectl on the host (TCP on loopback).
  std::string Kubeconfig() const { return Path("kubeconfig"); }
  // kubectl of the control plane's release.
  std::string KubectlBinary() const { return control_plane_.KubectlBinary(); }
  ControlPlane& control_plane() { return control_plane_; }
  const ControlPlane& control_plane() const { return control_plane_; }

  // Runs kubectl against the lab's API server; returns its output or an error with the output.
  Result<std::string> Kubectl(const std::vector<std::string>& args) const;
  // Applies a manifest given as text (kubectl apply, default validation).
  Status Apply(const std::string& manifest) const;
  // Runs config().helm_binary against the lab's API server (its caches in the lab directory).
  Result<std::string> Helm(const std::vector<std::string>& args) const;

  // Starts the agent of `node` as its DaemonSet pod would run: with PURELB_POD_UID set to
  // AgentPodUid(node).
  Status StartAgent(const std::string& node);
  // The fake pod uid the lab gives the agent of `node` (PURELB_POD_UID, which the manifests set
  // from metadata.uid): one per node, the same across restarts of that agent, distinct per node.
  static std::string AgentPodUid(const std::string& node);
  Status SignalAgent(const std::string& node, int sig);
  // Waits for a stopped agent to exit; returns false if it is still running after `timeout_ms`.
  bool WaitAgentExit(const std::string& node, int timeout_ms);
  Status StartAllocator();
  Status StopAllocator();
  // The API server alone (etcd keeps its data): a restart.
  Status StartApiserver();
  Status StopApiserver();
  // Signals the API server process, e.g. SIGSTOP / SIGCONT: an API server that hangs (connections
  // stay open, nothing is answered) is the realistic worst case of an outage.
  Status SignalApiserver(int sig);

  // Pods (pods.h; docs/datapath.md): a namespace on `node` with a responder on `port` answering
  // "pod=<name> node=<node> client=<peer>", and the EndpointSlices of `service` ("name" in
  // namespace default, or "ns/name") rewritten with every pod of it. At most 9 pods per node.
  Status AddPod(const std::string& node, const std::string& name, const std::string& service,
                int port = 8080);
  Status SetPodReady(const std::string& name, bool ready);
  Status DeletePod(const std::string& name);
  const std::vector<LabPod>& pods() const { return pods_; }
  const LabPod* FindPod(const std::string& name) const;
  // Whether kube-proxy runs on every node; if not (and config().kube_proxy), why.
  bool kube_proxy_running() const { return kube_proxy_running_; }
  const std::string& kube_proxy_problem() const { return kube_proxy_problem_; }
  // One node's kube-proxy: a signal (SIGKILL: it dies and leaves its rules), and a restart that
  // stops what runs, starts it again and waits until its /healthz answers 200.
  Status SignalKubeProxy(const std::string& node, int sig);
  // The kubelet of a node (kubelet lab): SIGSTOP keeps it from restarting a killed container
  // until SIGCONT.
  Status SignalKubelet(const std::string& node, int sig);
  Status RestartKubeProxy(const std::string& node);

  // --- BGP (config().bgp) ---
  static constexpr std::uint32_t kRouterAsn = 64512;
  static constexpr std::uint32_t kNodeAsn = 64513;
  std::string BirdSocket(const std::string& node) const;
  std::string BirdConfig(const std::string& node) const;
  Status StartNodeBird(const std::string& node);
  Status StopNodeBird(const std::string& node);
  Status SignalNodeBird(const std::string& node, int sig);
  // birdc against the gateway's BIRD or a node's.
  Result<std::string> RouterBird(const std::string& command) const;
  Result<std::string> NodeBird(const std::string& node, const std::string& command) const;
  // The next hops (node addresses, sorted) of the gateway's kernel route for exactly `prefix`
  // ("203.0.113.10/32"); empty when there is no such route.
  Result<std::vector<std::string>> RouterNexthops(const std::string& prefix) const;
  // A node as its crash looks from outside: its switch port out of forwarding (no carrier change
  // anywhere), every process of it stopped (SIGSTOP): agent, BIRD, responder, kube-proxy, API
  // forwarder and its pods; in a kubelet lab also its kubelet and containerd, and every container
  // (the freezer cgroup of its cgroupRoot). false thaws it.
  Status FreezeNode(const std::string& node, bool frozen);
  // A node's eth0 down or up again (Topology::SetNodeLink); up also puts back the routes to the
  // other nodes' pod CIDRs, which the kernel removed with the link (a CNI would re-add them too).
  Status SetNodeLink(const std::string& node, bool up);
  const LabNode* FindNode(const std::string& name) const;

  // --- The kubelet lab (config().kubelet) ---
  // One node's runtime: its directory, sockets, cgroup root (kubelet.h).
  KubeletNode KubeletNodeOf(const LabNode& node) const;
  // Imports an OCI image archive (scripts/lab-images.sh) into every node's containerd, where the
  // kubelets find it (namespace k8s.io).
  // `base_name` names an archive that carries only a tag (scripts/image.sh's): "repo" → repo:tag.
  Status ImportImage(const std::string& archive, const std::string& base_name = "") const;
  // Runs config().lab_images_script with `args` and returns the archive path it prints.
  Result<std::string> BuildImage(const std::vector<std::string>& args) const;
  // The repository of each of Pylon's images as the manifests name them, normalized as
  // containerd stores it ("docker.io/library/pylon").
  static std::string ImageRepository(const std::string& target);
  // Builds Pylon's images `targets` ("pylon", "bird") with config().image_script from this lab's
  // product binary, tagged `tag` (default: the project version, as deploy/ and the chart name
  // it), and imports them into every node's containerd under ImageRepository(target):tag.
  Status BuildAndImportPylonImages(const std::vector<std::string>& targets,
                                   const std::string& tag = "");
  // Waits until `kind/name` in purelb-system has rolled out (kubectl rollout status).
  Status WaitRollout(const std::string& kind_name, std::chrono::seconds timeout);

  // Process name → pid, as recorded in the state file.
  std::map<std::string, int> Pids() const;

 private:
  Status WriteState() const;
  // Control plane, the lab's namespace/CRDs/RBAC from deploy/, Node objects, the ServiceAccount
  // kubeconfigs of the allocator and the agents, the API forwarders into every node.
  Status StartControlPlane();
  // Without config().install: deploy/'s namespace, CRDs and RBAC (or the chart), and the
  // kubeconfigs of the allocator's and the agents' ServiceAccounts, for the lab's processes.
  Status InstallForProcesses();
  // Passes --heartbeat-key-secret as the DaemonSet sets it (the agents make the key Secret).
  Status SetUpHeartbeat();
  Status Spawn(const std::string& key, SpawnOptions opts);
  // Writes the kubeconfig `file` (in the lab directory) of the ServiceAccount `ns`/`account` for a
  // process on a node, which reaches the API server at 127.0.0.1:kNodeApiPort in its namespace.
  Status WriteNodeKubeconfig(const std::string& file, const std::string& ns,
                             const std::string& account);
  // RBAC, kubeconfig, one kube-proxy per node, waits for every /healthz. Fails with the reason.
  Status StartKubeProxy();
  Status SpawnKubeProxy(const LabNode& node);
  Status WaitKubeProxyHealthy(const LabNode& node, std::chrono::steady_clock::time_point deadline);
  // The WAN client, the gateway's BIRD, every node's BIRD, the BGP RBAC and default objects.
  Status StartBgp();
  void StopKubeProxy();
  // kubelet RBAC and kubeconfig, the pause image, the kernel settings saved, every node's runtime
  // started, every Node Ready.
  Status StartKubelets();
  Status StartKubeletNode(const LabNode& node, const std::string& pause_archive);
  Status WaitNodesReady(std::chrono::seconds timeout);
  // config().install: the images, then `kubectl apply -k` or `helm install`, every CRD
  // Established, the allocator's Deployment and the agents' DaemonSet rolled out (install.cc).
  Status InstallPylon();
  // The files the agents' pods leave on the host through their hostPath /run/pylon.
  void RemoveAgentHostFiles() const;
  // Stops every node's kubelet and containerd (this object's or recorded in the state file),
  // kills and removes what they left (TearDownKubeletNode) and restores the kernel settings the
  // kubelets rewrote. Driven by the lab directory, so `lab down` from another process works.
  Status TearDownKubelets();
  // Applies the EndpointSlices (both families) of one Service from pods_.
  Status WriteEndpointSlices(const std::string& ns, const std::string& service) const;
  LabConfig config_;
  Topology topology_;
  ControlPlane control_plane_;
  std::map<std::string, Process> procs_;
  bool detached_ = false;
  std::vector<LabPod> pods_;
  bool pod_routing_ = false;
  bool kube_proxy_running_ = false;
  std::string kube_proxy_problem_;
  std::map<std::string, int> kubelet_ports_;  // node → the kubelet's port (kubelet lab)
};

// `pylon-dev lab <command> [flags]` (argv[0] is "lab"): up | down | status | demo | failover |
// timing | serve. Returns the exit code: 0, 1 (a failure while running), 2 (a bad command line).
int LabCommand(int argc, char** argv);
// Its entry in the binary's command list (main/dispatch.h).
extern const cli::Command kLabCommand;

}  // namespace pylon::lab
