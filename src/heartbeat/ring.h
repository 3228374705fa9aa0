// Who exchanges heartbeats with whom on a large segment: a hash ring.
//
// Every agent that speaks the ring (its lease carries kRingAnnotation = kRingVersion next to its
// heartbeat endpoints) is placed on a ring ordered by a 64-bit hash of its node name (not by the
// name itself: nodes of one rack are named alike, and neighbours on the ring watch each other).
//
//   Neighbours(X) = the `side` members before X and the `side` members after X on the ring
//                   (distinct, X excluded; all other members when there are at most 2 x side).
//                   X sends its heartbeats to them and hears theirs: the relation is symmetric, so
//                   Neighbours(X) are also the monitors of X, the nodes that judge X by heartbeats.
//   Fingers(X)    = the members at ring offsets +1, +2, +4, ... from X (below the ring size): where
//                   X floods a report (wire.h Report) it makes or hears for the first time. Every
//                   member is reached in about log2(size) hops, and with `side` >= 2 a single dead
//                   member on the way never cuts anyone off (test/heartbeat/ring_test.cc).
//
// Costs per node: 2 x side peers (4 by default) whatever the segment size, so the datagram rate is
// flat; a report costs about log2(size) datagrams per node, and only when a node's state changes.
// Pure; not thread-safe (the hasher is used during Build only).
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "election/hash.h"
#include "election/node_name.h"

namespace pylon::heartbeat {

inline constexpr std::string_view kRingAnnotation = "purelb.io/heartbeat-ring";
inline constexpr std::string_view kRingVersion = "1";
inline constexpr std::size_t kRingSide = 2;

class Ring {
 public:
  Ring() = default;
  // `members` in any order, duplicates ignored. `side` >= 1.
  static Ring Build(std::span<const election::NodeName> members, election::ElectionHasher& hasher,
                    std::size_t side = kRingSide);
  // The ring position key of a node (what Build hashes): callers that rebuild often keep them.
  static election::Digest Key(const election::NodeName& node, election::ElectionHasher& hasher);
  // The same from members with their keys (unique names).
  static Ring FromKeys(std::vector<std::pair<election::Digest, election::NodeName>> keyed,
                       std::size_t side = kRingSide);

  std::size_t size() const { return order_.size(); }
  std::size_t side() const { return side_; }
  bool Contains(const election::NodeName& node) const { return index_.count(node) != 0; }

  // See the file comment. Both are empty for a node that is not a member.
  std::vector<election::NodeName> Neighbours(const election::NodeName& node) const;
  std::vector<election::NodeName> Fingers(const election::NodeName& node) const;

  // Members in ring order.
  const std::vector<election::NodeName>& order() const { return order_; }

 private:
  std::vector<election::NodeName> order_;
  std::map<election::NodeName, std::size_t> index_;
  std::size_t side_ = kRingSide;
};

}  // namespace pylon::heartbeat
