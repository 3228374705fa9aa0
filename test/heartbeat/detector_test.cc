// Detector scenario tables on a FakeClock: each scenario lists periodic heartbeats per peer,
// changes of this node's link, and expected peer states at given instants.
#include "heartbeat/detector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"

namespace pylon::heartbeat {
namespace {

using std::chrono::milliseconds;

struct Beats {
  std::string node;
  int from_ms;
  int to_ms;  // inclusive
  int every_ms = 100;
  std::uint8_t flags = flags::kLinkUp;
  std::uint32_t interval_ms = 100;
};
struct LinkChange {
  int at_ms;
  bool up;
};
struct Check {
  int at_ms;
  std::string want;  // "a=alive b=dead ..." (only the listed peers are checked)
};
struct Scenario {
  const char* name;
  std::vector<std::string> peers;
  std::vector<Beats> beats;
  std::vector<LinkChange> link;
  std::vector<Check> checks;
};

std::map<std::string, std::string> ParseWant(const std::string& s) {
  std::map<std::string, std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    out[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return out;
}

void RunScenario(const Scenario& sc) {
  SCOPED_TRACE(sc.name);
  FakeClock clock;
  const SteadyTime t0 = clock.Now();
  Detector d(DetectorOptions{election::NodeName("me"), milliseconds(100), 3});
  std::vector<election::NodeName> peers;
  for (const auto& p : sc.peers) peers.emplace_back(p);
  d.SetPeers(peers);

  // Timeline: (time, order, action). At one instant: link changes, then heartbeats, then checks.
  struct Ev {
    int t;
    int order;
    std::size_t index;
    int beat_seq;
  };
  std::vector<Ev> evs;
  for (std::size_t i = 0; i < sc.link.size(); ++i) evs.push_back({sc.link[i].at_ms, 0, i, 0});
  std::map<std::string, std::uint64_t> seq;
  for (std::size_t i = 0; i < sc.beats.size(); ++i) {
    for (int t = sc.beats[i].from_ms; t <= sc.beats[i].to_ms; t += sc.beats[i].every_ms) {
      evs.push_back({t, 1, i, 0});
    }
  }
  for (std::size_t i = 0; i < sc.checks.size(); ++i) evs.push_back({sc.checks[i].at_ms, 2, i, 0});
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
    return a.t != b.t ? a.t < b.t : a.order < b.order;
  });
  for (const auto& ev : evs) {
    const SteadyTime now = t0 + milliseconds(ev.t);
    if (now > clock.Now()) clock.Advance(now - clock.Now());
    if (ev.order == 0) {
      d.SetSelfLinkUp(sc.link[ev.index].up);
    } else if (ev.order == 1) {
      const Beats& b = sc.beats[ev.index];
      Heartbeat hb;
      hb.node = election::NodeName(b.node);
      hb.boot_id = 1;
      hb.sequence = ++seq[b.node];
      hb.interval_ms = b.interval_ms;
      hb.flags = b.flags;
      EXPECT_TRUE(d.OnHeartbeat(hb, now));
    }
    d.Evaluate(now);
    if (ev.order == 2) {
      for (const auto& [node, want] : ParseWant(sc.checks[ev.index].want)) {
        const PeerStatus* p = d.Find(election::NodeName(node));
        ASSERT_NE(p, nullptr) << node;
        EXPECT_EQ(PeerStateName(p->state), want)
            << "peer " << node << " at " << ev.t << " ms (" << p->reason << ")";
      }
    }
  }
}

TEST(Detector, Scenarios) {
  // clang-format off
  const Scenario scenarios[] = {
      {"crash: dead exactly at last + 3 intervals while the others are heard", {"a", "b", "c"}, {{"a", 0, 100}, {"b", 0, 1000}, {"c", 50, 1050}}, {}, {{100, "a=alive b=alive c=alive"}, {399, "a=alive"}, {400, "a=dead b=alive c=alive"}, {1000, "a=dead"}}},
      {"revive at the first valid heartbeat after death", {"a", "b"}, {{"a", 0, 100}, {"a", 700, 700}, {"b", 0, 1000}}, {}, {{400, "a=dead"}, {699, "a=dead"}, {700, "a=alive"}, {999, "a=alive"}, {1000, "a=dead"}}},
      {"two lost datagrams of three: still alive", {"a", "b"}, {{"a", 0, 0}, {"a", 290, 590, 300}, {"b", 0, 1000}}, {}, {{289, "a=alive"}, {589, "a=alive"}, {889, "a=alive"}, {890, "a=dead"}}},
      {"leaving flag: dead at once, without waiting for the bound", {"a", "b"}, {{"a", 0, 200}, {"a", 250, 250, 100, flags::kLinkUp | flags::kLeaving}, {"b", 0, 1000}}, {}, {{249, "a=alive"}, {250, "a=dead"}, {600, "a=dead"}}},
      {"peer reports its link down: unhealthy at once, then dead when it goes quiet", {"a", "b"}, {{"a", 0, 200}, {"a", 300, 300, 100, 0}, {"b", 0, 1000}}, {}, {{299, "a=alive"}, {300, "a=unhealthy"}, {599, "a=unhealthy"}, {600, "a=dead"}}},
      {"peer reports itself not eligible (e.g. lease failing, deaf)", {"a", "b"}, {{"a", 0, 500, 100, flags::kLinkUp | flags::kNotEligible}, {"b", 0, 500}}, {}, {{0, "a=unhealthy"}, {500, "a=unhealthy"}}},
      {"a starting peer (not judged itself yet): no verdict until it says alive or unhealthy", {"a", "b"}, {{"a", 0, 200, 100, flags::kLinkUp | flags::kNotEligible | flags::kStarting}, {"a", 300, 500}, {"b", 0, 1000}}, {}, {{0, "a=starting"}, {299, "a=starting"}, {300, "a=alive"}, {500, "a=alive"}}},
      {"a peer that starts and never judges itself, then goes quiet: dead like any other", {"a", "b"}, {{"a", 0, 200, 100, flags::kLinkUp | flags::kNotEligible | flags::kStarting}, {"b", 0, 1000}}, {}, {{499, "a=starting"}, {500, "a=dead"}}},
      {"two-node segment: the only peer goes quiet, own link up: dead at the bound", {"a"}, {{"a", 0, 100}}, {}, {{399, "a=alive"}, {400, "a=dead"}}},
      {"two-node segment, own link down: no verdict (lease decides)", {"a"}, {{"a", 0, 100}}, {{150, false}}, {{400, "a=silent"}, {1000, "a=silent"}}},
      {"... and when the own link comes back, the silent last peer gets one bound to speak", {"a"}, {{"a", 0, 100}}, {{150, false}, {800, true}}, {{400, "a=silent"}, {800, "a=silent"}, {1099, "a=silent"}, {1100, "a=dead"}}},
      {"... and if it speaks within that bound, it never flaps", {"a"}, {{"a", 0, 100}, {"a", 850, 2000}}, {{150, false}, {800, true}}, {{400, "a=silent"}, {849, "a=silent"}, {850, "a=alive"}, {2000, "a=alive"}}},
      {"cut off (carrier up): every peer quiet together -> silent, the lease decides", {"a", "b", "c"}, {{"a", 0, 1000}, {"b", 30, 1030}, {"c", 60, 1060}}, {}, {{1299, "a=alive b=alive c=alive"}, {1300, "a=silent b=alive c=alive"}, {1360, "a=silent b=silent c=silent"}, {3000, "a=silent b=silent c=silent"}}},
      {"cut off, then one peer heard again: the others get one bound to speak, then dead", {"a", "b", "c"}, {{"a", 0, 1000}, {"b", 30, 1030}, {"c", 60, 1060}, {"c", 2000, 2400}}, {}, {{1999, "a=silent b=silent c=silent"}, {2000, "a=silent b=silent c=alive"}, {2299, "a=silent b=silent"}, {2300, "a=dead b=dead c=alive"}}},
      {"reconnecting: peers heard one after the other never flap", {"a", "b", "c"}, {{"a", 0, 1000}, {"b", 30, 1030}, {"c", 60, 1060}, {"c", 2000, 3000}, {"a", 2040, 3040}, {"b", 2080, 3080}}, {}, {{1999, "a=silent b=silent c=silent"}, {2000, "a=silent b=silent c=alive"}, {2040, "a=alive b=silent c=alive"}, {2080, "a=alive b=alive c=alive"}, {3000, "a=alive b=alive c=alive"}}},
      {"partition {me,a} | {b,c}: b and c dead by the bound, a alive", {"a", "b", "c"}, {{"a", 0, 2000}, {"b", 30, 1030}, {"c", 60, 1060}}, {}, {{1329, "b=alive"}, {1330, "a=alive b=dead c=alive"}, {1360, "a=alive b=dead c=dead"}}},
      {"a peer advertising a 200 ms interval gets a 600 ms bound", {"a", "b"}, {{"a", 0, 200, 200, flags::kLinkUp, 200}, {"b", 0, 2000}}, {}, {{799, "a=alive"}, {800, "a=dead"}}},
      {"never heard: stays never_heard (old agent, wrong key), whatever time passes", {"a", "b"}, {{"b", 0, 5000}}, {}, {{0, "a=never_heard b=alive"}, {5000, "a=never_heard b=alive"}}},
      {"last standing after the others died: judged by (b)", {"a", "b"}, {{"a", 0, 100}, {"b", 0, 1000}}, {}, {{400, "a=dead b=alive"}, {1299, "b=alive"}, {1300, "a=dead b=dead"}}},
  };
  // clang-format on
  for (const auto& sc : scenarios) RunScenario(sc);
}

TEST(Detector, OverridesFollowStates) {
  FakeClock clock;
  const SteadyTime t0 = clock.Now();
  Detector d(DetectorOptions{election::NodeName("me"), milliseconds(100), 3});
  std::vector<election::NodeName> peers = {election::NodeName("a"), election::NodeName("b")};
  d.SetPeers(peers);
  EXPECT_FALSE(OverrideFor(*d.Find(peers[0])));  // never heard: the lease decides

  Heartbeat hb;
  hb.node = peers[0];
  hb.boot_id = 1;
  hb.sequence = 1;
  ASSERT_TRUE(d.OnHeartbeat(hb, t0));
  auto t = d.Evaluate(t0);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], (Transition{peers[0], PeerState::kNeverHeard, PeerState::kAlive, "heard"}));
  auto o = OverrideFor(*d.Find(peers[0]));
  ASSERT_TRUE(o);
  EXPECT_EQ(o->state, election::Liveness::kAlive);
  EXPECT_EQ(o->until, t0 + milliseconds(300));
  EXPECT_EQ(d.NextDeadline(), t0 + milliseconds(300));

  // a goes quiet; it was the last peer heard and the link is up: dead, no `until`.
  t = d.Evaluate(t0 + milliseconds(300));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, PeerState::kDead);
  o = OverrideFor(*d.Find(peers[0]));
  ASSERT_TRUE(o);
  EXPECT_EQ(o->state, election::Liveness::kDead);
  EXPECT_FALSE(o->until);
  EXPECT_FALSE(d.NextDeadline());
  EXPECT_TRUE(d.Evaluate(t0 + milliseconds(900)).empty());  // nothing repeats
}

