// Engine: three engines driven by hand in virtual time, datagrams delivered between them by a
// test network that can drop everything to or from a node. Scenario tables: one world walked
// through rows (an action at a time, then the states each node sees).
#include "heartbeat/engine.h"
#include "support/election.h"
#include "support/net.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pylon::heartbeat {
namespace {

using election::NodeName;
using std::chrono::milliseconds;

using test_support::Ip;

const SteadyTime kStart = SteadyTime{} + std::chrono::hours(1);

// Three engines a, b, c on 192.0.2.1..3:7934, 100 ms interval, bound 300 ms.
class World {
 public:
  // `starting`: engines left as a fresh agent's are, before its first pass.
  explicit World(const std::set<std::string>& starting = {}) {
    const KeyRing keys = *KeyRing::Create({"engine-test-key-0123456789"});
    const std::vector<std::string> names = {"a", "b", "c"};
    for (std::size_t i = 0; i < names.size(); ++i) {
      EngineOptions o;
      o.node = NodeName(names[i]);
      o.config.interval = milliseconds(100);
      o.config.miss_count = 3;
      o.boot_id = 1000 + i;
      auto e = Engine::Create(o, keys);
      EXPECT_TRUE(e) << e.error().message();
      // Judged once (lease renewed, informers synced): past kStarting, as the agent's first pass
      // makes it. Engine.StartingAgentIsJudgedByItsLease covers the start itself.
      election::Membership judged;
      if (starting.count(names[i]) == 0) e->Sync(judged, {true, false, true}, kStart);
      engines_.emplace(names[i], std::move(*e));
      addr_[names[i]] = "192.0.2." + std::to_string(i + 1);
    }
    for (auto& [self, e] : engines_) {
      for (const auto& [peer, ip] : addr_) {
        const std::string value = ip + ":7934";
        // The annotation-lookup form, as the agent's informer feeds it.
        auto update = e.ObservePeerLease(
            NodeName(peer),
            [&](std::string_view key) {
              return key == kHeartbeatAnnotation ? std::string_view(value) : std::string_view();
            },
            false);
        EXPECT_EQ(update.peers_changed, peer != self);
        EXPECT_TRUE(update.issues.empty());
      }
    }
  }

  Engine& at(const std::string& n) { return engines_.at(n); }
  SteadyTime now() const { return now_; }

  // Advances virtual time to `t` in 1 ms steps: due rounds are sent and delivered at once
  // (unless cut), then every engine evaluates.
  void RunUntil(SteadyTime t) {
    while (now_ < t) {
      now_ += milliseconds(1);
      for (auto& [name, e] : engines_) {
        if (crashed_.count(name) != 0 || e.NextWake() > now_) continue;
        for (auto& d : e.Poll(now_)) {
          ++sent_;
          const std::string to = NodeAt(d.to);
          if (cut_.count(name) != 0 || cut_.count(to) != 0 || crashed_.count(to) != 0) continue;
          if (keep_last_ && name == "c" && to == "a") last_c_to_a_ = d.bytes;
          changed_[to] |=
              engines_.at(to).OnDatagram(d.bytes, Endpoint{Ip(addr_[name].c_str())}, now_);
        }
      }
      for (auto& [name, e] : engines_) {
        if (crashed_.count(name) == 0) e.Evaluate(now_);
      }
    }
  }
  void Run(Duration d) { RunUntil(now_ + d); }

  PeerState Sees(const std::string& observer, const std::string& subject) {
    auto p = at(observer).Peer(NodeName(subject));
    return p ? p->state : PeerState::kNeverHeard;
  }

  std::set<std::string> crashed_;
  std::set<std::string> cut_;  // every datagram to or from these nodes is lost
  std::map<std::string, bool> changed_;
  bool keep_last_ = false;
  std::vector<std::uint8_t> last_c_to_a_;
  std::uint64_t sent_ = 0;

 private:
  std::string NodeAt(const Endpoint& ep) const {
    for (const auto& [n, ip] : addr_) {
      if (Ip(ip.c_str()) == ep.address) return n;
    }
    ADD_FAILURE() << "no node at " << ep.ToString();
    return "";
  }

