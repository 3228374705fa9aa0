#include "election/subnets_annotation.h"

#include <algorithm>

#include "common/text.h"

namespace pylon::election {
namespace {

// The parser's reason may echo the input; keep each issue line bounded.
constexpr std::size_t kMaxReason = 120;

// Entries are quoted in issues; cap what is echoed so a huge garbage value cannot bloat logs.
std::string Quote(std::string_view entry) {
  constexpr std::size_t kMaxEcho = 64;
  std::string out = "\"";
  out += entry.substr(0, kMaxEcho);
  if (entry.size() > kMaxEcho) out += "...";
  out += "\"";
  return out;
}

void SortUnique(std::vector<net::Prefix>& v) {
  std::sort(v.begin(), v.end(), PrefixLess);
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

bool PrefixLess(const net::Prefix& a, const net::Prefix& b) {
  if (a.address() != b.address()) return a.address() < b.address();
  return a.length() < b.length();
}

SubnetsParse ParseSubnetsAnnotation(std::string_view value) {
  SubnetsParse out;
  std::size_t accepted = 0;
  std::size_t dropped_over_cap = 0;
  for (const auto& [index, entry] : ListEntries(value)) {
    if (entry.empty()) continue;
    auto prefix = net::Prefix::Parse(entry);
    if (!prefix) {
      std::string reason = prefix.error().message();
      if (reason.size() > kMaxReason) reason = reason.substr(0, kMaxReason) + "...";
      out.issues.push_back("entry " + std::to_string(index) + " " + Quote(entry) + ": " + reason);
    } else if (prefix->length() == 0) {
      out.issues.push_back("entry " + std::to_string(index) + " " + Quote(entry) +
                           ": a /0 prefix is not an on-link subnet");
    } else if (accepted == kMaxAnnotationSubnets) {
      ++dropped_over_cap;
    } else {
      out.subnets.push_back(prefix->Masked());
      ++accepted;
    }
  }
  if (dropped_over_cap > 0) {
    out.issues.push_back(std::to_string(dropped_over_cap) + " entries beyond the first " +
                         std::to_string(kMaxAnnotationSubnets) + " were ignored");
  }
  SortUnique(out.subnets);
  return out;
}

std::string FormatSubnetsAnnotation(std::span<const net::Prefix> subnets) {
  std::vector<net::Prefix> v;
  v.reserve(subnets.size());
  for (const auto& p : subnets) v.push_back(p.Masked());
  SortUnique(v);
  return JoinToString(v);
}

}  // namespace pylon::election
