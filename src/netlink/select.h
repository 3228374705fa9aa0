// Pure selection logic over dumped kernel state: which interface carries the default route, which
// subnets an interface is on, whether the running kernel supports IFA_PROTO.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/ip.h"
#include "netlink/types.h"

namespace pylon::netlink {

// RTPROT_* values this logic cares about.
inline constexpr std::uint8_t kProtoRa = 9;  // learned from a Router Advertisement

struct DefaultRoute {
  std::uint32_t metric = 0;
  // Output interfaces in route order, without duplicates: one for a single-path route, several
  // for ECMP (RTA_MULTIPATH). Never empty.
  std::vector<int> ifindexes;
  friend bool operator==(const DefaultRoute&, const DefaultRoute&) = default;
};

// The default route of `family`: rtm_dst_len == 0, main table, RTN_UNICAST, lowest RTA_PRIORITY.
// Next hops flagged dead or linkdown are skipped; a route left without next hops is passed over
// for the next metric. Routes through nexthop objects (RTA_NH_ID without inline next hops) are
// not resolved and are skipped. kNotFound when no usable default route exists.
Result<DefaultRoute> SelectDefaultRoute(std::span<const RouteInfo> routes, net::Family family);

// The subnets `ifindex` is on, for one family, in address order of first appearance, without
// duplicates:
//  - an address with a prefix shorter than the full length gives its masked prefix
//    (192.0.2.7/24 -> 192.0.2.0/24);
//  - a host address (/32, /128: DHCPv6 gives those, RFC 5942) gives the on-link route covering it
//    on the same interface: no gateway, main table, unicast, 0 < dst_len < full; a route learned
//    from a Router Advertisement (proto ra) is preferred, then the longest prefix. No such route:
//    the address contributes nothing.
// Skipped: link/host scope (fe80::/10, 127/8, 169.254/16 with scope link), tentative and
// dadfailed addresses, and addresses tagged with `exclude_proto` (our own VIPs).
std::vector<net::Prefix> InterfaceSubnets(std::span<const AddressInfo> addresses,
                                          std::span<const RouteInfo> routes, int ifindex,
                                          net::Family family,
                                          std::optional<std::uint8_t> exclude_proto);

struct KernelVersion {
  int major = 0;
  int minor = 0;
  friend auto operator<=>(const KernelVersion&, const KernelVersion&) = default;
};
// Parses `uname -r` text such as "6.18.44-fc-v769" or "5.10.0-21-amd64".
Result<KernelVersion> ParseKernelRelease(std::string_view release);
// IFA_PROTO exists since Linux 6.1; older kernels silently ignore the attribute.
inline bool KernelSupportsAddressProto(KernelVersion v) { return v >= KernelVersion{6, 1}; }

}  // namespace pylon::netlink
