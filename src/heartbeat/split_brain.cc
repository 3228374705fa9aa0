#include "heartbeat/split_brain.h"

#include <algorithm>
#include <map>

namespace pylon::heartbeat {

namespace {

// Whether `a` ranks before `b` for `address` (lower digest; ties by node name).
bool Before(election::ElectionHasher& hasher, const Claim& a, const Claim& b,
            const std::string& address) {
  if (a.deaf != b.deaf) return a.deaf;
  const election::Digest da = hasher.Hash(a.node.str(), address);
  const election::Digest db = hasher.Hash(b.node.str(), address);
  if (da != db) return da < db;
  return a.node < b.node;
}

}  // namespace

std::vector<net::IpAddress> AddressesToYield(const Claim& mine, std::span<const Claim> peers,
                                             election::ElectionHasher& hasher) {
  std::vector<net::IpAddress> own = mine.addresses;
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
  if (own.empty() || peers.empty()) return {};

  // Which peers claim each of my addresses.
  std::map<net::IpAddress, std::vector<const Claim*>> contested;
  for (const auto& peer : peers) {
    if (peer.node == mine.node) continue;
    for (const auto& a : peer.addresses) {
      if (std::binary_search(own.begin(), own.end(), a)) {
        auto& v = contested[a];
        if (v.empty() || v.back() != &peer) v.push_back(&peer);
      }
    }
  }
  std::vector<net::IpAddress> out;
  for (const auto& [address, claimants] : contested) {
    const std::string text = address.ToString();
    for (const Claim* peer : claimants) {
      if (Before(hasher, *peer, mine, text)) {
        out.push_back(address);
        break;
      }
    }
  }
  return out;  // map order: ascending
}

}  // namespace pylon::heartbeat
