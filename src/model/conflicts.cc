#include "model/conflicts.h"

#include <algorithm>

#include "common/text.h"
#include "common/time.h"
#include "net/mac.h"

namespace pylon::model {

namespace {

bool ValidToken(std::string_view t) {
  return !t.empty() && std::none_of(t.begin(), t.end(), [](char c) {
    return c == ' ' || c == ',' || c == '\t' || static_cast<unsigned char>(c) < 0x20;
  });
}

}  // namespace

std::string ConflictAnnotationKey(const net::IpAddress& address) {
  std::string text = address.ToString();
  for (char& c : text) {
    if (c == '.' || c == ':') c = '-';
  }
  if (text.back() == '-') text += '0';  // "2001:db8::" = "2001:db8::0"; names end alphanumeric
  return std::string(kAnnConflictPrefix) + (address.is_v4() ? "ipv4-" : "ipv6-") + text;
}

Result<AddressConflict> ParseAddressConflict(std::string_view value) {
  std::vector<std::string_view> f;
  for (std::string_view part : Split(Trim(value), ' ')) {
    if (!part.empty()) f.push_back(part);
  }
  if (f.size() != 5) {
    return Fail(ErrorCode::kInvalidArgument, "want <address> <mac> <node> <interface> <time>");
  }
  auto ip = net::IpAddress::Parse(std::string(f[0]));
  if (!ip) return Fail(ip.error());
  auto mac = net::MacAddress::Parse(f[1]);
  if (!mac) return Fail(ErrorCode::kInvalidArgument, "bad MAC address");
  if (!ValidToken(f[2]) || !ValidToken(f[3])) {
    return Fail(ErrorCode::kInvalidArgument, "bad node or interface");
  }
  auto t = ParseWholeSecondsTime(f[4]);
  if (!t) return Fail(t.error());
  return AddressConflict{*ip, mac->ToString(), std::string(f[2]), std::string(f[3]), *t};
}

std::string FormatAddressConflict(const AddressConflict& e) {
  return e.address.ToString() + ' ' + e.mac + ' ' + e.node + ' ' + e.interface + ' ' +
         FormatTime(e.since);
}

AddressConflictsParse ParseAddressConflicts(const std::map<std::string, std::string>& annotations) {
  AddressConflictsParse out;
  const std::string prefix = kAnnConflictPrefix;
  for (auto it = annotations.lower_bound(prefix);
       it != annotations.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    auto c = ParseAddressConflict(it->second);
    if (!c) {
      out.issues.push_back(it->first + " \"" + it->second + "\": " + c.error().message());
      continue;
    }
    if (ConflictAnnotationKey(c->address) != it->first) {
      out.issues.push_back(it->first + ": the value names " + c->address.ToString());
      continue;
    }
    out.entries.push_back(std::move(*c));
  }
  return out;
}

}  // namespace pylon::model
