#include <string>

#include "netlink/netlink.h"

namespace pylon::netlink {
namespace {
SysctlKey Key(net::Family f, std::string interface, const char* name) {
  return SysctlKey{f, std::move(interface), name};
}
bool ValidComponent(std::string_view s, bool allow_dot) {
  if (s.empty() || s == "." || s == ".." || s.size() > 64) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '@' || (allow_dot && c == '.');
    if (!ok) return false;
  }
  return true;
}
}  // namespace

SysctlKey ArpIgnore(std::string i) { return Key(net::Family::kV4, std::move(i), "arp_ignore"); }
SysctlKey ArpAnnounce(std::string i) { return Key(net::Family::kV4, std::move(i), "arp_announce"); }
SysctlKey PromoteSecondaries(std::string i) {
  return Key(net::Family::kV4, std::move(i), "promote_secondaries");
}
SysctlKey ArpAccept(std::string i) { return Key(net::Family::kV4, std::move(i), "arp_accept"); }
SysctlKey NdiscNotify(std::string i) { return Key(net::Family::kV6, std::move(i), "ndisc_notify"); }
SysctlKey AcceptDad(std::string i) { return Key(net::Family::kV6, std::move(i), "accept_dad"); }

Result<std::string> SysctlRelativePath(const SysctlKey& key) {
  // Interface names may contain dots (VLANs: eth0.100); /proc/sys shows them with '/' replaced
  // by '.', and we never accept a '/'.
  if (!ValidComponent(key.interface, true) || key.interface.size() > 15) {
    return Fail(ErrorCode::kInvalidArgument, "sysctl: bad interface '" + key.interface + "'");
  }
  if (!ValidComponent(key.name, false)) {
    return Fail(ErrorCode::kInvalidArgument, "sysctl: bad name '" + key.name + "'");
  }
  std::string fam = key.family == net::Family::kV4 ? "ipv4" : "ipv6";
  return "net/" + fam + "/conf/" + key.interface + "/" + key.name;
}

}  // namespace pylon::netlink
