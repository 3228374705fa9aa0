#include "packet/mac.h"

namespace pylon::packet {
MacAddress Ipv6MulticastMac(const net::IpAddress& group) {
  auto b = group.bytes();
  return MacAddress({0x33, 0x33, b[12], b[13], b[14], b[15]});
}

net::IpAddress SolicitedNodeAddress(const net::IpAddress& address) {
  const net::Uint128 base = (net::Uint128{0xff02000000000000ULL} << 64) | 0x00000001ff000000ULL;
  return net::IpAddress::FromValue(net::Family::kV6, base | (address.value() & 0xffffff));
}

net::IpAddress AllNodesAddress() {
  return net::IpAddress::FromValue(net::Family::kV6,
                                   (net::Uint128{0xff02000000000000ULL} << 64) | 1);
}

}  // namespace pylon::packet
