// The soak's decisions, drawn from its seeded generator: faults (components, nodes, the API
// server, the fault proxy), config edits and Service edits, and the undoing of faults when due.
#include <signal.h>

#include <algorithm>

#include "common/log.h"
#include "lab/command.h"
#include "soak/runner.h"

namespace pylon::soak {

int Soak::DisruptedNode() const { return node_down_.empty() ? -1 : *node_down_.begin(); }

void Soak::Schedule(int after_steps, const std::string& what, std::function<void()> undo) {
  pending_.push_back({step_ + after_steps, what, std::move(undo)});
}

void Soak::RunDue(bool all) {
  // In order of scheduling: the API server comes back before what needs it.
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const Pending& a, const Pending& b) { return a.due_step < b.due_step; });
  std::vector<Pending> keep;
  std::vector<Pending> due;
  for (auto& p : pending_) (all || p.due_step <= step_ ? due : keep).push_back(std::move(p));
  pending_ = std::move(keep);
  for (auto& p : due) {
    Log("undo " + p.what);
    p.undo();
  }
}

void Soak::ApplyService(int i, const std::string& why, bool ask) {
  Log("service " + ServiceName(i) + " " + why);
  if (ask) book_.Ask(ServiceName(i));
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  if (auto s = lab_->Apply(ServiceYaml(i, services_[i])); !s) {
    Count("edit refused by API");
    log::Info("soak: service edit refused",
              {{"service", ServiceName(i)}, {"error", s.error().message()}});
    // The API keeps the Service as it was; so does the model, by recreating it as wanted.
    (void)lab_->Kubectl({"delete", "service", "-n", "default", ServiceName(i), "--wait=true"});
    book_.Ask(ServiceName(i));
    (void)lab_->Apply(ServiceYaml(i, services_[i]));
  }
}

void Soak::DeleteService(int i) {
  Log("service " + ServiceName(i) + " delete");
  book_.Ask(ServiceName(i));
  services_[i].exists = false;
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  (void)lab_->Kubectl(
      {"delete", "service", "-n", "default", ServiceName(i), "--wait=false", "--ignore-not-found"});
}

void Soak::ServiceChurn() {
  const int i = static_cast<int>(Draw(kServices));
  const int op = static_cast<int>(Draw(7));
  // Parameters, drawn whatever the op (the sequence stays the same).
  const ServiceState fresh = DrawService();
  const int group = static_cast<int>(Draw(3));  // a ServiceGroup: sa, sb, sv
  if (!ApiUsable()) {
    Log("service " + ServiceName(i) + " op " + std::to_string(op) + " skipped: API down");
    return Count("skipped (API down)");
  }
  ServiceState& s = services_[i];
  if (!s.exists || op == 0) {
    if (s.exists) {
      DeleteService(i);
      if (ApiUsable()) {
        (void)lab_->Kubectl({"wait", "--for=delete", "service/" + ServiceName(i), "-n", "default",
                             "--timeout=10s"});
      }
    }
    s = fresh;
    Count("svc create");
    ApplyService(i, "create", true);
    return;
  }
  switch (op) {
    case 1:
      Count("svc delete");
      DeleteService(i);
      return;
    case 2:
      s.policy = fresh.policy == s.policy ? (s.policy + 1) % 3 : fresh.policy;
      Count("svc ipFamilyPolicy");
      ApplyService(i, std::string("policy ") + kPolicies[s.policy], true);
      return;
    case 3:
      s.requested = !s.requested;
      Count("svc request address");
      ApplyService(i, s.requested ? "request addresses" : "drop requested addresses", true);
      return;
    case 4:
      s.share = fresh.share == s.share ? (s.share + 1) % 3 : fresh.share;
      Count("svc share key");
      ApplyService(i, "share key " + std::to_string(s.share), true);
      return;
    case 5:
      s.local_etp = !s.local_etp;
      Count("svc switch ETP");
      ApplyService(i, std::string("ETP ") + (s.local_etp ? "Local" : "Cluster"), false);
      return;
    default:
      if (kConfigs[s.config].lace) {  // the class is immutable: ETP instead
        s.local_etp = !s.local_etp;
        Count("svc switch ETP");
        ApplyService(i, std::string("ETP ") + (s.local_etp ? "Local" : "Cluster"), false);
        return;
      }
      s.config = group == s.config ? (group + 1) % 3 : group;
      Count("svc change group");
      ApplyService(i, std::string("group ") + kConfigs[s.config].name, true);
      return;
  }
}

