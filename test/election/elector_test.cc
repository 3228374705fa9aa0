#include "election/elector.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "election_world.h"

namespace pylon::election {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;
using testing::Ip;
using testing::Order;
using testing::World;

struct Row {
  std::string label;
  std::function<void(World&)> act;
  std::vector<std::pair<std::string, std::string>> winners;  // address -> node, "-" = none
};

void Walk(World& w, const std::vector<Row>& rows) {
  for (const auto& r : rows) {
    r.act(w);
    w.Eval();
    for (const auto& [address, node] : r.winners) {
      EXPECT_EQ(w.Winner(address), node) << r.label << " / " << address;
    }
  }
}

constexpr const char* kA4 = "192.0.2.10";
constexpr const char* kA6 = "2001:db8::10";
constexpr const char* kB4 = "198.51.100.7";
constexpr const char* kNoNet4 = "203.0.113.5";
constexpr const char* kNoNet6 = "2001:db8:ffff::1";

TEST(Elector, SubnetFiltersPerFamily) {
  World w;
  for (const char* a : {kA4, kA6, kB4, kNoNet4, kNoNet6}) w.Address(a);
  const auto a4 = Order(kA4, {"v4only", "dual1", "dual2"});
  const auto a6 = Order(kA6, {"dual1", "dual2", "v6only"});
  const auto a4_after = Order(kA4, {"dual1", "dual2"});
  const auto a6_after = Order(kA6, {"dual1", "dual2", "v6only", "v4only"});
  Walk(w, {
              {"no members: nothing is served",
               [](World&) {},
               {{kA4, "-"}, {kA6, "-"}, {kB4, "-"}, {kNoNet4, "-"}, {kNoNet6, "-"}}},
              {"nodes join; v4 and v6 elected independently among their own subnets",
               [](World& x) {
                 x.Renew("v4only", "192.0.2.0/24");
                 x.Renew("dual1", "192.0.2.0/24,2001:db8::/64");
                 x.Renew("dual2", "2001:db8::/64, 192.0.2.0/24");
                 x.Renew("v6only", "2001:db8::/64");
                 x.Renew("other", "198.51.100.0/24");
               },
               {{kA4, a4[0]}, {kA6, a6[0]}, {kB4, "other"}, {kNoNet4, "-"}, {kNoNet6, "-"}}},
              {"the only node of 198.51.100.0/24 leaves",
               [](World& x) { x.Delete("other"); },
               {{kA4, a4[0]}, {kA6, a6[0]}, {kB4, "-"}}},
              {"v4only moves to the IPv6 subnet",
               [](World& x) { x.Renew("v4only", "2001:db8::/64"); },
               {{kA4, a4_after[0]}, {kA6, a6_after[0]}, {kB4, "-"}}},
              {"a wider subnet also counts (a node on 192.0.2.0/23)",
               [](World& x) {
                 x.Renew("wide", "192.0.2.0/23");
                 x.Renew("dual1");
                 x.Renew("dual2");
                 x.Renew("v4only");
                 x.Renew("v6only");
               },
               {{kA4, Order(kA4, {"dual1", "dual2", "wide"})[0]}}},
          });
  // The result's unserved list names exactly the addresses without a candidate.
  const auto& r = w.Eval();
  EXPECT_EQ(r.unserved, (std::vector<net::IpAddress>{Ip(kB4), Ip(kNoNet4), Ip(kNoNet6)}));
}

class StickinessTest : public ::testing::TestWithParam<Stickiness> {};

TEST_P(StickinessTest, PreferredNodeReturning) {
  const bool sticky = GetParam() == Stickiness::kSticky;
  World w(ElectorOptions{NodeName("n1"), GetParam(), 4});
  const auto order = Order(kA4, {"n1", "n2", "n3"});
  const std::string preferred = order[0];
  const std::string second = order[1];
  w.Address(kA4);
  auto renew_all_but = [](World& x, const std::string& skip) {
    for (const char* n : {"n1", "n2", "n3"}) {
      if (n != skip) x.Renew(n);
    }
  };
  Walk(w, {
              {"three nodes join: the lowest hash wins",
               [](World& x) {
                 for (const char* n : {"n1", "n2", "n3"}) x.Renew(n, "192.0.2.0/24");
               },
               {{kA4, preferred}}},
              {"the preferred node stops renewing; at its expiry the second takes over",
               [&](World& x) {
                 x.clock.Advance(seconds(5));
                 renew_all_but(x, preferred);
                 x.clock.Advance(seconds(5));
               },
               {{kA4, second}}},
              {"the caller now sees the second node announcing",
               [&](World& x) { x.Announcer(kA4, second); },
               {{kA4, second}}},
              {"the preferred node returns",
               [&](World& x) { x.Renew(preferred); },
               {{kA4, sticky ? second : preferred}}},
              {"the announcer leaves: the preferred node wins in both modes",
               [&](World& x) { x.Delete(second); },
               {{kA4, preferred}}},
          });
}

TEST_P(StickinessTest, IneligibleAnnouncerIsNotSticky) {
  World w(ElectorOptions{NodeName("n1"), GetParam(), 4});
  const auto order = Order(kA4, {"n1", "n2", "v6"});
  w.Renew("n1", "192.0.2.0/24");
  w.Renew("n2", "192.0.2.0/24");
  w.Renew("v6", "2001:db8::/64");
  const std::string best = Order(kA4, {"n1", "n2"})[0];
  const std::string other = best == "n1" ? "n2" : "n1";
  Walk(w,
       {
           {"announcer not on the subnet", [](World& x) { x.Announcer(kA4, "v6"); }, {{kA4, best}}},
           {"announcer unknown", [](World& x) { x.Announcer(kA4, "ghost"); }, {{kA4, best}}},
           {"announcer excluded (being deleted)",
            [&](World& x) {
              x.Announcer(kA4, other);
              const NodeName ex[] = {NodeName(other)};
              x.elector().SetExcludedNodes(ex);
            },
            {{kA4, best}}},
           {"exclusion lifted: a live announcer keeps it only when sticky",
            [&](World& x) { x.elector().SetExcludedNodes({}); },
            {{kA4, GetParam() == Stickiness::kSticky ? other : best}}},
       });
}

INSTANTIATE_TEST_SUITE_P(Modes, StickinessTest,
                         ::testing::Values(Stickiness::kSticky, Stickiness::kPreemptive));

TEST(Elector, ExpiryExactlyAtTheBoundaryAndNextExpiry) {
  World w;
  w.Address(kA4);
  const auto order = Order(kA4, {"a", "b"});
  for (const char* n : {"a", "b"}) w.Renew(n, "192.0.2.0/24");
  w.Eval();
  ASSERT_EQ(w.Winner(kA4), order[0]);
  // Only the runner-up keeps renewing; the winner's lease runs out at t0+10s.
  w.clock.Advance(seconds(6));
  w.Renew(order[1]);
  auto next = w.members.NextExpiry(w.clock.Now());
  ASSERT_TRUE(next);
  w.clock.Advance(*next - w.clock.Now() - nanoseconds(1));
  w.Eval();
  EXPECT_EQ(w.Winner(kA4), order[0]) << "1 ns before expiry";
  w.clock.Advance(nanoseconds(1));
  const auto& r = w.Eval();
  EXPECT_EQ(w.Winner(kA4), order[1]) << "exactly at expiry";
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].before, NodeName(order[0]));
  EXPECT_EQ(r.changes[0].after, NodeName(order[1]));
  // The next instant is the runner-up's expiry, after which nobody serves.
  next = w.members.NextExpiry(w.clock.Now());
  ASSERT_TRUE(next);
  w.clock.Advance(*next - w.clock.Now());
  w.Eval();
  EXPECT_EQ(w.Winner(kA4), "-");
  EXPECT_FALSE(w.members.NextExpiry(w.clock.Now()));
}

