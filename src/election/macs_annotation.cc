#include "election/macs_annotation.h"

#include <algorithm>

#include "common/text.h"
#include "net/mac.h"

namespace pylon::election {

MacsParse ParseMacsAnnotation(std::string_view value) {
  MacsParse out;
  for (const auto& [n, entry] : ListEntries(value)) {
    if (entry.empty()) continue;
    auto mac = net::MacAddress::Parse(entry);
    if (!mac) {
      out.issues.push_back("entry " + std::to_string(n) + " \"" + std::string(entry) +
                           "\": not a MAC address");
    } else if (out.macs.size() >= kMaxAnnotationMacs) {
      out.issues.push_back("entry " + std::to_string(n) + ": more than " +
                           std::to_string(kMaxAnnotationMacs) + " MACs, ignored");
    } else {
      out.macs.push_back(mac->ToString());
    }
  }
  std::sort(out.macs.begin(), out.macs.end());
  out.macs.erase(std::unique(out.macs.begin(), out.macs.end()), out.macs.end());
  return out;
}

std::string FormatMacsAnnotation(std::span<const std::string> macs) {
  std::vector<std::string> v;
  for (const auto& m : macs) {
    if (auto mac = net::MacAddress::Parse(m)) v.push_back(mac->ToString());
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (const auto& m : v) out += (out.empty() ? "" : ",") + m;
  return out;
}

}  // namespace pylon::election
