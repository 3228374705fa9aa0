// Requested load-balancer addresses (annotation `loadbalancer.lace-cni.io/loadBalancerIPs` or
// `purelb.io/addresses`, or spec.loadBalancerIP): at most one per family. Pure.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/ip.h"

namespace pylon::pool {

struct RequestedAddresses {
  std::optional<net::IpAddress> v4;
  std::optional<net::IpAddress> v6;

  const std::optional<net::IpAddress>& For(net::Family f) const {
    return f == net::Family::kV4 ? v4 : v6;
  }
  std::optional<net::IpAddress>& For(net::Family f) { return f == net::Family::kV4 ? v4 : v6; }
  bool empty() const { return !v4 && !v6; }
  friend bool operator==(const RequestedAddresses&, const RequestedAddresses&) = default;
};

// Parses "198.51.100.7,2001:db8:f00d::7": comma-separated, items trimmed of spaces and tabs.
// A value that is blank as a whole requests nothing. Errors (kInvalidArgument, message naming
// the item): an empty item ("a,,b", trailing comma), an unparsable address, two of one family.
Result<RequestedAddresses> ParseRequestedAddresses(std::string_view value);

// Every requested family must be among the selected families (kInvalidArgument otherwise, e.g.
// "requested IPv6 address 2001:db8::7 but the Service gets IPv4 only").
Status CheckRequestedFamilies(const RequestedAddresses& requested,
                              std::span<const net::Family> selected);

}  // namespace pylon::pool
