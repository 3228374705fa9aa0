// The IPv6 multicast mappings NDP needs (the MAC address type is net/mac.h). Pure.
#pragma once

#include "net/ip.h"
#include "net/mac.h"

namespace pylon::packet {

// The Ethernet address type lives in net; packet code names it unqualified.
using net::MacAddress;

// RFC 2464 §7: 33:33 followed by the low 32 bits of an IPv6 multicast address.
MacAddress Ipv6MulticastMac(const net::IpAddress& group);
// RFC 4291 §2.7.1: ff02::1:ff00:0/104 with the low 24 bits of `address`.
net::IpAddress SolicitedNodeAddress(const net::IpAddress& address);
// ff02::1, the all-nodes link-local group.
net::IpAddress AllNodesAddress();

}  // namespace pylon::packet
