// The agent's view of the kernel's links, addresses, routes and interface sysctls, behind an
// interface: NetlinkImpl talks rtnetlink and /proc/sys, FakeNetlink keeps the same state in
// memory so the agent's logic is unit-tested without root.
//
// Threading: an instance is used by one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/ip.h"
#include "netlink/message.h"
#include "netlink/types.h"

namespace pylon::netlink {

// A per-interface sysctl: /proc/sys/net/{ipv4,ipv6}/conf/<interface>/<name>. `interface` may also
// be "all" or "default".
struct SysctlKey {
  net::Family family = net::Family::kV4;
  std::string interface;
  std::string name;
  friend bool operator==(const SysctlKey&, const SysctlKey&) = default;
};
// Named keys the agent uses (values: see the reference, "ARP behaviour").
SysctlKey ArpIgnore(std::string interface);           // 1: answer only for addresses on this if
SysctlKey ArpAnnounce(std::string interface);         // 2: best local source for ARP requests
SysctlKey PromoteSecondaries(std::string interface);  // 1: deleting a primary keeps secondaries
SysctlKey ArpAccept(std::string interface);
SysctlKey NdiscNotify(std::string interface);  // IPv6
SysctlKey AcceptDad(std::string interface);    // IPv6
// The relative path "net/ipv4/conf/eth0/arp_ignore"; fails on names that could escape the
// directory ("..", "/", empty) or on characters no interface or sysctl name has.
Result<std::string> SysctlRelativePath(const SysctlKey& key);

// A stream of link / address notifications.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Returns the queued notifications, waiting up to `timeout` for the first (0 = do not wait).
  virtual Result<std::vector<Event>> Poll(std::chrono::milliseconds timeout) = 0;
  // A descriptor that becomes readable when events are queued, or -1 when not pollable (fake).
  virtual int fd() const = 0;
};

class Netlink {
 public:
  virtual ~Netlink() = default;

  virtual Result<std::vector<LinkInfo>> ListLinks() = 0;
  // kNotFound when no link has this name.
  virtual Result<LinkInfo> GetLink(std::string_view name) = 0;
  // Every address of one family (or all), with flags, lifetimes and IFA_PROTO.
  virtual Result<std::vector<AddressInfo>> ListAddresses(std::optional<net::Family> family) = 0;
  // Every route of one family, every table.
  virtual Result<std::vector<RouteInfo>> ListRoutes(net::Family family) = 0;

  // Adds (AddMode::kCreateExclusive: kAlreadyExists if present) or adds-or-renews
  // (AddMode::kReplace: lifetimes are reset) one address on spec.ifindex.
  virtual Status AddAddress(const AddressSpec& spec) = 0;
  // Removes `address` (address and prefix length as added) from `ifindex` only. The caller decides
  // ownership; this never looks at other interfaces. kNotFound when it is not there.
  virtual Status RemoveAddress(int ifindex, const net::Prefix& address) = 0;

  // Creates a link of `kind` (NLM_F_EXCL: kAlreadyExists if the name is taken; kUnsupported when
  // the kernel lacks the kind). The link is left down.
  virtual Result<LinkInfo> CreateLink(std::string_view name, std::string_view kind) = 0;
  virtual Status SetLinkUp(int ifindex, bool up) = 0;
  virtual Status DeleteLink(int ifindex) = 0;

  virtual Result<std::string> ReadSysctl(const SysctlKey& key) = 0;  // trailing newline stripped
  virtual Status WriteSysctl(const SysctlKey& key, std::string_view value) = 0;

  // Subscribes to link and IPv4/IPv6 address notifications from now on.
  virtual Result<std::unique_ptr<EventSource>> Subscribe() = 0;

  // Whether IFA_PROTO tags stick (Linux 6.1+). Without it the caller must keep its own record of
  // which addresses it added (see ops.h).
  virtual bool SupportsAddressProto() const = 0;
};

}  // namespace pylon::netlink
