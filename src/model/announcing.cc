#include "model/announcing.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace pylon::model {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::optional<AnnouncingEntry> ParseEntry(std::string_view e) {
  const auto first = e.find(',');
  if (first == std::string_view::npos || first == 0) return std::nullopt;
  const auto last = e.rfind(',');
  if (first == last) {  // v1: node,interface
    if (first + 1 >= e.size()) return std::nullopt;
    return AnnouncingEntry{std::string(e.substr(0, first)), std::string(e.substr(first + 1)), {}};
  }
  if (last == first + 1) return std::nullopt;  // empty interface
  auto ip = net::IpAddress::Parse(e.substr(last + 1));
  if (!ip) return std::nullopt;
  return AnnouncingEntry{std::string(e.substr(0, first)),
                         std::string(e.substr(first + 1, last - first - 1)), *ip};
}

}  // namespace

std::vector<AnnouncingEntry> ParseAnnouncing(std::string_view value) {
  std::vector<AnnouncingEntry> out;
  size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && IsSpace(value[i])) ++i;
    size_t j = i;
    while (j < value.size() && !IsSpace(value[j])) ++j;
    if (j > i) {
      if (auto e = ParseEntry(value.substr(i, j - i))) out.push_back(std::move(*e));
    }
    i = j;
  }
  return out;
}

std::optional<std::string> AnnouncerOf(std::string_view value, const net::IpAddress& address) {
  std::optional<std::string> v1;
  for (auto& e : ParseAnnouncing(value)) {
    if (e.address && *e.address == address) return std::move(e.node);
    if (!e.address && !v1) v1 = std::move(e.node);
  }
  return v1;
}

bool AnnouncingNames(std::string_view value, std::string_view node) {
  auto entries = ParseAnnouncing(value);
  return std::any_of(entries.begin(), entries.end(),
                     [&](const AnnouncingEntry& e) { return e.node == node; });
}

std::string FormatAnnouncingV1(std::string_view node, std::string_view interface) {
  return std::string(node) + "," + std::string(interface);
}

std::string ClaimAnnouncingV2(std::string_view current, std::string_view node,
                              std::string_view interface, const net::IpAddress& address,
                              const std::vector<net::IpAddress>& service_addresses) {
  // One entry per address; the smallest (node, interface) wins a duplicate, as in a canonical
  // encoding, except that this node's claim replaces whatever stood for its address.
  std::map<net::IpAddress, AnnouncingEntry> by_address;
  for (auto& e : ParseAnnouncing(current)) {
    if (!e.address || *e.address == address) continue;
    if (std::find(service_addresses.begin(), service_addresses.end(), *e.address) ==
        service_addresses.end()) {
      continue;
    }
    auto it = by_address.find(*e.address);
    if (it == by_address.end() ||
        std::tie(e.node, e.interface) < std::tie(it->second.node, it->second.interface)) {
      by_address[*e.address] = std::move(e);
    }
  }
  by_address[address] = AnnouncingEntry{std::string(node), std::string(interface), address};
  std::string out;
  for (const auto& [ip, e] : by_address) {
    if (!out.empty()) out += ' ';
    out += e.node + "," + e.interface + "," + ip.ToString();
  }
  return out;
}

}  // namespace pylon::model
