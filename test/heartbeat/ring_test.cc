// The hash ring: who heartbeats with whom (Neighbours) and where reports flood (Fingers).
#include "heartbeat/ring.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <string>
#include <vector>

namespace pylon::heartbeat {
namespace {

using election::NodeName;

election::ElectionHasher& Hasher() {
  static auto h = *election::Sha256Hasher::Create();
  return *h;
}

std::vector<NodeName> Nodes(std::size_t n, const std::string& prefix = "node-") {
  std::vector<NodeName> out;
  for (std::size_t i = 0; i < n; ++i) out.emplace_back(prefix + std::to_string(i));
  return out;
}

// Members reached by flooding from `from` over Fingers, skipping (not forwarding from) `dead`.
std::set<NodeName> Flood(const Ring& ring, const NodeName& from, const std::set<NodeName>& dead) {
  std::set<NodeName> reached{from};
  std::deque<NodeName> queue{from};
  while (!queue.empty()) {
    NodeName at = queue.front();
    queue.pop_front();
    for (const auto& next : ring.Fingers(at)) {
      if (dead.count(next) || !reached.insert(next).second) continue;
      queue.push_back(next);
    }
  }
  return reached;
}

TEST(Ring, SmallSegmentsHeartbeatWithEveryone) {
  struct Row {
    std::size_t members;
    std::size_t neighbours;
  } rows[] = {{1, 0}, {2, 1}, {3, 2}, {5, 4}, {6, 4}, {100, 4}, {1000, 4}};
  for (const auto& row : rows) {
    auto nodes = Nodes(row.members);
    Ring ring = Ring::Build(nodes, Hasher());
    for (const auto& n : nodes) {
      auto nb = ring.Neighbours(n);
      EXPECT_EQ(nb.size(), row.neighbours) << row.members << " members, " << n.str();
      EXPECT_EQ(std::set<NodeName>(nb.begin(), nb.end()).size(), nb.size());
      EXPECT_EQ(std::count(nb.begin(), nb.end(), n), 0);
    }
  }
}

TEST(Ring, NotAMemberHasNoNeighboursAndBuildIgnoresDuplicates) {
  auto nodes = Nodes(8);
  nodes.push_back(nodes.front());
  Ring ring = Ring::Build(nodes, Hasher());
  EXPECT_EQ(ring.size(), 8u);
  EXPECT_TRUE(ring.Neighbours(NodeName("stranger")).empty());
  EXPECT_TRUE(ring.Fingers(NodeName("stranger")).empty());
}

TEST(Ring, OrderIsByHashNotByName) {
  // Alike names (one rack) must not all be neighbours of each other.
  auto nodes = Nodes(64, "rack1-node-");
  Ring ring = Ring::Build(nodes, Hasher());
  std::vector<NodeName> by_name = nodes;
  std::sort(by_name.begin(), by_name.end());
  EXPECT_NE(ring.order(), by_name);
}

TEST(Ring, FingersAreLogarithmic) {
  for (std::size_t n : {2u, 3u, 8u, 9u, 1000u, 5000u}) {
    Ring ring = Ring::Build(Nodes(n), Hasher());
    std::size_t expect = 0;
    for (std::size_t o = 1; o < n; o *= 2) ++expect;
    EXPECT_EQ(ring.Fingers(ring.order().front()).size(), expect) << n;
  }
}

// Neighbourhood is symmetric: X hears Y exactly when Y hears X, so the monitors of X are the
// nodes X sends to.
RC_GTEST_PROP(RingProperty, NeighbourhoodIsSymmetric, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 60);
  const auto side = *rc::gen::inRange<std::size_t>(1, 4);
  Ring ring = Ring::Build(Nodes(n), Hasher(), side);
  for (const auto& a : ring.order()) {
    for (const auto& b : ring.Neighbours(a)) {
      auto back = ring.Neighbours(b);
      RC_ASSERT(std::find(back.begin(), back.end(), a) != back.end());
    }
  }
}

// A report made by any member reaches every member, even when up to `side` - 1 other members,
// chosen at random, are dead and forward nothing -- and with side = 2, any single dead member.
RC_GTEST_PROP(RingProperty, FloodReachesEveryLiveMember, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(2, 300);
  auto nodes = Nodes(n);
  Ring ring = Ring::Build(nodes, Hasher());
  const auto from = *rc::gen::inRange<std::size_t>(0, n);
  std::set<NodeName> dead;
  if (n > 2) {
    auto d = *rc::gen::inRange<std::size_t>(0, n);
    if (d != from) dead.insert(nodes[d]);
  }
  auto reached = Flood(ring, nodes[from], dead);
  RC_ASSERT(reached.size() + dead.size() == n);
}

// Joins and leaves change the neighbourhood of a bounded number of members only: a member's
// neighbours change only if it was within `side` places of the node that joined or left.
RC_GTEST_PROP(RingProperty, ChurnMovesFewNeighbourhoods, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(8, 200);
  auto nodes = Nodes(n + 1);
  std::vector<NodeName> without(nodes.begin(), nodes.end() - 1);
  Ring before = Ring::Build(without, Hasher());
  Ring after = Ring::Build(nodes, Hasher());
  std::size_t changed = 0;
  for (const auto& x : without) {
    auto a = before.Neighbours(x), b = after.Neighbours(x);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) ++changed;
  }
  RC_ASSERT(changed <= 2 * kRingSide);
}

}  // namespace
}  // namespace pylon::heartbeat
