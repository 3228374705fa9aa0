// Renders the BIRD 2 configuration of one node from the BGP objects in force (docs/bgp.md).
// Pure: values in, text out.
//
// What BIRD announces is exactly what is on the virtual interface: `protocol direct` reads the
// addresses of kube-lb0 (each as its prefix, so a pool's aggregation is the announced length),
// and every peer exports only routes of that protocol. The agent already puts an address there
// only where it should be announced (ETP Local: only nodes with a ready endpoint), so the router's
// next hops follow. Peers are rendered only on nodes their nodeSelectors match; one session per
// peer, in the family of its address.
//
// Advertisements only refine: with none, every peer receives every address; with some, a peer
// receives the addresses only on nodes where at least one advertisement selects both the node and
// the peer, with the communities and local preference of all of those.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bgp/config.h"
#include "common/result.h"
#include "net/ip.h"

namespace pylon::bgp {

struct RenderInput {
  std::string node_name;
  Json node;                                // the Node object (labels for selectors)
  std::optional<net::IpAddress> node_ipv4;  // router id unless a peer sets routerID
  std::string virtual_interface = "kube-lb0";
  std::vector<Peer> peers;                     // valid peers only
  std::map<std::string, BfdProfile> profiles;  // by name
  std::vector<Advertisement> advertisements;
  std::map<std::string, std::string> passwords;  // peer name -> resolved password
  // Graceful shutdown: keep every session but export nothing, so the router withdraws this
  // node's routes with UPDATEs while the sessions stay up.
  bool withdraw_all = false;
  // BIRD's `error wait time`: how soon a session that failed (BFD down, hold timer) retries.
  int error_wait_min_s = 5;
  int error_wait_max_s = 30;
};

struct RenderedPeer {
  std::string peer;      // BGPPeer name
  std::string protocol;  // BIRD protocol name, e.g. "peer_tor1"
};

struct Rendered {
  std::string text;
  std::vector<RenderedPeer> peers;  // the peers this node runs, in protocol-name order
  // Problems that skip one peer on this node (the others are still rendered), e.g. a peer whose
  // bfdProfile does not exist: "BGPPeer tor1: spec.bfdProfile: BFDProfile \"fast\" not found".
  std::vector<std::pair<std::string, std::string>> skipped;  // (peer name, reason)
};

// The name of the direct protocol that reads the virtual interface.
inline constexpr const char* kVipsProtocol = "pylon_vips";

// Fails only when no router id can be chosen (a peer on this node and neither a routerID nor an
// IPv4 node address) or peers on this node disagree about routerID.
Result<Rendered> RenderBirdConfig(const RenderInput& in);

// "peer_" + the name with every character outside [A-Za-z0-9_] turned into '_'; names longer
// than BIRD allows, or that collide after the replacement, get a hash suffix.
std::string ProtocolName(const std::string& peer_name);

}  // namespace pylon::bgp
