// `pylon-dev lab up | down | status`: a lab left running, removed, listed.
#include <signal.h>

#include <cstdio>
#include <memory>

#include "lab/command.h"

namespace pylon::lab {
namespace {

int Up(const UpFlags& f) {
  const LabConfig cfg = UpConfig(f);
  Lab lab(cfg);
  if (auto s = lab.Up(); !s) {
    std::fprintf(stderr, "pylon-dev lab up: %s\n", s.error().message().c_str());
    return cli::kExitFailure;
  }
  if (Stopping()) return cli::kExitFailure;  // interrupted: the destructor tears down
  lab.Detach();
  Say("lab \"" + cfg.name + "\" is up; logs in " + lab.config().dir);
  if (lab.config().kube_proxy) {
    Say(lab.kube_proxy_running()
            ? "kube-proxy (" + cfg.proxy_mode +
                  " mode) runs on every node; pod CIDRs 10.244.<i>.0/24, "
                  "fd00:10:244:<i>::/64 (docs/datapath.md)"
            : "kube-proxy is NOT running, the nodes' responders answer instead: " +
                  lab.kube_proxy_problem());
  }
  if (!cfg.install.empty()) {
    Say("Pylon is installed (" + cfg.install +
        ") and runs as pods: kubectl get pods -n purelb-system -o wide");
  }
  if (lab.config().kubelet) {
    Say("a kubelet and containerd run on every node (pods on 10.244.<i>.100-250, "
        "fd00:10:244:<i>::100-250); import an image with  ctr --address " +
        lab.KubeletNodeOf(lab.topology().nodes()[0]).ContainerdSocket() +
        " -n k8s.io images import ARCHIVE  (for each node)");
  }
  Say("export KUBECONFIG=" + lab.Kubeconfig());
  Say("kubectl of the server's release:  " + lab.KubectlBinary());
  Say("run a command on a node:  ip netns exec " + lab.topology().nodes()[0].netns + " ip addr");
  Say("from the client:          ip netns exec " + lab.topology().ClientNetns() + " curl ...");
  Say("remove it:                pylon-dev lab down --name " + cfg.name);
  return cli::kExitOk;
}

int Down(const std::string& name, bool all) {
  const std::vector<std::string> names = all ? Topology::ExistingLabs() : std::vector{name};
  int rc = cli::kExitOk;
  for (const auto& n : names) {
    LabConfig cfg;
    cfg.name = n;
    Lab lab(cfg);
    auto s = lab.Down();
    lab.Detach();
    if (!s) {
      std::fprintf(stderr, "pylon-dev lab down %s: %s\n", n.c_str(), s.error().message().c_str());
      rc = cli::kExitFailure;
    } else {
      Say("lab \"" + n + "\" removed");
    }
  }
  return rc;
}

int Status() {
  auto labs = Topology::ExistingLabs();
  if (labs.empty()) Say("no labs");
  for (const auto& name : labs) {
    LabConfig cfg;
    cfg.name = name;
    Lab lab(cfg);
    lab.Detach();
    std::string line = name + ":";
    for (const auto& [k, pid] : lab.Pids()) {
      line += " " + k + (kill(pid, 0) == 0 ? "(up)" : "(down)");
    }
    Say(line);
  }
  return cli::kExitOk;
}

}  // namespace

void AddUpFlags(cli::App& sub, UpFlags* flags, int min_nodes, int max_nodes) {
  AddBuildFlags(sub, &flags->build);
  sub.add_option("--nodes", flags->nodes, "how many nodes")
      ->check(CLI::Range(min_nodes, max_nodes));
  AddKubeProxyFlags(sub, &flags->kube_proxy);
  sub.add_flag("--bgp", flags->bgp,
               "BIRD 2 on every node and on the gateway as the upstream router, a client behind "
               "it (docs/bgp.md)");
  sub.add_flag("--kubelet", flags->kubelet,
               "containerd and a real kubelet on every node, kube-controller-manager and "
               "kube-scheduler, a CNI bridge per node; implies --kube-proxy (docs/lab.md)");
  sub.add_option("--install", flags->install,
                 "install Pylon as a user does, from its image (scripts/image.sh): `kubectl "
                 "apply -k deploy` (kustomize) or `helm install` (helm); implies --kubelet")
      ->check(CLI::IsMember({"kustomize", "helm"}));
}

LabConfig UpConfig(const UpFlags& flags) {
  LabConfig cfg = ConfigFrom(flags.build, flags.kube_proxy);
  cfg.nodes = flags.nodes;
  cfg.bgp = flags.bgp;
  cfg.kubelet = flags.kubelet;
  cfg.install = flags.install;
  return cfg;
}

Subcommand AddUp(cli::App& lab) {
  auto f = std::make_shared<UpFlags>();
  auto* sub = lab.add_subcommand("up", "build a lab and leave it running");
  AddUpFlags(*sub, f.get(), 1, 32);
  return {sub, [f] { return Up(*f); }};
}

Subcommand AddDown(cli::App& lab) {
  struct Flags {
    std::string name = "demo";
    bool all = false;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = lab.add_subcommand("down", "remove a lab (processes, namespaces)");
  auto* name = sub->add_option("--name", f->name, "the lab to remove");
  sub->add_flag("--all", f->all, "remove every lab")->excludes(name);
  return {sub, [f] { return Down(f->name, f->all); }};
}

Subcommand AddStatus(cli::App& lab) {
  auto* sub = lab.add_subcommand("status", "list labs and their processes");
  return {sub, [] { return Status(); }};
}

}  // namespace pylon::lab
