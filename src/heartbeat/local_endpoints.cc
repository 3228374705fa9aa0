#include "heartbeat/local_endpoints.h"

#include <algorithm>

namespace pylon::heartbeat {

std::vector<net::IpAddress> EndpointAddresses(std::span<const netlink::AddressInfo> addresses,
                                              int ifindex,
                                              std::optional<std::uint8_t> exclude_proto,
                                              std::span<const net::IpAddress> exclude) {
  namespace af = netlink::addr_flags;
  static const net::Prefix kLinkLocal4 = *net::Prefix::Parse("169.254.0.0/16");
  std::optional<net::IpAddress> v4, v6;
  for (const auto& a : addresses) {
    if (a.ifindex != ifindex || a.scope != 0) continue;
    if (a.has_flag(af::kSecondary) || a.has_flag(af::kDeprecated) || a.has_flag(af::kTentative) ||
        a.has_flag(af::kDadFailed)) {
      continue;
    }
    if (exclude_proto && a.proto == exclude_proto) continue;
    const net::IpAddress ip = a.prefix.address();
    if (std::find(exclude.begin(), exclude.end(), ip) != exclude.end()) continue;
    if (ip.is_v4()) {
      if (!kLinkLocal4.Contains(ip) && (!v4 || ip < *v4)) v4 = ip;
    } else if (!v6 || ip < *v6) {
      v6 = ip;
    }
  }
  std::vector<net::IpAddress> out;
  if (v4) out.push_back(*v4);
  if (v6) out.push_back(*v6);
  return out;
}

}  // namespace pylon::heartbeat
