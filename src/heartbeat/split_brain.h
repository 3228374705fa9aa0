// Split-brain resolution: two nodes that hear each other and both announce an address (their
// membership views differed for a moment: a lease seen late, a detector verdict not yet shared)
// settle it from their heartbeats alone, within one interval, without waiting for views to agree.
//
// Rule, for each address a this node announces:
//   contenders(a) = this node + every peer heard within its bound, not leaving, whose last
//                   heartbeat lists a;
//   - if a contender is deaf (kDeaf: it hears no peer, so it cannot see the conflict and will
//     never yield), every other contender yields to it -- with two deaf contenders, the election
//     order below decides between them;
//   - otherwise the contender first in election order keeps a: the lowest SHA-256(node "#" a)
//     (election/hash.h; ties by node name), i.e. the hash rule of the elector without stickiness
//     (both are current announcers, so stickiness cannot choose).
// This node must drop a now if it is not the keeper. Every contender computes the same keeper
// from the same heartbeats, so exactly one keeps a (when they hear each other both ways).
//
// The agent removes the returned addresses from the set it announces for as long as they are
// returned (the peer keeps listing a); when the peer stops listing a, the yield ends and the
// election decides again. Pure (a hasher is passed in); not thread-safe.
#pragma once

#include <span>
#include <vector>

#include "election/hash.h"
#include "election/node_name.h"
#include "net/ip.h"

namespace pylon::heartbeat {

struct Claim {
  election::NodeName node;
  bool deaf = false;
  std::vector<net::IpAddress> addresses;  // any order, duplicates allowed
};

// `mine`: the addresses this node announces now (self's claim; its `deaf` flag is this node's own
// kDeaf). `peers`: claims of peers heard within their bound and not leaving. Returns the
// addresses this node must withdraw now, ascending, without duplicates.
std::vector<net::IpAddress> AddressesToYield(const Claim& mine, std::span<const Claim> peers,
                                             election::ElectionHasher& hasher);

}  // namespace pylon::heartbeat
