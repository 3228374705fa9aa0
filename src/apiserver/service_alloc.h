// Cluster IP and node port allocation for Services. Not thread-safe (used under the store lock).
#pragma once

#include <optional>
#include <set>

#include "common/result.h"
#include "net/ip.h"

namespace pylon::apiserver {

struct ServiceNetwork {
  net::Prefix v4 = *net::Prefix::Parse("10.96.0.0/12");
  net::Prefix v6 = *net::Prefix::Parse("fd00:10:96::/112");
  net::Family primary = net::Family::kV4;  // the cluster's primary IP family
  int node_port_min = 30000;
  int node_port_max = 32767;
};

class ServiceAllocator {
 public:
  explicit ServiceAllocator(ServiceNetwork net) : net_(std::move(net)) {}
  const ServiceNetwork& network() const { return net_; }

  // Next free address of the family (the network address and the first host are never used).
  Result<net::IpAddress> AllocateIp(net::Family family);
  // Claims a specific address; kOutOfRange outside the CIDR, kConflict when taken.
  Status ClaimIp(const net::IpAddress& ip);
  void ReleaseIp(const net::IpAddress& ip);
  std::string CidrText(net::Family family) const;

  Result<int> AllocatePort();
  Status ClaimPort(int port);
  void ReleasePort(int port);

 private:
  const net::Prefix& PrefixFor(net::Family f) const {
    return f == net::Family::kV4 ? net_.v4 : net_.v6;
  }
  ServiceNetwork net_;
  std::set<net::IpAddress> ips_;
  std::set<int> ports_;
  net::Uint128 next_v4_ = 0, next_v6_ = 0;  // offsets into the prefixes
  int next_port_ = 0;
};

}  // namespace pylon::apiserver