TEST(Detector, HearingAndSettledness) {
  const SteadyTime t0{};
  Detector d(DetectorOptions{election::NodeName("me"), milliseconds(100), 3});
  EXPECT_FALSE(d.HearsAnyPeer(t0));
  EXPECT_TRUE(d.AllPeersSettled(t0));  // no peers: nobody judges us by heartbeats
  std::vector<election::NodeName> peers = {election::NodeName("a"), election::NodeName("b")};
  d.SetPeers(peers);
  EXPECT_FALSE(d.AllPeersSettled(t0));  // never heard
  Heartbeat hb;
  hb.boot_id = 1;
  for (const auto& p : peers) {
    hb.node = p;
    hb.sequence++;
    d.OnHeartbeat(hb, t0);
  }
  d.Evaluate(t0);
  EXPECT_TRUE(d.HearsAnyPeer(t0 + milliseconds(299)));
  EXPECT_TRUE(d.AllPeersSettled(t0 + milliseconds(299)));
  EXPECT_FALSE(d.HearsAnyPeer(t0 + milliseconds(300)));
  EXPECT_FALSE(d.AllPeersSettled(t0 + milliseconds(300)));  // bound passed, not yet evaluated
  d.Evaluate(t0 + milliseconds(300));
  // Both quiet together: silent, not settled.
  EXPECT_EQ(d.CountIn(PeerState::kSilent), 2u);
  EXPECT_FALSE(d.AllPeersSettled(t0 + milliseconds(300)));
}

