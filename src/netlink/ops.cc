#include "netlink/ops.h"

#include <algorithm>

namespace pylon::netlink {

Result<std::vector<LinkInfo>> FindLinks(Netlink& nl, const std::regex& pattern) {
  auto links = nl.ListLinks();
  if (!links) return tl::unexpected(links.error());
  std::vector<LinkInfo> out;
  for (LinkInfo& l : *links) {
    if (std::regex_match(l.name, pattern)) out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(),
            [](const LinkInfo& a, const LinkInfo& b) { return a.index < b.index; });
  return out;
}

Result<DefaultRoute> DefaultInterfaces(Netlink& nl, net::Family family) {
  auto routes = nl.ListRoutes(family);
  if (!routes) return tl::unexpected(routes.error());
  return SelectDefaultRoute(*routes, family);
}

Result<LinkInfo> DefaultInterface(Netlink& nl, net::Family family) {
  auto route = DefaultInterfaces(nl, family);
  if (!route) return tl::unexpected(route.error());
  auto links = nl.ListLinks();
  if (!links) return tl::unexpected(links.error());
  for (LinkInfo& l : *links) {
    if (l.index == route->ifindexes.front()) return std::move(l);
  }
  return Fail(ErrorCode::kNotFound,
              "default route interface " + std::to_string(route->ifindexes.front()) + " vanished");
}

Result<std::vector<net::Prefix>> InterfaceSubnetsOf(Netlink& nl, int ifindex, net::Family family,
                                                    std::optional<std::uint8_t> exclude_proto) {
  auto addrs = nl.ListAddresses(family);
  if (!addrs) return tl::unexpected(addrs.error());
  auto routes = nl.ListRoutes(family);
  if (!routes) return tl::unexpected(routes.error());
  return InterfaceSubnets(*addrs, *routes, ifindex, family, exclude_proto);
}

Result<std::vector<AddressInfo>> AddressesOn(Netlink& nl, int ifindex,
                                             std::optional<net::Family> family) {
  auto addrs = nl.ListAddresses(family);
  if (!addrs) return tl::unexpected(addrs.error());
  std::vector<AddressInfo> out;
  for (AddressInfo& a : *addrs) {
    if (a.ifindex == ifindex) out.push_back(std::move(a));
  }
  return out;
}

std::string_view VirtualLinkKindName(VirtualLinkKind k) {
  switch (k) {
    case VirtualLinkKind::kDummy:
      return "dummy";
    case VirtualLinkKind::kBridge:
      return "bridge";
    case VirtualLinkKind::kOther:
      return "other";
  }
  return "other";
}

Result<VirtualLink> EnsureVirtualLink(Netlink& nl, std::string_view name) {
  VirtualLink out;
  auto existing = nl.GetLink(name);
  if (existing) {
    out.link = std::move(*existing);
    out.kind = out.link.kind == "dummy"    ? VirtualLinkKind::kDummy
               : out.link.kind == "bridge" ? VirtualLinkKind::kBridge
                                           : VirtualLinkKind::kOther;
    if (out.kind == VirtualLinkKind::kOther) {
      out.note =
          "existing link '" + std::string(name) + "' of kind '" + out.link.kind + "' reused as is";
    }
  } else if (existing.error().code() != ErrorCode::kNotFound) {
    return tl::unexpected(existing.error());
  } else {
    auto created = nl.CreateLink(name, "dummy");
    out.kind = VirtualLinkKind::kDummy;
    if (!created && created.error().code() == ErrorCode::kUnsupported) {
      out.note = "kernel has no dummy link kind (" + created.error().message() +
                 "); created a bridge with no ports instead: it may show no carrier, but its "
                 "addresses are local and visible to routing software";
      created = nl.CreateLink(name, "bridge");
      out.kind = VirtualLinkKind::kBridge;
    }
    if (!created) return tl::unexpected(created.error().Wrap("create " + std::string(name)));
    out.link = std::move(*created);
    out.created = true;
  }
  if (!out.link.admin_up()) {
    if (auto st = nl.SetLinkUp(out.link.index, true); !st) {
      if (out.created) (void)nl.DeleteLink(out.link.index);  // not left behind, half made
      return tl::unexpected(st.error());
    }
    auto refreshed = nl.GetLink(name);
    if (!refreshed) return tl::unexpected(refreshed.error());
    out.link = std::move(*refreshed);
  }
  return out;
}

Status ApplyStrictArp(Netlink& nl, const std::string& lan_interface) {
  if (auto st = nl.WriteSysctl(ArpIgnore(lan_interface), "1"); !st) return st;
  return nl.WriteSysctl(ArpAnnounce(lan_interface), "2");
}

}  // namespace pylon::netlink
