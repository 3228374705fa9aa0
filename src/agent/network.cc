#include "agent/network.h"

#include <algorithm>

#include "election/subnets_annotation.h"
#include "netlink/message.h"
#include "netlink/ops.h"
#include "netlink/select.h"

namespace pylon::agent {

Result<NodeNetwork> DiscoverNetwork(netlink::Netlink& nl,
                                    const config::NodeAgentConfig* agent_config) {
  NodeNetwork out;
  if (agent_config) out.virtual_interface = agent_config->external_interface;
  auto links = nl.ListLinks();
  if (!links) return Fail(links.error().Wrap("listing links"));
  auto addrs = nl.ListAddresses(std::nullopt);
  if (!addrs) return Fail(addrs.error().Wrap("listing addresses"));
  std::vector<netlink::RouteInfo> routes[2];
  for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
    auto r = nl.ListRoutes(f);
    if (!r) return Fail(r.error().Wrap("listing routes"));
    routes[f == net::Family::kV4 ? 0 : 1] = std::move(*r);
  }
  const std::optional<std::uint8_t> ours = netlink::kPylonAddressProto;

  auto add = [&](const netlink::LinkInfo& link, net::Family family) {
    if (link.name == out.virtual_interface) return;
    auto subnets = netlink::InterfaceSubnets(*addrs, routes[family == net::Family::kV4 ? 0 : 1],
                                             link.index, family, ours);
    auto it = std::find_if(out.interfaces.begin(), out.interfaces.end(),
                           [&](const LocalInterface& i) { return i.ifindex == link.index; });
    if (it == out.interfaces.end()) {
      out.interfaces.push_back(LocalInterface{link.name, link.index, {}});
      it = std::prev(out.interfaces.end());
    }
    for (const auto& s : subnets) {
      if (std::find(it->subnets.begin(), it->subnets.end(), s) == it->subnets.end()) {
        it->subnets.push_back(s);
      }
    }
  };
  auto link_by_index = [&](int index) -> const netlink::LinkInfo* {
    for (const auto& l : *links) {
      if (l.index == index) return &l;
    }
    return nullptr;
  };

  if (!agent_config || !agent_config->local_interface) {
    for (net::Family f : {net::Family::kV4, net::Family::kV6}) {
      auto route = netlink::SelectDefaultRoute(routes[f == net::Family::kV4 ? 0 : 1], f);
      if (!route) continue;  // no default route of this family
      for (int index : route->ifindexes) {
        if (const auto* l = link_by_index(index)) add(*l, f);
      }
    }
  } else {
    for (const auto& l : *links) {
      if (agent_config->local_interface->Matches(l.name)) {
        add(l, net::Family::kV4);
        add(l, net::Family::kV6);
      }
    }
  }
  if (agent_config) {
    for (const auto& pattern : agent_config->interfaces) {
      for (const auto& l : *links) {
        if (pattern.Matches(l.name)) {
          add(l, net::Family::kV4);
          add(l, net::Family::kV6);
        }
      }
    }
  }
  for (const auto& l : *links) {
    if (l.name == out.virtual_interface) out.virtual_ifindex = l.index;
  }
  out.interfaces.erase(std::remove_if(out.interfaces.begin(), out.interfaces.end(),
                                      [](const LocalInterface& i) { return i.subnets.empty(); }),
                       out.interfaces.end());
  return out;
}

}  // namespace pylon::agent