TEST(Elector, OverrideMarksWinnerDeadBeforeItsLeaseExpires) {
  World w;
  w.Address(kA4);
  w.Address(kA6);
  const auto order4 = Order(kA4, {"a", "b", "c"});
  const auto order6 = Order(kA6, {"a", "b", "c"});
  const std::string top = order4[0];
  const std::string next4 = order4[1];
  const std::string next6 = order6[0] == top ? order6[1] : order6[0];
  Walk(w, {
              {"all join",
               [](World& x) {
                 for (const char* n : {"a", "b", "c"}) {
                   x.Renew(n, "192.0.2.0/24,2001:db8::/64");
                 }
               },
               {{kA4, top}, {kA6, order6[0]}}},
              {"heartbeats lost: the detector marks the winner dead 1 s in",
               [&](World& x) {
                 x.clock.Advance(seconds(1));
                 x.members.SetOverride(NodeName(top), {Liveness::kDead, std::nullopt});
               },
               {{kA4, next4}, {kA6, next6}}},
              {"its lease is still renewed (NIC down, API reachable): stays dead",
               [&](World& x) {
                 x.clock.Advance(seconds(5));
                 for (const char* n : {"a", "b", "c"}) x.Renew(n);
               },
               {{kA4, next4}, {kA6, next6}}},
              {"the detector sees it again; the caller saw the takeover (sticky keeps it)",
               [&](World& x) {
                 x.members.ClearOverride(NodeName(top));
                 x.Announcer(kA4, next4);
                 x.Announcer(kA6, next6);
               },
               {{kA4, next4}, {kA6, next6}}},
          });
}

