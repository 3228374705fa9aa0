// High-level operations the agent composes, written once against the Netlink interface so they
// run unchanged over the kernel (NetlinkImpl) and the fake (FakeNetlink).
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/ip.h"
#include "netlink/netlink.h"
#include "netlink/select.h"

namespace pylon::netlink {

// Links whose whole name matches `pattern` (LBNodeAgent `localint` regex), in ifindex order.
Result<std::vector<LinkInfo>> FindLinks(Netlink& nl, const std::regex& pattern);

// The lowest-metric usable default route of `family` (multipath included), see select.h.
Result<DefaultRoute> DefaultInterfaces(Netlink& nl, net::Family family);
// The first interface of that route, with its link state.
Result<LinkInfo> DefaultInterface(Netlink& nl, net::Family family);

// The subnets of `ifindex` for `family` (select.h: InterfaceSubnets). Addresses tagged with
// `exclude_proto` (our VIPs) do not count.
Result<std::vector<net::Prefix>> InterfaceSubnetsOf(Netlink& nl, int ifindex, net::Family family,
                                                    std::optional<std::uint8_t> exclude_proto);

// The addresses on one interface (optionally one family).
Result<std::vector<AddressInfo>> AddressesOn(Netlink& nl, int ifindex,
                                             std::optional<net::Family> family);

// How kube-lb0 (the interface for virtual addresses) exists on this node.
enum class VirtualLinkKind {
  kDummy,   // the normal case: a dummy link
  kBridge,  // fallback when the kernel has no dummy driver: a bridge with no ports
  kOther,   // a pre-existing link of another kind, left as it is
};
std::string_view VirtualLinkKindName(VirtualLinkKind k);

struct VirtualLink {
  LinkInfo link;
  VirtualLinkKind kind = VirtualLinkKind::kDummy;
  bool created = false;  // false: it existed already
  // Why a fallback was used and what it implies; empty for a dummy. For the agent's log line
  // and its Kubernetes event.
  std::string note;
};

// Makes sure `name` exists and is up. Creates a dummy link; when the kernel answers EOPNOTSUPP
// ("Unknown device type": no dummy driver) it creates a bridge with no ports instead. A bridge
// with no ports may report no carrier (operstate down), but addresses added to it are local
// addresses: the kernel puts them in the local table, answers for them, and routing software
// reading the interface sees them, which is all kube-lb0 is for. IPv6 addresses must be added
// with NODAD there (DAD never completes without carrier). An existing link is reused whatever
// its kind and only set up.
Result<VirtualLink> EnsureVirtualLink(Netlink& nl, std::string_view name = "kube-lb0");

// The sysctls that stop `lan_interface` from answering ARP for addresses held on other
// interfaces (kube-lb0, lo): arp_ignore=1, arp_announce=2 (kube-proxy IPVS strictARP).
Status ApplyStrictArp(Netlink& nl, const std::string& lan_interface);

}  // namespace pylon::netlink
