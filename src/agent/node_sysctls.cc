#include "agent/node_sysctls.h"

#include <algorithm>

#include "common/text.h"

namespace pylon::agent {

namespace {

// One requirement: max(all.<name>, <interface>.<name>) >= want.
struct Need {
  std::string interface;
  netlink::SysctlKey (*key)(std::string);
  const char* name;
  int want;
};

std::vector<Need> NeedsOf(const NodeSysctlNeeds& needs) {
  std::vector<Need> out;
  for (const auto& i : needs.lan_interfaces) {
    out.push_back(Need{i, netlink::ArpIgnore, "arp_ignore", 1});
    out.push_back(Need{i, netlink::ArpAnnounce, "arp_announce", 2});
  }
  if (!needs.virtual_interface.empty()) {
    out.push_back(
        Need{needs.virtual_interface, netlink::PromoteSecondaries, "promote_secondaries", 1});
  }
  return out;
}

}  // namespace

bool NodeSysctlVerdict::strict_arp_ok() const {
  return std::none_of(shortfalls.begin(), shortfalls.end(), [](const SysctlShortfall& s) {
    return s.name == "arp_ignore" || s.name == "arp_announce";
  });
}

bool NodeSysctlVerdict::promote_secondaries_ok() const {
  return std::none_of(shortfalls.begin(), shortfalls.end(),
                      [](const SysctlShortfall& s) { return s.name == "promote_secondaries"; });
}

std::string NodeSysctlVerdict::Summary() const {
  std::string out;
  for (const auto& s : shortfalls) {
    if (!out.empty()) out += ", ";
    out += s.interface + " " + s.name + "=" + s.effective + " (want " + s.want + ")";
  }
  return out;
}

SysctlReadFn SysctlReaderOf(netlink::Netlink& nl) {
  return [&nl](const netlink::SysctlKey& key, std::string* error) -> std::optional<std::string> {
    auto v = nl.ReadSysctl(key);
    if (!v) {
      *error = v.error().message();
      return std::nullopt;
    }
    return *v;
  };
}

std::string NodeSysctlVerdict::Explain() const {
  if (ok()) {
    return "strict ARP (arp_ignore>=1, arp_announce=2) is in force on the LAN interfaces and "
           "promote_secondaries on the virtual interface";
  }
  std::string out;
  if (!strict_arp_ok()) {
    out =
        "strict ARP is off: this node answers ARP on its LAN interfaces for the virtual "
        "addresses it holds on the virtual interface";
  } else {
    out =
        "promote_secondaries is off on the virtual interface: withdrawing the first virtual "
        "address of a subnet deletes the others with it for a moment (they are added again)";
  }
  out += " (" + Summary() + ")";
  if (!write_error.empty()) out += "; the agent cannot set them: " + write_error;
  out +=
      ". Run the DaemonSet's prepare-node init container (pylon prepare-node), or set "
      "net.ipv4.conf.all.arp_ignore=1, net.ipv4.conf.all.arp_announce=2 and "
      "net.ipv4.conf.all.promote_secondaries=1 on the node";
  return out;
}

NodeSysctlVerdict EvaluateNodeSysctls(const NodeSysctlNeeds& needs, const SysctlReadFn& read) {
  NodeSysctlVerdict v;
  for (const Need& n : NeedsOf(needs)) {
    std::optional<int> best;
    std::string unreadable;
    for (const std::string& where : {std::string("all"), n.interface}) {
      std::string error;
      std::optional<std::string> text = read(n.key(where), &error);
      std::optional<int> value = text ? ParseInteger<int>(*text) : std::nullopt;
      if (!value) {
        if (unreadable.empty()) unreadable = text ? "'" + *text + "'" : error;
        continue;
      }
      if (!best || *value > *best) best = *value;
    }
    if (best && *best >= n.want) continue;
    std::string effective =
        unreadable.empty() ? std::to_string(*best) : "unreadable (" + unreadable + ")";
    v.shortfalls.push_back(
        SysctlShortfall{n.interface, n.name, std::move(effective), std::to_string(n.want)});
  }
  return v;
}

std::vector<SysctlSetting> PrepareNodeSettings() {
  return {{netlink::ArpIgnore("all"), "1"},
          {netlink::ArpAnnounce("all"), "2"},
          {netlink::PromoteSecondaries("all"), "1"}};
}

Status PrepareNode(netlink::Netlink& nl) {
  for (const auto& s : PrepareNodeSettings()) {
    if (auto st = nl.WriteSysctl(s.key, s.value); !st) return st;
  }
  // Read back through the same rules the agent checks with ("all" as the interface).
  const NodeSysctlVerdict v =
      EvaluateNodeSysctls(NodeSysctlNeeds{{"all"}, "all"}, SysctlReaderOf(nl));
  if (!v.ok()) return Fail(ErrorCode::kInternal, "written but not in force: " + v.Summary());
  return Ok();
}

NodeSysctlCheck::NodeSysctlCheck(netlink::Netlink& nl, const Clock& clock, Duration recheck)
    : nl_(nl), clock_(clock), recheck_(recheck) {}

NodeSysctlVerdict NodeSysctlCheck::Read(const NodeSysctlNeeds& needs) {
  return EvaluateNodeSysctls(needs, SysctlReaderOf(nl_));
}

std::optional<NodeSysctlCheckResult> NodeSysctlCheck::Check(const NodeSysctlNeeds& needs) {
  const SteadyTime now = clock_.Now();
  if (needs_ && *needs_ == needs && next_check_ && now < *next_check_) return std::nullopt;
  needs_ = needs;
  next_check_ = now + recheck_;
  NodeSysctlCheckResult r;
  r.verdict = Read(needs);
  if (!r.verdict.ok() && (!tried_ || *tried_ != r.verdict.shortfalls)) {
    // Once per change of what is missing: where /proc/sys is read-only (a non-privileged pod)
    // every write fails the same way, and trying on every pass would only repeat the failure.
    tried_ = r.verdict.shortfalls;
    std::string error;
    for (const auto& s : r.verdict.shortfalls) {
      const netlink::SysctlKey key{net::Family::kV4, s.interface, s.name};
      if (auto st = nl_.WriteSysctl(key, s.want); !st) {
        if (error.empty()) error = st.error().message();
      } else {
        r.written.push_back(s.interface + " " + s.name + "=" + s.want);
      }
    }
    if (!r.written.empty()) r.verdict = Read(needs);
    if (!r.verdict.ok()) r.verdict.write_error = error;
  } else if (!r.verdict.ok() && current_) {
    r.verdict.write_error = current_->write_error;  // not tried again: the same reason holds
  }
  if (r.verdict.ok()) tried_.reset();
  r.changed = !current_ || *current_ != r.verdict;
  current_ = r.verdict;
  return r;
}

}  // namespace pylon::agent
