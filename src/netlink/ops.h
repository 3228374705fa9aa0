// High-level operations written once against the Netlink interface so they run unchanged over the
// kernel (NetlinkImpl) and the fake (FakeNetlink): kube-lb0's creation.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "netlink/netlink.h"

namespace pylon::netlink {

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

}  // namespace pylon::netlink