TEST(Detector, ListChanges) {
  const SteadyTime t0{};
  Detector d(DetectorOptions{election::NodeName("me"), milliseconds(100), 3});
  std::vector<election::NodeName> peers = {election::NodeName("a"), election::NodeName("me")};
  d.SetPeers(peers);
  EXPECT_EQ(d.peers().size(), 1u);  // self ignored
  Heartbeat hb;
  hb.node = election::NodeName("x");
  hb.boot_id = 1;
  hb.sequence = 1;
  EXPECT_FALSE(d.OnHeartbeat(hb, t0));  // not listed
  hb.node = election::NodeName("me");
  EXPECT_FALSE(d.OnHeartbeat(hb, t0));  // self
  hb.node = election::NodeName("a");
  EXPECT_TRUE(d.OnHeartbeat(hb, t0));
  d.Evaluate(t0);
  d.SetPeers({});
  EXPECT_TRUE(d.peers().empty());
  EXPECT_FALSE(d.NextDeadline());
  EXPECT_TRUE(d.Evaluate(t0 + milliseconds(1000)).empty());
  d.SetPeers(peers);
  EXPECT_EQ(d.Find(election::NodeName("a"))->state, PeerState::kNeverHeard);
}

}  // namespace
}  // namespace pylon::heartbeat

