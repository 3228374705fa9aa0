#include "pool/requested.h"

#include <algorithm>
#include <string>

#include "common/text.h"

namespace pylon::pool {
Result<RequestedAddresses> ParseRequestedAddresses(std::string_view value) {
  RequestedAddresses out;
  if (Trim(value).empty()) return out;
  for (const auto& [index, item] : ListEntries(value)) {
    if (item.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "requested addresses: item " + std::to_string(index) + " is empty");
    }
    auto addr = net::IpAddress::Parse(item);
    if (!addr) {
      return Fail(ErrorCode::kInvalidArgument,
                  "requested addresses: \"" + std::string(item) + "\" is not an IP address");
    }
    auto& slot = out.For(addr->family());
    if (slot) {
      return Fail(ErrorCode::kInvalidArgument, "requested addresses: two " +
                                                   std::string(net::FamilyName(addr->family())) +
                                                   " addresses (" + slot->ToString() + " and " +
                                                   addr->ToString() + "); at most one per family");
    }
    slot = *addr;
  }
  return out;
}

Status CheckRequestedFamilies(const RequestedAddresses& requested,
                              std::span<const net::Family> selected) {
  for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
    const auto& addr = requested.For(f);
    if (!addr || std::find(selected.begin(), selected.end(), f) != selected.end()) continue;
    std::string gets;
    for (net::Family s : selected) {
      gets += (gets.empty() ? "" : " and ") + std::string(net::FamilyName(s));
    }
    if (gets.empty()) gets = "no family";
    return Fail(ErrorCode::kInvalidArgument, "requested " + std::string(net::FamilyName(f)) +
                                                 " address " + addr->ToString() +
                                                 " but the Service gets " + gets + " only");
  }
  return Ok();
}

}  // namespace pylon::pool
