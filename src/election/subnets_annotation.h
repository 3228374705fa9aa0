// The `purelb.io/subnets` annotation of a node lease: which subnets the node can announce on.
//
// Format (written by FormatSubnetsAnnotation, accepted by ParseSubnetsAnnotation):
//   value   = [ entry *( "," entry ) ]
//   entry   = OWS cidr OWS            ; OWS = optional spaces / tabs
//   cidr    = ipv4 "/" 1*2DIGIT       ; dotted quad, length 1..32
//           / ipv6 "/" 1*3DIGIT       ; RFC 4291 text (no zone), length 1..128
// IPv4 and IPv6 entries mix freely, in any order. Written form: masked networks, IPv4 first then
// IPv6, each ascending, no spaces, no duplicates, e.g. "192.0.2.0/24,2001:db8::/64".
//
// Parsing is defensive because the value is written by another node (possibly an older or buggy
// agent, or PureLB itself): a bad entry is skipped and reported, never fatal. Host bits are
// cleared ("192.0.2.7/24" means 192.0.2.0/24, as `ip addr` prints it); empty entries (a trailing
// comma, an empty value) are ignored; duplicates collapse; /0 is rejected (a default route is not
// an on-link subnet and would make the node a candidate for every address); at most
// kMaxAnnotationSubnets entries are kept, the rest are reported.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/ip.h"

namespace pylon::election {

inline constexpr std::size_t kMaxAnnotationSubnets = 256;

struct SubnetsParse {
  // Masked, deduplicated, sorted (IPv4 before IPv6, then by network, then by length).
  std::vector<net::Prefix> subnets;
  // One human-readable line per skipped entry: `entry 3 "10.0.0.0/33": <reason>`.
  std::vector<std::string> issues;
};

SubnetsParse ParseSubnetsAnnotation(std::string_view value);

// The canonical written form of a subnet list (masks, sorts and deduplicates first).
std::string FormatSubnetsAnnotation(std::span<const net::Prefix> subnets);

// Orders prefixes by family, network, then length; the order used for SubnetsParse::subnets.
bool PrefixLess(const net::Prefix& a, const net::Prefix& b);

}  // namespace pylon::election