  std::map<std::string, Engine> engines_;
  std::map<std::string, std::string> addr_;
  SteadyTime now_ = kStart;
};

struct Row {
  std::string what;
  int at_ms;                              // virtual time of the action, from the start
  std::function<void(World&)> act;        // may be empty
  std::vector<std::string> expectations;  // "observer:subject=state" after `at_ms` + 400 ms
};

void Walk(World& w, const std::vector<Row>& rows) {
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    w.RunUntil(kStart + milliseconds(row.at_ms));
    if (row.act) row.act(w);
    w.Run(milliseconds(400));  // more than one bound plus the (a) margin
    for (const auto& e : row.expectations) {
      const auto colon = e.find(':');
      const auto eq = e.find('=');
      const std::string observer = e.substr(0, colon);
      const std::string subject = e.substr(colon + 1, eq - colon - 1);
      EXPECT_STREQ(PeerStateName(w.Sees(observer, subject)), e.substr(eq + 1).c_str()) << e;
    }
  }
}

TEST(Engine, CrashIsDetectedByTheOthers) {
  World w;
  // clang-format off
  Walk(w, {
      {"all start", 0, nullptr, {"a:b=alive", "a:c=alive", "b:c=alive", "c:a=alive"}},
      {"c crashes", 1000, [](World& x) { x.crashed_.insert("c"); }, {"a:c=dead", "b:c=dead", "a:b=alive", "b:a=alive"}},
      {"c runs again (it was frozen)", 2000, [](World& x) { x.crashed_.erase("c"); }, {"a:c=alive", "b:c=alive", "c:a=alive", "c:b=alive"}},
  });
  // clang-format on
}

TEST(Engine, CutOffNodeGivesNoVerdictTheOthersCondemnIt) {
  World w;
  // clang-format off
  Walk(w, {
      {"all start", 0, nullptr, {"a:c=alive", "c:a=alive"}},
      // a hears nobody: silence, not death (the lease decides); b and c still hear
      // each other, so a is the one gone.
      {"a cut off", 1000, [](World& x) { x.cut_.insert("a"); }, {"a:b=silent", "a:c=silent", "b:a=dead", "c:a=dead", "b:c=alive"}},
      {"a back", 2000, [](World& x) { x.cut_.clear(); }, {"a:b=alive", "a:c=alive", "b:a=alive", "c:a=alive"}},
  });
  // clang-format on
  EXPECT_EQ(w.at("a").stats().rejoined, 2u);  // b and c heard again after the silence
}

TEST(Engine, LeavingAndLinkDownAndNotEligible) {
  World w;
  // clang-format off
  Walk(w, {
      {"all start", 0, nullptr, {"a:c=alive"}},
      {"c's link goes down", 1000, [](World& x) { EXPECT_TRUE(x.at("c").SetLinkUp(false)); }, {"a:c=dead", "b:c=dead"}},
      {"c's link comes back", 1500, [](World& x) { EXPECT_TRUE(x.at("c").SetLinkUp(true)); }, {"a:c=alive"}},
      {"b says it is not eligible", 2000, [](World& x) { EXPECT_TRUE(x.at("b").SetEligible(false)); }, {"a:b=unhealthy", "c:b=unhealthy"}},
      {"b eligible again", 2500, [](World& x) { EXPECT_TRUE(x.at("b").SetEligible(true)); }, {"a:b=alive"}},
      {"c leaves", 3000, [](World& x) { x.at("c").StartLeaving(); }, {"a:c=dead", "b:c=dead", "a:b=alive"}},
  });
  // clang-format on
  EXPECT_GT(w.at("c").leaving_rounds(), 0u);
  EXPECT_EQ(w.at("c").JudgeSelf(true, false, w.now()), SelfHealth::kLeaving);
}

