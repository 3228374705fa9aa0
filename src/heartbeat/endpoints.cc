#include "heartbeat/endpoints.h"

#include <algorithm>

#include "common/text.h"

namespace pylon::heartbeat {

namespace {

// Returns the reason the entry is bad, or an empty string.
std::string ParseEntry(std::string_view entry, Endpoint& out) {
  std::string_view host, port;
  if (entry.front() == '[') {
    const std::size_t close = entry.find(']');
    if (close == std::string_view::npos) return "missing ']'";
    host = entry.substr(1, close - 1);
    std::string_view rest = entry.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return "missing \":port\"";
    port = rest.substr(1);
    auto a = net::IpAddress::Parse(host);
    if (!a || !a->is_v6()) return "not an IPv6 address inside [ ]";
    out.address = *a;
  } else {
    const std::size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos) return "missing \":port\"";
    host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return "IPv6 addresses must be in [ ]";
    auto a = net::IpAddress::Parse(host);
    if (!a || !a->is_v4()) return "not an IPv4 address";
    out.address = *a;
  }
  auto parsed = ParsePort(port);
  if (!parsed) return "port must be 1..65535";
  out.port = *parsed;
  return {};
}

void Canonicalize(std::vector<Endpoint>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

std::string Endpoint::ToString() const {
  if (address.is_v4()) return address.ToString() + ":" + std::to_string(port);
  return "[" + address.ToString() + "]:" + std::to_string(port);
}

ParsedEndpoints ParseEndpoints(std::string_view value) {
  ParsedEndpoints out;
  std::size_t skipped_over_limit = 0;
  for (const auto& [number, entry] : ListEntries(value)) {
    if (entry.empty()) continue;
    Endpoint e;
    std::string reason = ParseEntry(entry, e);
    if (!reason.empty()) {
      out.issues.push_back("entry " + std::to_string(number) + " \"" + std::string(entry) +
                           "\": " + reason);
    } else if (out.endpoints.size() >= kMaxEndpoints) {
      ++skipped_over_limit;
    } else {
      out.endpoints.push_back(e);
    }
  }
  if (skipped_over_limit > 0) {
    out.issues.push_back(std::to_string(skipped_over_limit) + " endpoints beyond the first " +
                         std::to_string(kMaxEndpoints) + " ignored");
  }
  Canonicalize(out.endpoints);
  return out;
}

std::string FormatEndpoints(std::vector<Endpoint> endpoints) {
  Canonicalize(endpoints);
  return JoinToString(endpoints);
}

}  // namespace pylon::heartbeat
