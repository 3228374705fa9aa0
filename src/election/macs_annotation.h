// The `purelb.io/macs` annotation of a node lease: the Ethernet addresses of the interfaces the
// node announces on. Peers use it to tell the cluster's own nodes from foreign hosts when a
// duplicate-address probe is answered: a node killed with SIGKILL keeps answering ARP/NS for its
// addresses until their lifetime runs out, and that answer must not count as a conflict.
//
// Format: MACs separated by ",", each "aa:bb:cc:dd:ee:ff" (any case; written lower case, sorted,
// no duplicates), e.g. "02:00:00:00:00:01,02:00:00:00:00:02". Bad entries are skipped and
// reported; at most kMaxAnnotationMacs are kept. Pure.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pylon::election {

inline constexpr std::string_view kMacsAnnotation = "purelb.io/macs";
inline constexpr std::size_t kMaxAnnotationMacs = 64;

struct MacsParse {
  std::vector<std::string> macs;  // lower case, sorted, deduplicated
  std::vector<std::string> issues;
};

MacsParse ParseMacsAnnotation(std::string_view value);
// Canonical form: lower case, sorted, deduplicated, invalid entries dropped.
std::string FormatMacsAnnotation(std::span<const std::string> macs);

}  // namespace pylon::election