// Every node gets the same digest: the tie falls to the node name.
class ConstantHasher final : public ElectionHasher {
 public:
  Digest Hash(std::string_view, std::string_view) override { return Digest{}; }
};

// Same first 64 bits for everyone; byte 8 decreases with the name's first letter, so the full
// digest (not the name) must decide: "z" beats "a".
class PrefixTieHasher final : public ElectionHasher {
 public:
  Digest Hash(std::string_view node, std::string_view) override {
    Digest d{};
    d[8] = static_cast<std::uint8_t>(255 - static_cast<unsigned char>(node[0]));
    return d;
  }
};

TEST(Elector, TiesBreakDeterministically) {
  World by_name({}, std::make_unique<ConstantHasher>());
  by_name.Address(kA4);
  Walk(by_name,
       {
           {"equal digests: lowest name",
            [](World& x) {
              for (const char* n : {"node-c", "node-a", "node-b"}) {
                x.Renew(n, "192.0.2.0/24");
              }
            },
            {{kA4, "node-a"}}},
           {"it leaves: the next name", [](World& x) { x.Delete("node-a"); }, {{kA4, "node-b"}}},
       });
  World by_digest({}, std::make_unique<PrefixTieHasher>());
  by_digest.Address(kA4);
  Walk(by_digest, {
                      {"equal 64-bit prefixes: the rest of the digest decides",
                       [](World& x) {
                         for (const char* n : {"a", "m", "z"}) x.Renew(n, "192.0.2.0/24");
                       },
                       {{kA4, "z"}}},
                      {"z leaves", [](World& x) { x.Delete("z"); }, {{kA4, "m"}}},
                  });
}

TEST(Elector, MalformedSubnetsAnnotations) {
  World w;
  w.Address(kA4);
  w.Address(kA6);
  Walk(w, {
              {"garbage-only annotation: a member that is candidate for nothing",
               [](World& x) {
                 auto out = x.Renew("junk", "ff:::zz/999, ;;;");
                 EXPECT_FALSE(out.issues.empty());
               },
               {{kA4, "-"}, {kA6, "-"}}},
              {"half-bad annotation: the good entry still counts",
               [](World& x) {
                 auto out = x.Renew("half", "192.0.2.0/24,not-a-subnet,2001:db8::/200");
                 EXPECT_EQ(out.issues.size(), 2u);
               },
               {{kA4, "half"}, {kA6, "-"}}},
              {"annotation removed: out of every election",
               [](World& x) { x.Renew("half", ""); },
               {{kA4, "-"}, {kA6, "-"}}},
          });
}