void Soak::ApplyConfig(int c, bool valid) {
  configs_[c].exists = true;
  configs_[c].valid = valid;
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  if (auto s = lab_->Apply(ConfigYaml(kConfigs[c], configs_[c], valid)); !s) {
    Count("edit refused by API");
    log::Warn("soak: config edit refused",
              {{"config", kConfigs[c].name}, {"error", s.error().message()}});
  }
}

void Soak::DeleteConfig(int c) {
  configs_[c].exists = false;
  if (!ApiUsable()) {
    Count("skipped (API down)");
    return;
  }
  const ConfigDef& d = kConfigs[c];
  if (d.lace) {
    (void)lab_->Kubectl({"delete", "loadbalancerclasses.lace-cni.io", d.name, "--wait=false"});
  } else {
    (void)lab_->Kubectl(
        {"delete", "servicegroups.purelb.io", d.name, "-n", "purelb-system", "--wait=false"});
  }
}

void Soak::ConfigEdit() {
  const int c = static_cast<int>(Draw(kConfigCount));
  const int op = static_cast<int>(Draw(5));
  ConfigState& st = configs_[c];
  const std::string name = kConfigs[c].name;
  if (!ApiUsable()) {
    Log("config " + name + " op " + std::to_string(op) + " skipped: API down");
    return Count("skipped (API down)");
  }
  switch (op) {
    case 0:
    case 1: {
      const int size = op == 0 ? std::min(st.size + 1, 2) : std::max(st.size - 1, 0);
      const bool shrink = size < st.size;
      st.size = size;
      Log("config " + name + (op == 0 ? " grow" : " shrink") + " to size " + std::to_string(size));
      Count(op == 0 ? "config pool grown" : "config pool shrunk");
      // Addresses outside the new pools are evicted and re-assigned (docs/allocator.md): the
      // operator asked for that on every Service of the object.
      if (shrink) {
        for (int i = 0; i < kServices; ++i) {
          if (services_[i].config == c) book_.Ask(ServiceName(i));
        }
      }
      ApplyConfig(c, true);
      return;
    }
    case 2:
      Log("config " + name + " invalid");
      Count("config invalid applied");
      ApplyConfig(c, false);
      return;
    case 3:
      Log("config " + name + " fixed");
      Count("config fixed");
      ApplyConfig(c, true);
      return;
    default:
      if (st.exists) {
        Log("config " + name + " delete");
        Count("config deleted");
        DeleteConfig(c);
      } else {
        Log("config " + name + " add");
        Count("config added");
        ApplyConfig(c, true);
      }
      return;
  }
}

void Soak::ProxyFault() {
  static const double kErrorRates[] = {0, 0.05, 0.1, 0.2};
  static const int kCodes[] = {500, 503, 429};
  static const double kConflictRates[] = {0, 0.1, 0.2};
  static const int kLatencies[] = {0, 0, 50, 200};
  faultproxy::FaultSettings f;
  f.error_rate = kErrorRates[Draw(4)];
  f.error_code = kCodes[Draw(3)];
  f.conflict_rate = kConflictRates[Draw(3)];
  f.latency_ms = kLatencies[Draw(4)];
  Log("proxy faults " + f.ToJson().dump());
  if (f.error_rate > 0) Count(f.error_code == 429 ? "api 429" : "api 5xx");
  if (f.conflict_rate > 0) Count("api 409");
  if (f.latency_ms > 0) Count("api latency");
  (void)proxy_->faults().Set(f);
}

void Soak::NodeDown(int node, int hold, bool busy, const std::string& what, const std::string& undo,
                    const std::function<void(bool down)>& set) {
  const std::string nname = lab_->topology().nodes()[static_cast<size_t>(node)].name;
  Log(what + " " + nname + " for " + std::to_string(hold));
  if (busy) return Count("skipped (busy)");
  Count("node " + what);
  set(true);
  node_down_.insert(node);
  Schedule(hold, undo + " " + nname, [this, set, node] {
    set(false);
    node_down_.erase(node);
  });
}

