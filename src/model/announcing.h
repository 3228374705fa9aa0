// The `purelb.io/announcing-IPv4` / `-IPv6` Service annotation: which node answers for the
// Service's local (elected) address of a family, written by the node that wins it. Two forms, one
// per API version of the address's ServiceGroup (docs/purelb-v2.md):
//  - v1 (PureLB 0.13 and purelb.io/v1 groups): "node,interface", one per family;
//  - v2 (PureLB 0.17 and purelb.io/v2 groups): entries "node,interface,ip" separated by white
//    space, one per address, sorted by (ip, node, interface); each node replaces only the entry of
//    the address it wins and drops entries of addresses the Service no longer has.
// Reading accepts both forms, so an address keeps its announcer when its group moves from one
// version to the other. An entry is split at its first comma (node) and, in the v2 form, its last
// comma (ip); what lies between is the interface (Linux names may contain commas). Malformed
// entries are dropped. Pure; no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/ip.h"

namespace pylon::model {

struct AnnouncingEntry {
  std::string node;
  std::string interface;
  std::optional<net::IpAddress> address;  // none in the v1 form
  friend bool operator==(const AnnouncingEntry&, const AnnouncingEntry&) = default;
};

// Every well-formed entry of a value in either form.
std::vector<AnnouncingEntry> ParseAnnouncing(std::string_view value);
// The node announcing `address`: the v2 entry for it, else a v1 entry's node; none if neither.
std::optional<std::string> AnnouncerOf(std::string_view value, const net::IpAddress& address);
// True when some entry of the value names `node`.
bool AnnouncingNames(std::string_view value, std::string_view node);

// "node,interface".
std::string FormatAnnouncingV1(std::string_view node, std::string_view interface);
// The v2 value after `node` wins `address` on `interface`: its entry replaced, v1-form entries and
// entries of addresses not in `service_addresses` (the Service's addresses of that family)
// dropped, the rest kept; canonical order, one entry per address.
std::string ClaimAnnouncingV2(std::string_view current, std::string_view node,
                              std::string_view interface, const net::IpAddress& address,
                              const std::vector<net::IpAddress>& service_addresses);

}  // namespace pylon::model