TEST(Elector, ClockSkewImmunity) {
  // The winner's renewTime swings between 1970 and 2999; the runner-up writes a "future"
  // renewTime once and then stops. Only the local observation times matter.
  World w;
  w.Address(kA4);
  const auto order = Order(kA4, {"a", "b"});
  for (const char* n : {"a", "b"}) w.Renew(n, "192.0.2.0/24");
  w.RenewWithTime(order[1], "2999-01-01T00:00:00Z");
  const char* times[] = {"1970-01-01T00:00:00Z", "2999-12-31T23:59:59Z", "1970-01-01T00:00:01Z",
                         "garbage"};
  for (int i = 0; i < 20; ++i) {
    w.clock.Advance(seconds(9));
    w.RenewWithTime(order[0], times[i % 4]);
    w.Eval();
    EXPECT_EQ(w.Winner(kA4), order[0]) << "step " << i;
    EXPECT_EQ(w.members.IsLive(NodeName(order[1]), w.clock.Now()), i == 0) << "step " << i;
  }
  // The winner stops: it expires 10 s after its last change, whatever its renewTime claims.
  w.clock.Advance(seconds(10));
  w.Eval();
  EXPECT_EQ(w.Winner(kA4), "-");
}

TEST(Elector, AllowListsAndExclusions) {
  World w(ElectorOptions{NodeName("n1"), Stickiness::kSticky, 1});
  const auto order = Order(kA4, {"n1", "n2", "n3", "far"});
  std::vector<std::string> on_subnet;
  for (const auto& n : order) {
    if (n != "far") on_subnet.push_back(n);
  }
  auto only = [](std::vector<std::string> names) {
    AddressSpec spec;
    spec.allowed_nodes.emplace();
    for (auto& n : names) spec.allowed_nodes->push_back(NodeName(n));
    return spec;
  };
  Walk(w, {
              {"join",
               [](World& x) {
                 for (const char* n : {"n1", "n2", "n3"}) x.Renew(n, "192.0.2.0/24");
                 x.Renew("far", "198.51.100.0/24");
                 x.Address(kA4);
               },
               {{kA4, on_subnet[0]}}},
              {"endpoints only on the last-ranked node (ETP Local)",
               [&](World& x) { x.Address(kA4, only({on_subnet[2]})); },
               {{kA4, on_subnet[2]}}},
              {"endpoints only on a node off the subnet: nobody",
               [&](World& x) { x.Address(kA4, only({"far"})); },
               {{kA4, "-"}}},
              {"an empty endpoint set: nobody",
               [&](World& x) { x.Address(kA4, only({})); },
               {{kA4, "-"}}},
              {"endpoints everywhere again, the top node being deleted",
               [&](World& x) {
                 x.Address(kA4);
                 const NodeName ex[] = {NodeName(on_subnet[0])};
                 x.elector().SetExcludedNodes(ex);
               },
               {{kA4, on_subnet[1]}}},
              {"the two top nodes excluded (cache depth 1 forces a refill)",
               [&](World& x) {
                 const NodeName ex[] = {NodeName(on_subnet[0]), NodeName(on_subnet[1])};
                 x.elector().SetExcludedNodes(ex);
               },
               {{kA4, on_subnet[2]}}},
          });
}

TEST(Elector, LocalAddressesAndChanges) {
  World w(ElectorOptions{NodeName("me"), Stickiness::kPreemptive, 4});
  std::vector<std::string> addresses;
  for (int i = 1; i <= 40; ++i) addresses.push_back("192.0.2." + std::to_string(i));
  for (const auto& a : addresses) w.Address(a);
  for (const char* n : {"me", "p1", "p2"}) w.Renew(n, "192.0.2.0/24");
  const auto& r = w.Eval();  // World checks local/unserved/changes consistency
  std::vector<net::IpAddress> mine;
  for (const auto& a : addresses) {
    if (Order(a, {"me", "p1", "p2"})[0] == "me") mine.push_back(Ip(a));
  }
  std::sort(mine.begin(), mine.end());
  EXPECT_EQ(r.local, mine);
  EXPECT_EQ(r.changes.size(), addresses.size());
  EXPECT_FALSE(mine.empty());
  EXPECT_EQ(w.Eval().changes.size(), 0u) << "nothing changed";
}

