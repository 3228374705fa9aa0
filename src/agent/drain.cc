#include "agent/drain.h"

#include <algorithm>
#include <utility>

namespace pylon::agent {
namespace {

// Interface names as the kernel allows them that need no quoting care in nft's language.
bool PlainInterfaceName(const std::string& name) {
  if (name.empty() || name.size() > 15) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_' || c == '@';
  });
}

std::string Table(net::Family family, const std::vector<DrainForward>& forwards) {
  const bool v4 = family == net::Family::kV4;
  const std::string name = std::string(v4 ? "ip " : "ip6 ") + kDrainTable;
  // Created if absent, then deleted: the replacement below starts from nothing.
  std::string out = "table " + name + "\ndelete table " + name + "\n";
  std::string rules;
  for (const DrainForward& f : forwards) {
    if (f.address.family() != family || f.via.family() != family) continue;
    if (!PlainInterfaceName(f.interface)) continue;
    rules += std::string("    ") + (v4 ? "ip" : "ip6") + " daddr " + f.address.ToString() +
             " tcp flags & (syn | ack) != syn ct state { new, invalid } dup to " +
             f.via.ToString() + " device \"" + f.interface + "\" drop\n";
  }
  if (rules.empty()) return out;
  out += "table " + name + " {\n  chain prerouting {\n" +
         "    type filter hook prerouting priority -150; policy accept;\n" + rules + "  }\n}\n";
  return out;
}

}  // namespace

std::optional<net::IpAddress> DrainVia(const net::Prefix& subnet,
                                       const std::vector<net::IpAddress>& holder_addresses) {
  for (const net::IpAddress& a : holder_addresses) {
    if (a.family() == subnet.address().family() && subnet.Contains(a)) return a;
  }
  return std::nullopt;
}

void DrainBook::Start(DrainForward f, SteadyTime now) {
  auto it = forwards_.find(f.address);
  if (it != forwards_.end() && it->second.via == f.via && it->second.interface == f.interface &&
      it->second.from == f.from) {
    return;
  }
  f.until = now + timeout_;
  forwards_[f.address] = std::move(f);
  changed_ = true;
}

void DrainBook::Retain(const std::set<net::IpAddress>& held, SteadyTime now) {
  for (auto it = forwards_.begin(); it != forwards_.end();) {
    if (now >= it->second.until || !held.count(it->first)) {
      it = forwards_.erase(it);
      changed_ = true;
    } else {
      ++it;
    }
  }
}

bool DrainBook::TakeChanged() { return std::exchange(changed_, false); }

std::vector<DrainForward> DrainBook::Forwards() const {
  std::vector<DrainForward> out;
  for (const auto& [ip, f] : forwards_) out.push_back(f);
  return out;
}

std::optional<SteadyTime> DrainBook::NextExpiry() const {
  std::optional<SteadyTime> out;
  for (const auto& [ip, f] : forwards_) out = Earliest(out, f.until);
  return out;
}

std::string RenderDrainRuleset(const std::vector<DrainForward>& forwards) {
  return Table(net::Family::kV4, forwards) + Table(net::Family::kV6, forwards);
}

}  // namespace pylon::agent
