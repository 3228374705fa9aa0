#include "model/conflicts.h"

#include <algorithm>
#include <cctype>
#include <ctime>

namespace pylon::model {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    auto pos = s.find(sep);
    out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) break;
    s.remove_prefix(pos + 1);
  }
  return out;
}

bool ValidMac(std::string_view m) {
  if (m.size() != 17) return false;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (i % 3 == 2) {
      if (m[i] != ':') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(m[i]))) {
      return false;
    }
  }
  return true;
}

bool ValidToken(std::string_view t) {
  return !t.empty() && std::none_of(t.begin(), t.end(), [](char c) {
    return c == ' ' || c == ',' || c == '\t' || static_cast<unsigned char>(c) < 0x20;
  });
}

}  // namespace

std::string FormatUtcSeconds(WallTime t) {
  const std::time_t secs =
      std::chrono::system_clock::to_time_t(std::chrono::time_point_cast<std::chrono::seconds>(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<WallTime> ParseUtcSeconds(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SSZ
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:ddZ";
  if (text.size() != kShape.size()) {
    return Fail(ErrorCode::kInvalidArgument,
                "time \"" + std::string(text) + "\": not YYYY-MM-DDTHH:MM:SSZ");
  }
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const bool ok = kShape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(text[i])) != 0
                                     : text[i] == kShape[i];
    if (!ok) {
      return Fail(ErrorCode::kInvalidArgument,
                  "time \"" + std::string(text) + "\": not YYYY-MM-DDTHH:MM:SSZ");
    }
  }
  auto num = [&](std::size_t pos, std::size_t len) {
    int v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) v = v * 10 + (text[i] - '0');
    return v;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return Fail(ErrorCode::kInvalidArgument, "time \"" + std::string(text) + "\": out of range");
  }
  const std::time_t secs = timegm(&tm);
  return std::chrono::system_clock::from_time_t(secs);
}

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
  if (!ValidMac(f[1])) return Fail(ErrorCode::kInvalidArgument, "bad MAC address");
  if (!ValidToken(f[2]) || !ValidToken(f[3])) {
    return Fail(ErrorCode::kInvalidArgument, "bad node or interface");
  }
  auto t = ParseUtcSeconds(f[4]);
  if (!t) return Fail(t.error());
  std::string mac(f[1]);
  for (char& c : mac) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return AddressConflict{*ip, mac, std::string(f[2]), std::string(f[3]), *t};
}

std::string FormatAddressConflict(const AddressConflict& e) {
  return e.address.ToString() + ' ' + e.mac + ' ' + e.node + ' ' + e.interface + ' ' +
         FormatUtcSeconds(e.since);
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
