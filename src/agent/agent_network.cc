// The agent and the node's network: discovery, the virtual interface it creates and deletes,
// link notifications, the MACs it publishes.
#include <utility>

#include "agent/agent.h"
#include "agent/network.h"
#include "common/log.h"
#include "election/macs_annotation.h"
#include "election/subnets_annotation.h"
#include "netlink/ops.h"
#include "netlink/types.h"

namespace pylon::agent {

void Agent::RefreshNetwork() {
  const SteadyTime now = d_.clock->Now();
  if (last_discovery_ && now < *last_discovery_ + kRediscoverEvery) return;
  last_discovery_ = now;
  auto net = DiscoverNetwork(*d_.netlink, node_agent_ ? &*node_agent_ : nullptr);
  if (!net) {
    log::Warn("network discovery failed", {{"error", net.error().message()}});
    return;
  }
  PublishHeartbeatEndpoints();
  if (node_agent_state_ == NodeAgentState::kDeselected) {
    // No LBNodeAgent governs this node: no announcing interface, no virtual interface, so it
    // holds nothing and its lease advertises no subnets.
    net->interfaces.clear();
    net->virtual_ifindex = 0;
  } else if (net->virtual_ifindex == 0 && EnsureVirtual(net->virtual_interface)) {
    auto link = d_.netlink->GetLink(net->virtual_interface);
    if (link) net->virtual_ifindex = link->index;
  }
  if (*net == network_) return;
  std::string names;
  for (const auto& i : net->interfaces) names += (names.empty() ? "" : ",") + i.name;
  const std::vector<net::Prefix> subnets = net->Subnets();
  std::vector<net::Prefix> copy = subnets;
  log::Info("node network", {{"interfaces", names},
                             {"subnets", election::FormatSubnetsAnnotation(copy)},
                             {"virtual", net->virtual_interface}});
  network_ = std::move(*net);
  if (lease_) {
    lease_->SetSubnets(subnets);
    PublishMacs();
  }
}

bool Agent::EnsureVirtual(const std::string& name) {
  if (!virtual_tried_.insert(name).second) return false;  // failed before: logged once
  // The virtual interface, with the documented fallback when the kernel has no dummy driver.
  auto vl = netlink::EnsureVirtualLink(*d_.netlink, name);
  if (!vl) {
    log::Error("cannot create the virtual interface; virtual addresses are disabled",
               {{"interface", name}, {"error", vl.error().message()}});
    return false;
  }
  if (vl->created) created_virtual_[name] = vl->link.index;
  if (!vl->note.empty()) {
    const std::string kind(netlink::VirtualLinkKindName(vl->kind));
    log::Warn("virtual interface fallback",
              {{"interface", name}, {"kind", kind}, {"note", vl->note}});
    writer_->NodeEvent(true, "VirtualInterfaceFallback", name + " is a " + kind + ": " + vl->note);
  }
  // Its promote_secondaries is checked (and set where /proc/sys is writable) with strict ARP by
  // the Reconciler: node_sysctls.h.
  virtual_tried_.erase(name);  // success: a later disappearance may be repaired
  return true;
}

void Agent::DeleteCreatedVirtual() {
  for (const auto& [name, index] : created_virtual_) {
    auto link = d_.netlink->GetLink(name);
    if (!link) {
      if (link.error().code() != ErrorCode::kNotFound) {
        log::Warn("virtual interface left in place: cannot read it",
                  {{"interface", name}, {"error", link.error().message()}});
      }
      continue;
    }
    if (link->index != index) {
      // Deleted and created again by someone else since: not ours.
      log::Info("virtual interface left in place: not the one this agent created",
                {{"interface", name}});
      continue;
    }
    if (auto st = d_.netlink->DeleteLink(index); !st) {
      log::Warn("could not delete the virtual interface",
                {{"interface", name}, {"error", st.error().message()}});
    } else {
      log::Info("virtual interface deleted", {{"interface", name}});
    }
  }
  created_virtual_.clear();
}

void Agent::WatchLinks() {
  while (!link_worker_.Stopping()) {
    auto events = link_events_->Poll(std::chrono::milliseconds(200));
    if (!events) {
      log::Warn("link notifications", {{"error", events.error().message()}});
      link_worker_.SleepFor(std::chrono::milliseconds(200));
      continue;
    }
    bool changed = false;
    for (const auto& e : *events) {
      if (const auto* le = std::get_if<netlink::LinkEvent>(&e)) {
        log::Debug("link event",
                   {{"interface", le->link.name}, {"up", le->link.lower_up() ? "true" : "false"}});
        changed = true;
      } else if (std::holds_alternative<netlink::ResyncEvent>(e)) {
        changed = true;
      }
    }
    if (!changed) continue;
    MutexLock lock(mu_);
    rediscover_ = true;
    wake_ = true;
    cv_.notify_all();
  }
}

void Agent::PublishMacs() {
  std::vector<std::string> macs;
  for (const auto& i : network_.interfaces) {
    auto link = d_.netlink->GetLink(i.name);
    if (!link) continue;
    auto mac = net::MacAddress::FromBytes(link->hwaddr);
    if (mac && !mac->is_zero()) macs.push_back(mac->ToString());
  }
  lease_->SetAnnotation(std::string(election::kMacsAnnotation),
                        election::FormatMacsAnnotation(macs));
}

}  // namespace pylon::agent