// A fresh agent (lease not renewed yet, informers not synced) is not eligible yet, but says
// kStarting: its peers take no verdict from its heartbeats and judge it by its lease, instead of
// reading "not eligible" and taking over what it is about to adopt.
TEST(Engine, StartingAgentIsJudgedByItsLease) {
  World w({"c"});
  election::Membership m;
  auto observe = [&](const char* n, int lease_seconds) {
    election::LeaseObservation o;
    o.node = NodeName(n);
    o.holder_identity = n;
    o.lease_duration_seconds = lease_seconds;
    o.renew_time = "t";
    m.Observe(o, w.now());
  };
  for (const char* n : {"a", "b", "c"}) observe(n, 10);
  w.Run(milliseconds(500));
  EXPECT_TRUE(w.at("c").starting());
  EXPECT_EQ(w.Sees("a", "c"), PeerState::kStarting);
  w.at("a").Sync(m, {true, false, true}, w.now());
  EXPECT_TRUE(m.IsLive(NodeName("c"), w.now()));  // its fresh lease decides
  // Its first pass, informers not synced yet: still starting, still not eligible.
  election::Membership mc;
  auto r = w.at("c").Sync(mc, {true, false, false}, w.now());
  EXPECT_EQ(r.health, SelfHealth::kHealthy);
  EXPECT_TRUE(w.at("c").starting());
  w.Run(milliseconds(400));
  EXPECT_EQ(w.Sees("a", "c"), PeerState::kStarting);
  // Judged: heard as what it says from now on.
  w.at("c").Sync(mc, {true, false, true}, w.now());
  EXPECT_FALSE(w.at("c").starting());
  w.Run(milliseconds(400));
  EXPECT_EQ(w.Sees("a", "c"), PeerState::kAlive);
  EXPECT_EQ(w.Sees("b", "c"), PeerState::kAlive);
}

TEST(Engine, StartingAgentWithoutALeaseIsNeverLive) {
  World w({"c"});
  election::Membership m;  // c has no lease (a restarted agent whose API server is unreachable)
  w.Run(milliseconds(500));
  EXPECT_EQ(w.Sees("a", "c"), PeerState::kStarting);
  w.at("a").Sync(m, {true, false, true}, w.now());
  EXPECT_FALSE(m.IsLive(NodeName("c"), w.now()));
  // Its lease cannot be renewed, but every peer hears it: it judges itself healthy (policy.h
  // JudgeSelf) and stops starting. Heard alive, it is still no member anywhere without a lease.
  election::Membership mc;
  EXPECT_EQ(w.at("c").Sync(mc, {false, false, true}, w.now()).health, SelfHealth::kHealthy);
  EXPECT_FALSE(w.at("c").starting());
  w.Run(milliseconds(400));
  EXPECT_EQ(w.Sees("a", "c"), PeerState::kAlive);
  w.at("a").Sync(m, {true, false, true}, w.now());
  EXPECT_FALSE(m.IsLive(NodeName("c"), w.now()));
}

TEST(Engine, SyncSetsOverridesFromTheDetector) {
  World w;
  election::Membership m;
  for (const char* n : {"a", "b", "c"}) m.Observe(test_support::HeldLease(n, "t"), w.now());
  w.Run(milliseconds(500));
  auto r = w.at("a").Sync(m, {true, false, true}, w.now());
  EXPECT_EQ(r.health, SelfHealth::kHealthy);
  EXPECT_TRUE(r.overrides_changed);
  EXPECT_TRUE(m.IsLive(NodeName("c"), w.now()));
  w.crashed_.insert("c");
  w.Run(milliseconds(400));
  r = w.at("a").Sync(m, {true, false, true}, w.now());
  EXPECT_TRUE(r.overrides_changed);
  // The lease is still valid for seconds; the heartbeat verdict wins.
  EXPECT_FALSE(m.IsLive(NodeName("c"), w.now()));
  EXPECT_TRUE(m.IsLive(NodeName("b"), w.now()));
  // A member without heartbeats makes a failing lease matter again.
  election::LeaseObservation old_agent;
  old_agent.node = NodeName("old");
  old_agent.holder_identity = "old";
  old_agent.renew_time = "t";
  m.Observe(old_agent, w.now());
  r = w.at("a").Sync(m, {false, false, true}, w.now());
  EXPECT_EQ(r.health, SelfHealth::kLeaseUnhealthy);
  EXPECT_FALSE(m.IsLive(NodeName("a"), w.now()));
}

