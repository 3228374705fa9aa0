#include "bgp/bird_config.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace pylon::bgp {

namespace {

// BIRD symbols are at most 64 characters.
constexpr std::size_t kMaxProtocolName = 60;

std::string Hex6(const std::string& s) {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%06x", h & 0xFFFFFF);
  return buf;
}

bool PrintablePassword(const std::string& p) {
  return !p.empty() && p.size() <= 80 && std::all_of(p.begin(), p.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
}

bool AdvertisementSelects(const Advertisement& a, const std::string& peer, const Json& node) {
  if (!a.peers.empty() && std::find(a.peers.begin(), a.peers.end(), peer) == a.peers.end()) {
    return false;
  }
  return NodeMatches(a.node_selectors, node);
}

}  // namespace

std::string ProtocolName(const std::string& peer_name) {
  std::string out = "peer_";
  bool replaced = false;
  for (char c : peer_name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
    replaced |= !ok;
  }
  if (replaced || out.size() > kMaxProtocolName) {
    out.resize(std::min(out.size(), kMaxProtocolName - 7));
    out += "_" + Hex6(peer_name);
  }
  return out;
}

namespace {

// A peer this node runs.
struct Active {
  const Peer* peer;
  std::string protocol;
  const BfdProfile* bfd = nullptr;
};

// Why `p` cannot run on this node ("" when it can); sets a->bfd to its BFD profile.
std::string SkipReason(const Peer& p, const RenderInput& in, Active* a) {
  if (!p.bfd_profile.empty()) {
    auto it = in.profiles.find(p.bfd_profile);
    if (it == in.profiles.end()) {
      return "BGPPeer " + p.name + ": spec.bfdProfile: BFDProfile \"" + p.bfd_profile +
             "\" not found";
    }
    a->bfd = &it->second;
  }
  if (p.password_secret) {
    auto it = in.passwords.find(p.name);
    if (it == in.passwords.end()) {
      return "BGPPeer " + p.name + ": spec.passwordSecret: Secret \"" + p.password_secret->name +
             "\" key \"" + p.password_secret->key + "\" not found";
    }
    if (!PrintablePassword(it->second)) {
      return "BGPPeer " + p.name +
             ": spec.passwordSecret: the password must be 1-80 printable ASCII characters "
             "without '\"' or '\\'";
    }
  }
  return "";
}

// The peers whose nodeSelectors match this node and that can run, in protocol-name order (the
// others into r->skipped), and the router id their spec.routerID sets (one value at most).
Result<std::vector<Active>> ActivePeers(const RenderInput& in, Rendered* r,
                                        std::optional<net::IpAddress>* router_id) {
  std::vector<Active> active;
  for (const Peer& p : in.peers) {
    if (!NodeMatches(p.node_selectors, in.node)) continue;
    Active a{&p, ProtocolName(p.name)};
    if (std::string why = SkipReason(p, in, &a); !why.empty()) {
      r->skipped.emplace_back(p.name, std::move(why));
      continue;
    }
    if (p.router_id) {
      if (*router_id && **router_id != *p.router_id) {
        return Fail(ErrorCode::kInvalidArgument,
                    "BGPPeer " + p.name + ": spec.routerID " + p.router_id->ToString() +
                        " differs from " + (*router_id)->ToString() +
                        " set by another peer of node " + in.node_name);
      }
      *router_id = p.router_id;
    }
    active.push_back(std::move(a));
  }
  std::sort(active.begin(), active.end(),
            [](const Active& a, const Active& b) { return a.protocol < b.protocol; });
  return active;
}

// The export filter of `a`: reject everything (withdrawing, or no advertisement selects it), or
// the virtual interface's routes with the communities and local preference of the
// advertisements that select it.
void RenderExportFilter(std::ostringstream& o, const Active& a, const RenderInput& in) {
  const Peer& p = *a.peer;
  o << "\nfilter export_" << a.protocol << " {\n";
  std::vector<const Advertisement*> ads;
  for (const auto& adv : in.advertisements) {
    if (AdvertisementSelects(adv, p.name, in.node)) ads.push_back(&adv);
  }
  const bool exported = !in.withdraw_all && (in.advertisements.empty() || !ads.empty());
  if (!exported) {
    o << "  reject;\n}\n";
    return;
  }
  o << "  if proto != \"" << kVipsProtocol << "\" then reject;\n";
  std::set<std::array<std::uint32_t, 2>> comms;
  std::set<std::array<std::uint32_t, 3>> large;
  std::optional<std::uint32_t> local_pref;
  for (const Advertisement* adv : ads) {
    comms.insert(adv->communities.begin(), adv->communities.end());
    large.insert(adv->large_communities.begin(), adv->large_communities.end());
    if (adv->local_pref) local_pref = std::max(local_pref.value_or(0), *adv->local_pref);
  }
  for (const auto& c : comms) o << "  bgp_community.add((" << c[0] << ", " << c[1] << "));\n";
  for (const auto& c : large) {
    o << "  bgp_large_community.add((" << c[0] << ", " << c[1] << ", " << c[2] << "));\n";
  }
  if (local_pref && p.ibgp()) o << "  bgp_local_pref = " << *local_pref << ";\n";
  o << "  accept;\n}\n";
}

// The BGP protocol (session) of `a`.
void RenderBgpProtocol(std::ostringstream& o, const Active& a, const RenderInput& in) {
  const Peer& p = *a.peer;
  o << "protocol bgp " << a.protocol << " {\n"
    << "  description \"BGPPeer " << p.name << "\";\n"
    << "  local";
  if (p.source_address) o << " " << p.source_address->ToString();
  o << " as " << p.my_asn << ";\n"
    << "  neighbor " << p.peer_address.ToString();
  if (p.peer_port != 179) o << " port " << p.peer_port;
  o << " as " << p.peer_asn << ";\n";
  if (p.ebgp_multihop) o << "  multihop;\n";
  if (p.hold_time_s) o << "  hold time " << *p.hold_time_s << ";\n";
  if (p.keepalive_time_s) o << "  keepalive time " << *p.keepalive_time_s << ";\n";
  if (p.connect_time_s) o << "  connect retry time " << *p.connect_time_s << ";\n";
  o << "  error wait time " << in.error_wait_min_s << ", " << in.error_wait_max_s << ";\n";
  if (p.password_secret) o << "  password \"" << in.passwords.at(p.name) << "\";\n";
  if (a.bfd) {
    o << "  bfd { min rx interval " << a.bfd->receive_interval_ms << " ms; min tx interval "
      << a.bfd->transmit_interval_ms << " ms; multiplier " << a.bfd->detect_multiplier << ";"
      << (a.bfd->passive ? " passive on;" : "") << " };\n";
  }
  o << "  graceful restart " << (p.graceful_restart ? "on" : "off") << ";\n";
  o << "  " << (p.peer_address.family() == net::Family::kV4 ? "ipv4" : "ipv6")
    << " { import none; export filter export_" << a.protocol << "; };\n"
    << "}\n";
}

}  // namespace

Result<Rendered> RenderBirdConfig(const RenderInput& in) {
  Rendered r;
  std::optional<net::IpAddress> router_id;
  auto active = ActivePeers(in, &r, &router_id);
  if (!active) return Fail(active.error());
  if (!router_id) router_id = in.node_ipv4;

  std::ostringstream o;
  o << "# Rendered by the pylon agent for node " << in.node_name
    << " from BGPPeer, BFDProfile and BGPAdvertisement objects. Do not edit: it is rewritten.\n";
  if (router_id) {
    o << "router id " << router_id->ToString() << ";\n";
  } else if (!active->empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "node " + in.node_name +
                    " has no IPv4 address for the BGP router id: set spec.routerID on its peers");
  }
  o << "log stderr all;\n"
    << "debug protocols { states, events };\n"
    << "protocol device { }\n"
    << "protocol direct " << kVipsProtocol << " {\n  ipv4;\n  ipv6;\n  interface \""
    << in.virtual_interface << "\";\n}\n";
  if (std::any_of(active->begin(), active->end(), [](const Active& a) { return a.bfd; })) {
    o << "protocol bfd pylon_bfd { }\n";
  }
  for (const Active& a : *active) {
    RenderExportFilter(o, a, in);
    RenderBgpProtocol(o, a, in);
    r.peers.push_back({a.peer->name, a.protocol});
  }
  r.text = o.str();
  return r;
}

}  // namespace pylon::bgp
