// What virtual addresses need from the node's kernel settings, and whether the node has them.
//
//  - Strict ARP on every announcing (LAN) interface: effective arp_ignore >= 1 and arp_announce
//    >= 2, or the node answers ARP on the LAN for the addresses on kube-lb0. The kernel takes the
//    larger of net.ipv4.conf.all.<name> and net.ipv4.conf.<if>.<name> (IN_DEV_MAXCONF).
//  - promote_secondaries on the virtual interface: effective 1 (all OR <if>: IN_DEV_ORCONF), so
//    that removing the first address of a subnet does not delete the others with it.
//
// In a non-privileged container /proc/sys is read-only even with hostNetwork: the shipped
// DaemonSet sets the three on `all` in a privileged init container (`pylon prepare-node`), and
// the agent only reads them (docs/agent.md "Node sysctls").
//
// EvaluateNodeSysctls is pure (the reads come through a function). NodeSysctlCheck is the thin
// stateful adapter: it reads through netlink::Netlink at most every `recheck` (or when the
// interfaces change), tries to write a missing value once per change of what is missing (works
// where /proc/sys is writable: a privileged pod, a root process), and returns the verdict only
// when it changed, so callers report each state once.
//
// Threading: one thread (the agent loop).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "netlink/netlink.h"

namespace pylon::agent {

// The interfaces whose settings matter now.
struct NodeSysctlNeeds {
  std::vector<std::string> lan_interfaces;  // strict ARP
  std::string virtual_interface;            // promote_secondaries; empty: none
  friend bool operator==(const NodeSysctlNeeds&, const NodeSysctlNeeds&) = default;
};

// One setting the node lacks.
struct SysctlShortfall {
  std::string interface;  // "eth0"
  std::string name;       // "arp_ignore"
  std::string effective;  // what the kernel applies: "0", or "unreadable (<error>)"
  std::string want;       // "1", "2"
  friend bool operator==(const SysctlShortfall&, const SysctlShortfall&) = default;
};

struct NodeSysctlVerdict {
  std::vector<SysctlShortfall> shortfalls;  // in NodeSysctlNeeds order
  // Why a missing value could not be set by the agent (first error), empty if it did not try.
  std::string write_error;

  bool ok() const { return shortfalls.empty(); }
  bool strict_arp_ok() const;
  bool promote_secondaries_ok() const;
  // "eth0 arp_ignore=0 (want 1), eth0 arp_announce=0 (want 2)"; "" when ok.
  std::string Summary() const;
  // For the log line, the Node event and /readyz: what is missing, what it means, how to fix it.
  std::string Explain() const;
  friend bool operator==(const NodeSysctlVerdict&, const NodeSysctlVerdict&) = default;
};

// nullopt: the value could not be read; `error` says why.
using SysctlReadFn =
    std::function<std::optional<std::string>(const netlink::SysctlKey& key, std::string* error)>;

// Reads through `nl` (the function keeps a reference: `nl` must outlive it).
SysctlReadFn SysctlReaderOf(netlink::Netlink& nl);

NodeSysctlVerdict EvaluateNodeSysctls(const NodeSysctlNeeds& needs, const SysctlReadFn& read);

// The values `pylon prepare-node` writes on `all` (the init container) and checks.
struct SysctlSetting {
  netlink::SysctlKey key;
  std::string value;
};
std::vector<SysctlSetting> PrepareNodeSettings();
// `pylon prepare-node`: writes PrepareNodeSettings() and reads them back. Fails on the first
// write that fails (EROFS: the container is not privileged) or a value that does not hold.
Status PrepareNode(netlink::Netlink& nl);

struct NodeSysctlCheckResult {
  NodeSysctlVerdict verdict;
  std::vector<std::string> written;  // "eth0 arp_ignore=1": values the agent set this time
  bool changed = false;              // the verdict differs from the last one returned
};

class NodeSysctlCheck {
 public:
  NodeSysctlCheck(netlink::Netlink& nl, const Clock& clock,
                  Duration recheck = std::chrono::seconds(30));

  // nullopt when nothing was read (same needs, recheck not due). Otherwise the verdict, with
  // `changed` set when it differs from the previous one (the first verdict always "changes").
  std::optional<NodeSysctlCheckResult> Check(const NodeSysctlNeeds& needs);
  const std::optional<NodeSysctlVerdict>& current() const { return current_; }

 private:
  NodeSysctlVerdict Read(const NodeSysctlNeeds& needs);

  netlink::Netlink& nl_;
  const Clock& clock_;
  Duration recheck_;
  std::optional<NodeSysctlNeeds> needs_;
  std::optional<SteadyTime> next_check_;
  std::optional<NodeSysctlVerdict> current_;
  // The shortfalls a write was last tried for: not tried again until they change.
  std::optional<std::vector<SysctlShortfall>> tried_;
};

}  // namespace pylon::agent
