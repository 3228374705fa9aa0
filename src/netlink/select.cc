#include "netlink/select.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace pylon::netlink {
namespace {

constexpr std::uint8_t kRtnUnicast = 1;
constexpr std::uint8_t kNhDead = 1;       // RTNH_F_DEAD
constexpr std::uint8_t kNhLinkDown = 16;  // RTNH_F_LINKDOWN
constexpr std::uint8_t kScopeLink = 253;
constexpr std::uint8_t kScopeHost = 254;

bool UsableNexthop(const Nexthop& nh) {
  return nh.ifindex > 0 && (nh.flags & (kNhDead | kNhLinkDown)) == 0;
}

bool IsLinkLocal(const net::IpAddress& a) {
  if (a.is_v4()) return (a.value() >> 16) == 0xa9fe;  // 169.254.0.0/16
  return (a.value() >> 118) == (0xfe80 >> 6);         // fe80::/10
}

void AddUnique(std::vector<net::Prefix>& out, const net::Prefix& p) {
  if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
}

bool OnLinkVia(const RouteInfo& r, int ifindex) {
  if (r.nexthops.empty()) return false;
  for (const Nexthop& nh : r.nexthops) {
    if (nh.ifindex != ifindex || nh.gateway) return false;
  }
  return true;
}

std::optional<net::Prefix> OnLinkPrefixFor(const net::IpAddress& a,
                                           std::span<const RouteInfo> routes, int ifindex) {
  const RouteInfo* best = nullptr;
  auto rank = [](const RouteInfo& r) {
    return std::pair<int, int>(r.protocol == kProtoRa ? 1 : 0, r.dst.length());
  };
  for (const RouteInfo& r : routes) {
    if (r.family != a.family() || r.table != kMainTable || r.type != kRtnUnicast) continue;
    if (r.dst.length() == 0 || r.dst.length() >= net::FamilyBits(a.family())) continue;
    if (!r.dst.Contains(a) || !OnLinkVia(r, ifindex)) continue;
    if (best == nullptr || rank(r) > rank(*best)) best = &r;
  }
  if (best == nullptr) return std::nullopt;
  return best->dst.Masked();
}

}  // namespace

Result<DefaultRoute> SelectDefaultRoute(std::span<const RouteInfo> routes, net::Family family) {
  std::optional<DefaultRoute> best;
  for (const RouteInfo& r : routes) {
    if (r.family != family || r.dst.length() != 0 || r.table != kMainTable ||
        r.type != kRtnUnicast) {
      continue;
    }
    DefaultRoute candidate{r.priority, {}};
    for (const Nexthop& nh : r.nexthops) {
      if (!UsableNexthop(nh)) continue;
      auto& ifs = candidate.ifindexes;
      if (std::find(ifs.begin(), ifs.end(), nh.ifindex) == ifs.end()) ifs.push_back(nh.ifindex);
    }
    if (candidate.ifindexes.empty()) continue;
    if (!best || candidate.metric < best->metric) {
      best = std::move(candidate);
    } else if (candidate.metric == best->metric) {
      // Same metric in separate messages (IPv4 allows this): the kernel uses the first; keep
      // the others after it so the caller sees every interface that can carry default traffic.
      for (int i : candidate.ifindexes) {
        auto& ifs = best->ifindexes;
        if (std::find(ifs.begin(), ifs.end(), i) == ifs.end()) ifs.push_back(i);
      }
    }
  }
  if (!best) {
    return Fail(ErrorCode::kNotFound, std::string("no usable ") +
                                          std::string(net::FamilyName(family)) +
                                          " default route in the main table");
  }
  return *best;
}

std::vector<net::Prefix> InterfaceSubnets(std::span<const AddressInfo> addresses,
                                          std::span<const RouteInfo> routes, int ifindex,
                                          net::Family family,
                                          std::optional<std::uint8_t> exclude_proto) {
  std::vector<net::Prefix> out;
  for (const AddressInfo& a : addresses) {
    if (a.ifindex != ifindex || a.family() != family) continue;
    if (a.scope == kScopeLink || a.scope == kScopeHost || IsLinkLocal(a.prefix.address())) continue;
    if (a.has_flag(addr_flags::kTentative) || a.has_flag(addr_flags::kDadFailed)) continue;
    if (exclude_proto && a.proto == exclude_proto) continue;
    if (a.prefix.length() < net::FamilyBits(family)) {
      AddUnique(out, a.prefix.Masked());
    } else if (auto p = OnLinkPrefixFor(a.prefix.address(), routes, ifindex)) {
      AddUnique(out, *p);
    }
  }
  return out;
}

Result<KernelVersion> ParseKernelRelease(std::string_view release) {
  KernelVersion v;
  const char* p = release.data();
  const char* end = p + release.size();
  auto r1 = std::from_chars(p, end, v.major);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != '.') {
    return Fail(ErrorCode::kInvalidArgument, "kernel release '" + std::string(release) + "'");
  }
  auto r2 = std::from_chars(r1.ptr + 1, end, v.minor);
  if (r2.ec != std::errc()) {
    return Fail(ErrorCode::kInvalidArgument, "kernel release '" + std::string(release) + "'");
  }
  return v;
}

}  // namespace pylon::netlink
