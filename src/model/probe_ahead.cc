#include "model/probe_ahead.h"

#include "common/text.h"
#include "common/time.h"
#include "net/mac.h"

namespace pylon::model {

namespace {

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const auto pos = s.find(' ');
    if (pos != 0) out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) break;
    s.remove_prefix(pos + 1);
  }
  return out;
}

Result<ProbedAddress> ParseEntry(std::string_view entry) {
  const std::vector<std::string_view> f = Fields(entry);
  if (f.size() < 3) {
    return Fail(ErrorCode::kInvalidArgument,
                "want \"<address> free <time>\" or \"<address> taken <mac> <time>\"");
  }
  auto ip = net::IpAddress::Parse(std::string(f[0]));
  if (!ip) return Fail(ip.error());
  ProbedAddress p;
  p.address = *ip;
  std::string_view time;
  if (f[1] == "free" && f.size() == 3) {
    time = f[2];
  } else if (f[1] == "taken" && f.size() == 4) {
    auto mac = net::MacAddress::Parse(f[2]);
    if (!mac) return Fail(ErrorCode::kInvalidArgument, "bad MAC address");
    p.taken = true;
    p.mac = mac->ToString();
    time = f[3];
  } else {
    return Fail(ErrorCode::kInvalidArgument,
                "want \"<address> free <time>\" or \"<address> taken <mac> <time>\"");
  }
  auto t = ParseWholeSecondsTime(time);
  if (!t) return Fail(t.error());
  p.since = *t;
  return p;
}

}  // namespace

ProbeAheadParse ParseProbeAhead(std::string_view value) {
  ProbeAheadParse out;
  for (const auto& [number, entry] : ListEntries(value)) {
    if (entry.empty()) continue;
    auto p = ParseEntry(entry);
    if (p) {
      out.entries.push_back(std::move(*p));
    } else {
      out.issues.push_back("\"" + std::string(entry) + "\": " + p.error().message());
    }
  }
  return out;
}

std::string FormatProbeAhead(const std::vector<ProbedAddress>& entries) {
  std::string out;
  for (const auto& e : entries) {
    if (!out.empty()) out += ',';
    out += e.address.ToString();
    out += e.taken ? " taken " + e.mac + ' ' : std::string(" free ");
    out += FormatTime(e.since);
  }
  return out;
}

}  // namespace pylon::model
