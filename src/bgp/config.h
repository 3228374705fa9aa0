// BGP configuration objects (lace-cni.io/v1alpha1, cluster-scoped; field names from MetalLB's
// BGPPeer, BFDProfile and BGPAdvertisement where they fit — docs/bgp.md) parsed into values.
// Pure: JSON in, values or a field-path error out. Parsing one object never looks at another;
// cross-references (a peer's bfdProfile, its password Secret) are resolved by the caller.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

#include "common/result.h"
#include "net/ip.h"

namespace pylon::bgp {

// A Kubernetes LabelSelector (matchLabels + matchExpressions), kept in the string grammar of
// k8s/selector.h so the one matcher evaluates it: {matchLabels: {a: b}} -> "a=b".
struct NodeSelector {
  std::string selector;  // "" matches every node
  friend bool operator==(const NodeSelector&, const NodeSelector&) = default;
};

// Reads a metav1.LabelSelector at `path`; fails with "<path>...: <reason>" on what the API server
// would refuse (bad keys or values, unknown operators, values with Exists).
Result<NodeSelector> ParseLabelSelector(const Json& v, const std::string& path);

// Whether `node` (a Node object) matches any of `selectors`; an empty list matches every node.
bool NodeMatches(const std::vector<NodeSelector>& selectors, const Json& node);

struct BfdProfile {
  std::string name;
  int receive_interval_ms = 300;  // 10..60000
  int transmit_interval_ms = 300;
  int detect_multiplier = 3;  // 2..255
  bool passive = false;
  friend bool operator==(const BfdProfile&, const BfdProfile&) = default;
};

struct SecretKeyRef {
  std::string name;
  std::string key = "password";
  friend bool operator==(const SecretKeyRef&, const SecretKeyRef&) = default;
};

struct Peer {
  std::string name;
  std::int64_t generation = 0;
  net::IpAddress peer_address;
  std::uint32_t peer_asn = 0;
  std::uint32_t my_asn = 0;
  int peer_port = 179;
  std::optional<net::IpAddress> source_address;
  std::optional<int> hold_time_s;       // 0 or 3..65535
  std::optional<int> keepalive_time_s;  // 1..65535, below hold time
  std::optional<int> connect_time_s;    // 1..65535
  std::optional<SecretKeyRef> password_secret;
  std::string bfd_profile;  // "" = no BFD
  bool ebgp_multihop = false;
  bool graceful_restart = false;
  std::optional<net::IpAddress> router_id;  // IPv4 only
  std::vector<NodeSelector> node_selectors;

  bool ibgp() const { return peer_asn == my_asn; }
  friend bool operator==(const Peer&, const Peer&) = default;
};

struct Advertisement {
  std::string name;
  std::vector<std::array<std::uint32_t, 2>> communities;        // (asn16, value16)
  std::vector<std::array<std::uint32_t, 3>> large_communities;  // (asn, v1, v2)
  std::optional<std::uint32_t> local_pref;  // sent to iBGP peers only (RFC 4271 5.1.5)
  std::vector<std::string> peers;           // BGPPeer names; empty = every peer
  std::vector<NodeSelector> node_selectors;
  friend bool operator==(const Advertisement&, const Advertisement&) = default;
};

// Each parser fails with "<Kind> <name>: <field path>: <reason>".
Result<Peer> ParsePeer(const Json& object);
Result<BfdProfile> ParseBfdProfile(const Json& object);
Result<Advertisement> ParseAdvertisement(const Json& object);

// A community as MetalLB writes it: "65535:65282" (standard), "large:1:2:3" (large), or one of
// the well-known names no-export, no-advertise, no-peer, blackhole.
struct Community {
  bool large = false;
  std::array<std::uint32_t, 3> value{};
};
Result<Community> ParseCommunity(std::string_view text);

}  // namespace pylon::bgp
