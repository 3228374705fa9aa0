#include "heartbeat/ring.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

namespace pylon::heartbeat {

namespace {
// Hashed with the election hash under a fixed "address" that no real address spells.
constexpr std::string_view kRingSalt = "heartbeat-ring";
}  // namespace

election::Digest Ring::Key(const election::NodeName& node, election::ElectionHasher& hasher) {
  return hasher.Hash(node.str(), kRingSalt);
}

Ring Ring::Build(std::span<const election::NodeName> members, election::ElectionHasher& hasher,
                 std::size_t side) {
  std::set<election::NodeName> unique(members.begin(), members.end());
  std::vector<std::pair<election::Digest, election::NodeName>> keyed;
  keyed.reserve(unique.size());
  for (const auto& name : unique) keyed.emplace_back(Key(name, hasher), name);
  return FromKeys(std::move(keyed), side);
}

Ring Ring::FromKeys(std::vector<std::pair<election::Digest, election::NodeName>> keyed,
                    std::size_t side) {
  Ring ring;
  ring.side_ = std::max<std::size_t>(side, 1);
  std::sort(keyed.begin(), keyed.end());
  ring.order_.reserve(keyed.size());
  for (auto& [digest, name] : keyed) {
    ring.index_.emplace(name, ring.order_.size());
    ring.order_.push_back(std::move(name));
  }
  return ring;
}

std::vector<election::NodeName> Ring::Neighbours(const election::NodeName& node) const {
  auto it = index_.find(node);
  if (it == index_.end()) return {};
  const std::size_t n = order_.size();
  const std::size_t at = it->second;
  std::vector<election::NodeName> out;
  if (n <= 2 * side_ + 1) {
    for (std::size_t i = 1; i < n; ++i) out.push_back(order_[(at + i) % n]);
    return out;
  }
  for (std::size_t d = 1; d <= side_; ++d) {
    out.push_back(order_[(at + d) % n]);
    out.push_back(order_[(at + n - d) % n]);
  }
  return out;
}

std::vector<election::NodeName> Ring::Fingers(const election::NodeName& node) const {
  auto it = index_.find(node);
  if (it == index_.end()) return {};
  const std::size_t n = order_.size();
  std::vector<election::NodeName> out;
  for (std::size_t offset = 1; offset < n; offset *= 2) {
    out.push_back(order_[(it->second + offset) % n]);
  }
  return out;
}

}  // namespace pylon::heartbeat