namespace pylon::heartbeat {
namespace {

TEST(Detector, WindowedAddressListsAreAssembled) {
  const SteadyTime t0{};
  Detector d(DetectorOptions{election::NodeName("me"), milliseconds(100), 3});
  std::vector<election::NodeName> peers = {election::NodeName("a")};
  d.SetPeers(peers);
  auto ip = [](const char* s) { return *net::IpAddress::Parse(s); };
  auto beat = [&](std::uint64_t boot, std::uint64_t seq, std::uint8_t w, std::uint8_t k,
                  std::vector<net::IpAddress> addrs) {
    Heartbeat hb;
    hb.node = peers[0];
    hb.boot_id = boot;
    hb.sequence = seq;
    hb.window = w;
    hb.windows = k;
    hb.addresses = std::move(addrs);
    d.OnHeartbeat(hb, t0);
    return d.Find(peers[0])->addresses;
  };
  using V = std::vector<net::IpAddress>;
  EXPECT_EQ(beat(1, 1, 0, 2, {ip("192.0.2.3"), ip("192.0.2.1")}),
            (V{ip("192.0.2.1"), ip("192.0.2.3")}));
  EXPECT_EQ(beat(1, 2, 1, 2, {ip("192.0.2.2")}),
            (V{ip("192.0.2.1"), ip("192.0.2.2"), ip("192.0.2.3")}));
  // Window 0 changes: its old content is replaced, window 1 kept.
  EXPECT_EQ(beat(1, 3, 0, 2, {ip("192.0.2.9")}), (V{ip("192.0.2.2"), ip("192.0.2.9")}));
  // Window count changes: start over.
  EXPECT_EQ(beat(1, 4, 0, 3, {ip("192.0.2.5")}), (V{ip("192.0.2.5")}));
  // A new boot id: start over too.
  EXPECT_EQ(beat(2, 1, 1, 3, {ip("192.0.2.6")}), (V{ip("192.0.2.6")}));
  // Back to a single list: taken as is.
  EXPECT_EQ(beat(2, 2, 0, 1, {ip("2001:db8::1")}), (V{ip("2001:db8::1")}));
}

}  // namespace
}  // namespace pylon::heartbeat