TEST(Engine, AnnouncedChangeIsSentAtOnceAndSplitBrainYields) {
  World w;
  w.Run(milliseconds(500));
  const SteadyTime before = w.now();
  w.changed_.clear();
  ASSERT_GT(w.at("b").NextWake(), before);  // the next round is ahead
  const std::vector<net::IpAddress> vip = {Ip("203.0.113.10")};
  EXPECT_TRUE(w.at("b").SetAnnounced(vip));
  EXPECT_FALSE(w.at("b").SetAnnounced(vip));  // no change
  EXPECT_LE(w.at("b").NextWake(), before);    // due now
  w.Run(milliseconds(1));
  EXPECT_TRUE(w.changed_["a"]);
  EXPECT_EQ(w.at("a").Peer(NodeName("b"))->addresses, vip);
  // a claims the same address: exactly one of a and b keeps it.
  EXPECT_TRUE(w.at("a").SetAnnounced(vip));
  w.Run(milliseconds(1));
  const bool a_yields = !w.at("a").AddressesToYield(vip, w.now()).empty();
  const bool b_yields = !w.at("b").AddressesToYield(vip, w.now()).empty();
  EXPECT_NE(a_yields, b_yields);
}

TEST(Engine, ReplayedAndForeignDatagramsAreDropped) {
  World w;
  w.keep_last_ = true;
  w.Run(milliseconds(500));
  w.keep_last_ = false;
  ASSERT_FALSE(w.last_c_to_a_.empty());
  w.Run(milliseconds(200));  // newer heartbeats of c reach a
  const auto replay_before =
      w.at("a").stats().dropped[static_cast<std::size_t>(DropReason::kReplay)];
  EXPECT_FALSE(w.at("a").OnDatagram(w.last_c_to_a_, Endpoint{Ip("192.0.2.3")}, w.now()));
  EXPECT_EQ(w.at("a").stats().dropped[static_cast<std::size_t>(DropReason::kReplay)],
            replay_before + 1);
  // Signed with another key.
  Heartbeat hb;
  hb.node = NodeName("c");
  hb.boot_id = 7;
  hb.sequence = 1;
  auto forged = Encode(hb, *KeyRing::Create({"another-key-0123456789"}));
  ASSERT_TRUE(forged);
  EXPECT_FALSE(w.at("a").OnDatagram(*forged, Endpoint{Ip("192.0.2.3")}, w.now()));
  EXPECT_EQ(w.at("a").stats().dropped[static_cast<std::size_t>(DropReason::kBadMac)], 1u);
  // A lease deletion forgets the peer: its heartbeats are from an unknown sender.
  EXPECT_TRUE(w.at("a").ObservePeerLease(NodeName("c"), std::string_view(), true).peers_changed);
  w.Run(milliseconds(200));
  EXPECT_GT(w.at("a").stats().dropped[static_cast<std::size_t>(DropReason::kUnknownSender)], 0u);
  EXPECT_FALSE(w.at("a").Peer(NodeName("c")).has_value());
}

TEST(Engine, RoundsGoToEveryPeerEndpointAndStopWhileTheLinkIsDown) {
  World w;
  Engine& a = w.at("a");
  auto first = a.Poll(w.now());
  ASSERT_EQ(first.size(), 2u);  // b and c, one endpoint each
  EXPECT_EQ(first[0].peer, NodeName("b"));
  EXPECT_TRUE(a.Poll(w.now()).empty());  // not due again
  EXPECT_GT(a.NextWake(), w.now());
  EXPECT_LE(a.NextWake(), w.now() + milliseconds(100));
  EXPECT_GE(a.NextWake(), w.now() + milliseconds(90));  // 0.9..1.0 x interval
  a.RecordSendErrors(1);
  EXPECT_EQ(a.stats().sent, 1u);
  EXPECT_EQ(a.stats().send_errors, 1u);
  a.SetLinkUp(false);
  EXPECT_TRUE(a.Poll(w.now() + milliseconds(100)).empty());
  EXPECT_EQ(a.stats().rounds, 1u);
  a.SetLinkUp(true);
  EXPECT_EQ(a.Poll(w.now() + milliseconds(101)).size(), 2u);  // sent at once on link up
}

}  // namespace
}  // namespace pylon::heartbeat