void Soak::Decide() {
  const auto& nodes = lab_->topology().nodes();
  const int r = static_cast<int>(Draw(100));
  const int node = static_cast<int>(Draw(nodes.size()));
  const int hold = 1 + static_cast<int>(Draw(8));  // steps until the fault is undone
  const std::string nname = nodes[static_cast<size_t>(node)].name;
  const bool node_busy = DisruptedNode() >= 0;
  if (r < 25) return ServiceChurn();
  if (r < 38) return ConfigEdit();
  if (r < 54) return ProxyFault();
  if (r < 60) {
    Log("cut watches");
    Count("api watches cut");
    (void)proxy_->CutWatches();
    return;
  }
  if (r < 64) {
    Log("compact");
    if (!ApiUsable()) return Count("skipped (API down)");
    Count("api compaction (410)");
    (void)proxy_->Compact();
    return;
  }
  if (r < 70) {
    // Two replicas under leader election: killing the leader is a leader change.
    const int replica = static_cast<int>(Draw(2));
    Log("allocator replica " + std::to_string(replica + 1) + " kill -9, restart in " +
        std::to_string(hold / 2 + 1));
    if (allocator_down_[replica]) return Count("skipped (busy)");
    Count("allocator kill -9");
    if (replica == 0) {
      const auto pids = lab_->Pids();
      if (auto it = pids.find("allocator"); it != pids.end()) ::kill(it->second, SIGKILL);
      (void)lab_->StopAllocator();
    } else {
      (void)replica2_.Signal(SIGKILL);
      replica2_.Stop(Ms(2000));
    }
    allocator_down_[replica] = true;
    Schedule(hold / 2 + 1, "allocator replica " + std::to_string(replica + 1) + " start",
             [this, replica] {
               if (auto s = replica == 0 ? lab_->StartAllocator() : StartReplica2(); !s) {
                 log::Warn("soak: allocator start", {{"error", s.error().message()}});
               }
               allocator_down_[replica] = false;
             });
    return;
  }
  if (r < 82) {
    const bool term = Draw(2) == 0;
    Log(std::string("agent ") + nname + (term ? " SIGTERM" : " SIGKILL") + ", restart in " +
        std::to_string(hold));
    if (node_busy) return Count("skipped (busy)");
    Count(term ? "agent SIGTERM" : "agent SIGKILL");
    (void)lab_->SignalAgent(nname, term ? SIGTERM : SIGKILL);
    node_down_.insert(node);
    Schedule(hold, "agent " + nname + " start", [this, nname, node] {
      if (!lab_->WaitAgentExit(nname, 10000)) {
        (void)lab_->SignalAgent(nname, SIGKILL);
        (void)lab_->WaitAgentExit(nname, 5000);
      }
      (void)lab_->StartAgent(nname);
      node_down_.erase(node);
    });
    return;
  }
  if (r < 87) {
    return NodeDown(node, hold, node_busy, "freeze", "thaw",
                    [this, nname](bool down) { (void)lab_->FreezeNode(nname, down); });
  }
  if (r < 91) {
    return NodeDown(node, hold, node_busy, "link down", "link up",
                    [this, nname](bool down) { (void)lab_->SetNodeLink(nname, !down); });
  }
  if (r < 96) {
    Log("API server stop for " + std::to_string(hold + 2));
    if (!ApiUsable()) return Count("skipped (busy)");
    Count("API server stopped");
    (void)lab_->StopApiserver();
    apiserver_stopped_ = true;
    Schedule(hold + 2, "API server start", [this] {
      if (auto s = lab_->StartApiserver(); !s) {
        log::Warn("soak: API server restart", {{"error", s.error().message()}});
      }
      apiserver_stopped_ = false;
    });
    return;
  }
  Log("API server hang for " + std::to_string(hold));
  if (!ApiUsable()) return Count("skipped (busy)");
  Count("API server hung (SIGSTOP)");
  (void)lab_->SignalApiserver(SIGSTOP);
  apiserver_hung_ = true;
  Schedule(hold, "API server SIGCONT", [this] {
    (void)lab_->SignalApiserver(SIGCONT);
    apiserver_hung_ = false;
  });
}

}  // namespace pylon::soak