TEST(Elector, AddressesWonByPredictsTheMovesOfADeparture) {
  for (Stickiness mode : {Stickiness::kSticky, Stickiness::kPreemptive}) {
    World w(ElectorOptions{NodeName("n0"), mode, 2});
    for (int i = 0; i < 200; ++i) {
      w.Address(i % 2 ? "192.0.2." + std::to_string(i) : "2001:db8::" + std::to_string(i));
    }
    for (int n = 0; n < 10; ++n) {
      w.Renew("n" + std::to_string(n), "192.0.2.0/24,2001:db8::/64");
    }
    w.Eval();
    for (const char* leaving : {"n3", "n7", "n1"}) {
      const auto predicted = w.elector().AddressesWonBy(NodeName(leaving));
      EXPECT_FALSE(predicted.empty());
      w.Delete(leaving);
      const auto& r = w.Eval();
      std::vector<net::IpAddress> moved;
      for (const auto& c : r.changes) moved.push_back(c.address);
      EXPECT_EQ(moved, predicted) << leaving;
      EXPECT_EQ(r.hashes, 0u) << "a departure is answered from the caches";
    }
  }
}

TEST(Elector, RemovedAddressIsForgotten) {
  World w;
  w.Address(kA4);
  w.Renew("a", "192.0.2.0/24");
  w.Eval();
  EXPECT_EQ(w.elector().address_count(), 1u);
  EXPECT_TRUE(w.elector().RemoveAddress(Ip(kA4)));
  EXPECT_FALSE(w.elector().RemoveAddress(Ip(kA4)));
  EXPECT_EQ(w.Winner(kA4), "-");
  EXPECT_EQ(w.elector().address_count(), 0u);
}

// Changes are against the previous Evaluate: an address removed and set again before the next one
// is not new (found by ElectorProperty, seed 12339098074323940169).
TEST(Elector, AddressRemovedAndSetAgainBetweenEvaluatesIsNotNew) {
  World w;  // its consistency check compares every change with the previous Evaluate's winners
  const auto order = Order(kA4, {"a", "b"});
  w.Address(kA4);
  w.Address(kB4);
  for (const char* n : {"a", "b"}) w.Renew(n, "192.0.2.0/24");
  w.Eval();
  ASSERT_EQ(w.Winner(kA4), order[0]);

  EXPECT_TRUE(w.elector().RemoveAddress(Ip(kA4)));
  w.Address(kA4);
  EXPECT_TRUE(w.Eval().changes.empty()) << "same winner as at the previous Evaluate";
  EXPECT_EQ(w.Winner(kA4), order[0]);

  EXPECT_TRUE(w.elector().RemoveAddress(Ip(kA4)));
  AddressSpec only_second;
  only_second.allowed_nodes = std::vector<NodeName>{NodeName(order[1])};
  w.Address(kA4, only_second);
  const auto& moved = w.Eval();
  ASSERT_EQ(moved.changes.size(), 1u);
  EXPECT_EQ(moved.changes[0].before, NodeName(order[0]));
  EXPECT_EQ(moved.changes[0].after, NodeName(order[1]));

  EXPECT_TRUE(w.elector().RemoveAddress(Ip(kA4)));
  w.Eval();
  w.Address(kA4);
  const auto& fresh = w.Eval();
  ASSERT_EQ(fresh.changes.size(), 1u) << "removed at the previous Evaluate: new again";
  EXPECT_EQ(fresh.changes[0].before, std::nullopt);
  EXPECT_EQ(fresh.changes[0].after, NodeName(order[0]));
}

}  // namespace
}  // namespace pylon::election
