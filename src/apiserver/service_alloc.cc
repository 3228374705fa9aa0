#include "apiserver/service_alloc.h"

namespace pylon::apiserver {

std::string ServiceAllocator::CidrText(net::Family family) const {
  return PrefixFor(family).Masked().ToString();
}

Result<net::IpAddress> ServiceAllocator::AllocateIp(net::Family family) {
  const net::Prefix& p = PrefixFor(family);
  net::Uint128 size = p.Size();
  net::Uint128& cursor = family == net::Family::kV4 ? next_v4_ : next_v6_;
  net::Uint128 base = p.Network().value();
  // Offsets 0 (network) and 1 (the "kubernetes" service) are skipped; for IPv4 so is the last.
  net::Uint128 usable_end = family == net::Family::kV4 ? size - 1 : size;
  if (usable_end <= 2) return Fail(ErrorCode::kExhausted, "service CIDR too small");
  net::Uint128 span = usable_end - 2;
  for (net::Uint128 i = 0; i < span && i < 1u << 22; ++i) {
    net::Uint128 off = 2 + (cursor + i) % span;
    auto ip = net::IpAddress::FromValue(family, base + off);
    if (!ips_.count(ip)) {
      ips_.insert(ip);
      cursor = off - 1;
      return ip;
    }
  }
  return Fail(ErrorCode::kExhausted, "range is full");
}

Status ServiceAllocator::ClaimIp(const net::IpAddress& ip) {
  const net::Prefix& p = PrefixFor(ip.family());
  if (!p.Contains(ip) || ip == p.Network())
    return Fail(ErrorCode::kOutOfRange,
                "the provided IP (" + ip.ToString() +
                    ") is not in the valid range. The range of valid IPs is " +
                    CidrText(ip.family()));
  if (ips_.count(ip)) return Fail(ErrorCode::kConflict, "provided IP is already allocated");
  ips_.insert(ip);
  return Ok();
}

void ServiceAllocator::ReleaseIp(const net::IpAddress& ip) { ips_.erase(ip); }

Result<int> ServiceAllocator::AllocatePort() {
  int span = net_.node_port_max - net_.node_port_min + 1;
  for (int i = 0; i < span; ++i) {
    int port = net_.node_port_min + (next_port_ + i) % span;
    if (!ports_.count(port)) {
      ports_.insert(port);
      next_port_ = (port - net_.node_port_min + 1) % span;
      return port;
    }
  }
  return Fail(ErrorCode::kExhausted, "range is full");
}

Status ServiceAllocator::ClaimPort(int port) {
  if (port < net_.node_port_min || port > net_.node_port_max)
    return Fail(ErrorCode::kOutOfRange,
                "provided port is not in the valid range. The range of valid ports is " +
                    std::to_string(net_.node_port_min) + "-" + std::to_string(net_.node_port_max));
  if (ports_.count(port)) return Fail(ErrorCode::kConflict, "provided port is already allocated");
  ports_.insert(port);
  return Ok();
}

void ServiceAllocator::ReleasePort(int port) { ports_.erase(port); }

}  // namespace pylon::apiserver
