// Value types describing the kernel's link / address / route state as Pylon sees it. Shared by
// the pure message builders and parsers, the real netlink adapter and the in-memory fake.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "net/ip.h"

namespace pylon::netlink {

// Kernel routing table ids and route types used here (values of <linux/rtnetlink.h>).
inline constexpr std::uint32_t kMainTable = 254;
inline constexpr std::uint32_t kLocalTable = 255;

// IFA_F_* address flags (<linux/if_addr.h>), 32 bits as carried by IFA_FLAGS.
namespace addr_flags {
inline constexpr std::uint32_t kSecondary = 0x01;
inline constexpr std::uint32_t kNoDad = 0x02;
inline constexpr std::uint32_t kOptimistic = 0x04;
inline constexpr std::uint32_t kDadFailed = 0x08;
inline constexpr std::uint32_t kHomeAddress = 0x10;
inline constexpr std::uint32_t kDeprecated = 0x20;
inline constexpr std::uint32_t kTentative = 0x40;
inline constexpr std::uint32_t kPermanent = 0x80;
inline constexpr std::uint32_t kManageTempAddr = 0x100;
inline constexpr std::uint32_t kNoPrefixRoute = 0x200;
// Flags the kernel accepts only for IPv6 addresses.
inline constexpr std::uint32_t kIpv6Only = kNoDad | kOptimistic | kHomeAddress | kManageTempAddr;
}  // namespace addr_flags

// Address lifetimes in seconds; kForever (0xffffffff) means infinite, as in IFA_CACHEINFO.
using Seconds = std::chrono::seconds;
inline constexpr Seconds kForever{0xffffffffu};

struct Lifetimes {
  Seconds valid = kForever;
  Seconds preferred = kForever;
  friend bool operator==(const Lifetimes&, const Lifetimes&) = default;
};

// One link (RTM_NEWLINK). flags are IFF_* from <net/if.h>.
struct LinkInfo {
  int index = 0;
  std::string name;
  std::string kind;  // IFLA_INFO_KIND ("veth", "bridge", ...); empty for plain hardware
  std::uint32_t flags = 0;
  std::uint8_t operstate = 0;        // IF_OPER_* (RFC 2863): 6 = up, 2 = down, 0 = unknown
  std::optional<bool> carrier;       // IFLA_CARRIER when the kernel reports it
  std::vector<std::uint8_t> hwaddr;  // IFLA_ADDRESS (6 bytes for Ethernet)
  std::uint32_t mtu = 0;

  bool admin_up() const;  // IFF_UP
  bool lower_up() const;  // IFF_LOWER_UP: the driver reports carrier
  // Usable for announcing: administratively up and carrier present (operstate up or unknown).
  bool operational() const;
  friend bool operator==(const LinkInfo&, const LinkInfo&) = default;
};

// One address (RTM_NEWADDR). `prefix` holds the local address with its prefix length (host bits
// kept, e.g. 192.0.2.10/24).
struct AddressInfo {
  int ifindex = 0;
  net::Prefix prefix;
  std::optional<net::IpAddress> peer;  // IFA_ADDRESS when it differs from IFA_LOCAL (ptp links)
  std::uint32_t flags = 0;             // addr_flags::*
  std::uint8_t scope = 0;              // RT_SCOPE_*: 0 universe, 253 link, 254 host
  std::optional<std::uint8_t> proto;   // IFA_PROTO (Linux 6.1+); absent on older kernels
  Lifetimes lifetimes;                 // IFA_CACHEINFO, remaining seconds
  std::string label;                   // IFA_LABEL (IPv4)

  net::Family family() const { return prefix.family(); }
  bool has_flag(std::uint32_t f) const { return (flags & f) != 0; }
  friend bool operator==(const AddressInfo&, const AddressInfo&) = default;
};

// One next hop of a route: the RTA_OIF/RTA_GATEWAY of a single-path route, or one rtnexthop of
// RTA_MULTIPATH.
struct Nexthop {
  int ifindex = 0;
  std::optional<net::IpAddress> gateway;
  std::uint8_t flags = 0;   // RTNH_F_*: 1 dead, 16 linkdown
  std::uint8_t weight = 1;  // rtnh_hops + 1
  friend bool operator==(const Nexthop&, const Nexthop&) = default;
};

// One route (RTM_NEWROUTE).
struct RouteInfo {
  net::Family family = net::Family::kV4;
  net::Prefix dst;            // 0.0.0.0/0 or ::/0 for a default route
  std::uint32_t table = 0;    // RTA_TABLE, else rtm_table
  std::uint8_t type = 0;      // RTN_*: 1 unicast
  std::uint8_t protocol = 0;  // RTPROT_*: 2 kernel, 3 boot, 4 static, 9 ra, 16 dhcp
  std::uint8_t scope = 0;
  std::uint32_t flags = 0;                  // rtm_flags (RTNH_F_* for single-path routes)
  std::uint32_t priority = 0;               // RTA_PRIORITY (the metric); 0 when absent
  std::optional<std::uint32_t> nexthop_id;  // RTA_NH_ID (nexthop objects; not resolved here)
  std::vector<Nexthop> nexthops;            // one for RTA_OIF routes, N for RTA_MULTIPATH
  friend bool operator==(const RouteInfo&, const RouteInfo&) = default;
};

// Notifications from the multicast groups RTNLGRP_LINK and RTNLGRP_IPV{4,6}_IFADDR.
enum class ChangeKind { kNew, kDeleted };
struct LinkEvent {
  ChangeKind kind = ChangeKind::kNew;
  LinkInfo link;
  friend bool operator==(const LinkEvent&, const LinkEvent&) = default;
};
struct AddressEvent {
  ChangeKind kind = ChangeKind::kNew;
  AddressInfo address;
  friend bool operator==(const AddressEvent&, const AddressEvent&) = default;
};
// Notifications were lost (socket overrun, ENOBUFS): the receiver must re-list links and
// addresses instead of trusting its incremental view.
struct ResyncEvent {
  friend bool operator==(const ResyncEvent&, const ResyncEvent&) = default;
};
using Event = std::variant<LinkEvent, AddressEvent, ResyncEvent>;

}  // namespace pylon::netlink
