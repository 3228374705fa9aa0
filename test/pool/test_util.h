// Literal helpers for the pool tests: parse test literals or fail loudly.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "net/ip.h"
#include "pool/allocator.h"
#include "pool/types.h"

namespace pylon::pool::testing {

inline std::vector<std::string_view> SplitList(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto comma = text.find(',');
    out.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

inline net::IpAddress Addr(std::string_view text) {
  auto a = net::IpAddress::Parse(text);
  if (!a) ADD_FAILURE() << "bad test address " << text;
  return a.value_or(net::IpAddress());
}

inline ServiceKey Svc(std::string_view text) {
  auto s = ServiceKey::Parse(text);
  if (!s) ADD_FAILURE() << "bad test service " << text;
  return s.value_or(ServiceKey());
}

// "TCP/80,UDP/53"
inline std::vector<PortKey> Ports(std::string_view text) {
  std::vector<PortKey> out;
  for (auto item : SplitList(text)) {
    auto p = ParsePortKey(item);
    if (!p) ADD_FAILURE() << "bad test port " << item;
    if (p) out.push_back(*p);
  }
  return out;
}

// "192.0.2.0/29" or "192.0.2.1-192.0.2.5"
inline net::AddressRange Range(std::string_view text) {
  if (text.find('/') != std::string_view::npos) {
    auto p = net::Prefix::Parse(text);
    if (!p) ADD_FAILURE() << "bad test prefix " << text;
    return net::AddressRange::FromPrefix(p.value_or(net::Prefix()));
  }
  auto r = net::AddressRange::Parse(text);
  if (!r) ADD_FAILURE() << "bad test range " << text;
  return r.value_or(net::AddressRange());
}

// "192.0.2.0/29,192.0.2.100-192.0.2.101"
inline std::vector<net::AddressRange> Ranges(std::string_view text) {
  std::vector<net::AddressRange> out;
  for (auto item : SplitList(text)) out.push_back(Range(item));
  return out;
}

inline PoolDefinition Pool(std::string key, std::string_view v4, std::string_view v6) {
  return PoolDefinition{std::move(key), Ranges(v4), Ranges(v6)};
}

// "4", "6", "46", "64"
inline std::vector<net::Family> Fams(std::string_view text) {
  std::vector<net::Family> out;
  for (char c : text) out.push_back(c == '4' ? net::Family::kV4 : net::Family::kV6);
  return out;
}

inline std::string Join(const std::vector<net::IpAddress>& addrs) {
  std::string out;
  for (const auto& a : addrs) out += (out.empty() ? "" : ",") + a.ToString();
  return out;
}

inline std::string Join(const std::vector<ServiceKey>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ",") + k.ToString();
  return out;
}

// A rebuild record: Rec("ns/web", pool, "192.0.2.1", sharing key, "TCP/80").
inline ExistingRecord Rec(const char* svc, const char* pool, const char* addr, const char* key,
                          const char* ports) {
  return {Svc(svc), pool, Addr(addr), key, Ports(ports)};
}

}  // namespace pylon::pool::testing
