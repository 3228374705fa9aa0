// The engine on a ring (ring.h, gossip.h): twelve engines that all speak the ring, driven in
// virtual time over a test network that can crash a node, cut one direction of one link, or lose
// every datagram to or from a node. Each engine has its own Membership (every lease live and
// renewed), so the tests read what matters: who each node's election considers live.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "heartbeat/engine.h"

namespace pylon::heartbeat {
namespace {

using election::NodeName;
using std::chrono::milliseconds;

const SteadyTime kStart = SteadyTime{} + std::chrono::hours(1);

class RingWorld {
 public:
  // `legacy`: nodes that do not publish the ring capability (older agents). `shared`: the first
  // leases go into one PeerTable every engine uses (Engine::UsePeers) instead of to each engine.
  explicit RingWorld(std::size_t n, std::set<std::string> legacy = {}, bool shared = false)
      : legacy_(std::move(legacy)) {
    for (std::size_t i = 0; i < n; ++i) {
      names_.push_back("node-" + std::to_string(i));
      ips_.push_back(Ip(i));
    }
    for (std::size_t i = 0; i < n; ++i) {
      engines_.emplace(names_[i], MakeEngine(i, 1000 + i));
      memberships_.emplace(names_[i], election::Membership());
    }
    if (!shared) {
      for (std::size_t i = 0; i < n; ++i) Join(i);
      return;
    }
    table_ = std::make_shared<PeerTable>();
    for (std::size_t i = 0; i < n; ++i) {
      table_->Observe(NodeName(names_[i]), Ip(i).ToString() + ":7934", false,
                      legacy_.count(names_[i]) == 0);
    }
    table_->Rebuild(**election::Sha256Hasher::Create());
    for (auto& [self, e] : engines_) e.UsePeers(table_);
    for (std::size_t i = 0; i < n; ++i) Lease(i, false, {}, /*membership_only=*/true);
  }

  // Node i's lease (with both annotations) appears to every node, or disappears.
  void Join(std::size_t i) { Lease(i, false); }
  void Leave(std::size_t i) { Lease(i, true); }
  // Node i's agent restarts (a new boot id, a fresh engine and Membership that see every lease
  // there is), e.g. to join again after it left.
  void Restart(std::size_t i) {
    const std::string& self = names_[i];
    engines_.erase(self);
    engines_.emplace(self, MakeEngine(i, 1000 + i + 100 * ++restarts_));
    memberships_.erase(self);
    memberships_.emplace(self, election::Membership());
    for (std::size_t j : leased_) Lease(j, false, {self});
  }
  // Node i moves to another subnet: its heartbeat endpoint changes (192.0.2.x, then
  // 198.51.100.x, then 2001:db8::x, and round again), the new lease seen by every node at once.
  void Move(std::size_t i) {
    const auto& a = ips_[i];
    const auto host = static_cast<std::uint32_t>(i) + 1;
    if (a.is_v6()) {
      ips_[i] = Ip(i);
    } else if (a == Ip(i)) {
      ips_[i] = net::IpAddress::V4(0xc6336400u + host);  // 198.51.100.x
    } else {
      ips_[i] = *net::IpAddress::Parse("2001:db8::" + std::to_string(host));
    }
    Join(i);
  }
  // `observers`: the nodes that see it now (empty: all); the others see it later, if ever.
  void Lease(std::size_t i, bool deleted, const std::set<std::string>& observers = {},
             bool membership_only = false) {
    const std::string value = Endpoint{ips_[i], 7934}.ToString();
    const bool ring = legacy_.count(names_[i]) == 0;
    if (deleted) {
      leased_.erase(i);
    } else {
      leased_.insert(i);
    }
    for (auto& [self, e] : engines_) {
      if (!observers.empty() && observers.count(self) == 0) continue;
      if (!membership_only) {
        e.ObservePeerLease(
            NodeName(names_[i]),
            [&](std::string_view key) -> std::string_view {
              if (key == kHeartbeatAnnotation) return value;
              if (key == kRingAnnotation && ring) return kRingVersion;
              return {};
            },
            deleted);
      }
      election::LeaseObservation lo;
      lo.node = NodeName(names_[i]);
      lo.holder_identity = names_[i];
      lo.lease_duration_seconds = 3600;
      lo.renew_time = "t0";
      lo.deleted = deleted;
      memberships_.at(self).Observe(lo, now_);
    }
  }

  static net::IpAddress Ip(std::size_t i) {
    return net::IpAddress::V4(0xc0000200u + static_cast<std::uint32_t>(i) + 1);  // 192.0.2.x
  }
  const std::string& name(std::size_t i) const { return names_[i]; }
  Engine& at(const std::string& n) { return engines_.at(n); }
  // The first of the four nodes that monitor `subject` (send it heartbeats); "" if it has none.
  // Fails the test unless there are four.
  std::string Monitor(const std::string& subject) {
    const auto monitors = at(subject).HeartbeatPeers();
    EXPECT_EQ(monitors.size(), 4u) << subject;
    return monitors.empty() ? "" : monitors[0].str();
  }

  void Run(Duration span) {
    const SteadyTime until = now_ + span;
    while (now_ < until) {
      now_ += milliseconds(1);
      for (auto& [name, e] : engines_) {
        if (crashed_.count(name) != 0 || e.NextWake() > now_) continue;
        for (auto& d : e.Poll(now_)) {
          ++sent_[name];
          const std::string& to = NodeAt(d.to);
          if (to.empty() || crashed_.count(to) != 0 || isolated_.count(name) || isolated_.count(to))
            continue;
          if (cut_.count({name, to}) != 0) continue;
          if (deaf_to_reports_.count(to) != 0 && LooksLikeReport(d.bytes)) continue;
          engines_.at(to).OnDatagram(d.bytes, Endpoint{ips_[IndexOf(name)], 7934}, now_);
        }
      }
      for (auto& [name, e] : engines_) {
        if (crashed_.count(name) == 0) e.Evaluate(now_);
      }
    }
  }

  // Whether `observer`'s election considers `subject` live after a pass.
  bool Live(const std::string& observer, const std::string& subject, bool lease_healthy = true) {
    auto& m = memberships_.at(observer);
    Engine::PassInputs in;
    in.lease_healthy = lease_healthy;
    at(observer).Sync(m, in, now_);
    return m.IsLive(NodeName(subject), now_);
  }
  // The observers (not crashed, not `subject`) that consider `subject` dead.
  std::size_t DeadIn(const std::string& subject, bool lease_healthy = true) {
    std::size_t n = 0;
    for (const auto& o : names_) {
      if (o == subject || crashed_.count(o)) continue;
      if (!Live(o, subject, lease_healthy)) ++n;
    }
    return n;
  }
  std::size_t Live() const { return names_.size() - crashed_.size(); }

  std::set<std::string> crashed_;
  std::set<std::string> isolated_;
  std::set<std::pair<std::string, std::string>> cut_;  // (from, to) datagrams lost
  std::set<std::string> deaf_to_reports_;              // reports to these nodes are lost
  std::map<std::string, std::uint64_t> sent_;
  std::shared_ptr<PeerTable> table_;  // shared by every engine (`shared`), until one changes it
  SteadyTime now_ = kStart;

 private:
  std::size_t IndexOf(const std::string& n) const {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == n) return i;
    }
    ADD_FAILURE() << n;
    return 0;
  }
  // A datagram to an address nobody has (any more) is lost: Run skips it.
  const std::string& NodeAt(const Endpoint& ep) const {
    static const std::string kNobody;
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (ips_[i] == ep.address) return names_[i];
    }
    return kNobody;
  }
  Engine MakeEngine(std::size_t i, std::uint64_t boot) const {
    const KeyRing keys = *KeyRing::Create({"ring-engine-test-key-0123456789"});
    EngineOptions o;
    o.node = NodeName(names_[i]);
    o.config.interval = milliseconds(100);
    o.config.miss_count = 3;
    o.boot_id = boot;
    o.ring = legacy_.count(names_[i]) == 0;
    auto e = Engine::Create(o, keys);
    EXPECT_TRUE(e) << e.error().message();
    election::Membership judged;  // past kStarting, as the agent's first pass makes it
    e->Sync(judged, {true, false, true}, now_);
    return std::move(*e);
  }

  std::vector<std::string> names_;
  std::vector<net::IpAddress> ips_;  // each node's heartbeat endpoint address now
  std::set<std::size_t> leased_;     // nodes whose lease exists
  std::uint64_t restarts_ = 0;
  std::set<std::string> legacy_;
  std::map<std::string, Engine> engines_;
  std::map<std::string, election::Membership> memberships_;
};

TEST(RingEngine, HeartbeatsGoToFourNeighboursOnly) {
  RingWorld w(12);
  w.Run(milliseconds(2000));
  for (std::size_t i = 0; i < 12; ++i) {
    const auto& e = w.at(w.name(i));
    EXPECT_EQ(e.HeartbeatPeers().size(), 4u) << w.name(i);
    EXPECT_EQ(e.detector().CountIn(PeerState::kAlive), 4u) << w.name(i);
    // About 10 rounds/s x 4 peers over 2 s, not 11 peers.
    EXPECT_LE(w.sent_[w.name(i)], 2u * 10 * 4 + 8) << w.name(i);
    EXPECT_EQ(e.stats().reports_made, 0u);
  }
}

TEST(RingEngine, ACrashIsKnownEverywhereThroughReports) {
  RingWorld w(12);
  w.Run(milliseconds(1000));
  const std::string victim = w.name(5);
  EXPECT_EQ(w.DeadIn(victim), 0u);
  w.crashed_.insert(victim);
  w.Run(milliseconds(200));
  EXPECT_EQ(w.DeadIn(victim), 0u) << "not before the bound";
  w.Run(milliseconds(200));
  // Every live node, monitor or not, now considers it dead: its 4 monitors by heartbeats, the
  // other 7 from two monitors' reports.
  EXPECT_EQ(w.DeadIn(victim), w.Live() - 0);
  std::uint64_t made = 0;
  for (std::size_t i = 0; i < 12; ++i) made += w.at(w.name(i)).stats().reports_made;
  EXPECT_EQ(made, 4u);  // one per monitor
  // Back: its monitors hear it and report alive; everyone revives it.
  w.crashed_.erase(victim);
  w.Run(milliseconds(300));
  EXPECT_EQ(w.DeadIn(victim), 0u);
}

// A crash and a return: each node forwards the reports that are news to it (Gossip::IsNews), the
// first two monitors' dead reports and the first alive one, not all four of each.
TEST(RingEngine, ReportsThatChangeNothingAreNotForwarded) {
  RingWorld w(16);
  w.Run(milliseconds(1000));
  const std::string victim = w.name(5);
  w.crashed_.insert(victim);
  w.Run(milliseconds(500));
  EXPECT_EQ(w.DeadIn(victim), w.Live());
  w.crashed_.erase(victim);
  w.Run(milliseconds(500));
  EXPECT_EQ(w.DeadIn(victim), 0u);
  std::uint64_t made = 0, sent = 0, not_forwarded = 0, received = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    const auto& st = w.at(w.name(i)).stats();
    made += st.reports_made;
    sent += st.reports_sent;
    not_forwarded += st.reports_not_forwarded;
    received += st.reports_received;
  }
  EXPECT_EQ(made, 8u);  // 4 monitors: dead, then alive
  // Forwarding everything: every node sends every report to its 4 fingers (offsets 1, 2, 4, 8).
  const std::uint64_t flood_all = made * 16 * 4;
  EXPECT_GT(not_forwarded, 0u);
  EXPECT_LT(sent, flood_all);
  // The monitors' four dead reports reach a node at about the same time, so some copies of the
  // third and fourth are still forwarded; the alive reports after the first are not.
  EXPECT_LE(sent, flood_all * 3 / 4)
      << "not forwarded " << not_forwarded << ", received " << received;
}

TEST(RingEngine, OneMonitorLosingHeartbeatsMovesNothing) {
  RingWorld w(12);
  w.Run(milliseconds(1000));
  const std::string subject = w.name(3);
  const std::string monitor = w.Monitor(subject);
  w.cut_.insert({subject, monitor});   // that monitor alone stops hearing the subject
  w.deaf_to_reports_.insert(subject);  // and the subject cannot refute
  w.Run(milliseconds(600));
  EXPECT_FALSE(w.Live(monitor, subject)) << "the monitor itself judges by what it hears";
  // Every other node keeps it live: one dead report is not a verdict.
  std::size_t dead_elsewhere = 0;
  for (std::size_t i = 0; i < 12; ++i) {
    if (w.name(i) != monitor && w.name(i) != subject && !w.Live(w.name(i), subject)) {
      ++dead_elsewhere;
    }
  }
  EXPECT_EQ(dead_elsewhere, 0u);
}

// One monitor's suspicion goes to the subject's other monitors only, not over the segment; when it
// ends (the monitor hears the subject again) so does its alive report. A crash afterwards is still
// known everywhere.
TEST(RingEngine, ALoneSuspicionIsNotFlooded) {
  RingWorld w(16);
  w.Run(milliseconds(1000));
  const std::string subject = w.name(3);
  const std::string monitor = w.Monitor(subject);
  auto reports = [&] {
    std::uint64_t sent = 0, received = 0;
    for (std::size_t i = 0; i < 16; ++i) {
      sent += w.at(w.name(i)).stats().reports_sent;
      received += w.at(w.name(i)).stats().reports_received;
    }
    return std::pair{sent, received};
  };
  w.cut_.insert({subject, monitor});
  w.Run(milliseconds(600));
  EXPECT_EQ(w.at(monitor).stats().reports_made, 1u);
  EXPECT_EQ(reports(), (std::pair<std::uint64_t, std::uint64_t>{3, 3}))
      << "to the 3 other monitors, which keep it";
  w.cut_.clear();
  w.Run(milliseconds(600));
  EXPECT_EQ(w.at(monitor).stats().reports_made, 2u);
  EXPECT_EQ(reports(), (std::pair<std::uint64_t, std::uint64_t>{6, 6}));
  for (std::size_t i = 0; i < 16; ++i) EXPECT_TRUE(w.Live(w.name(i), subject)) << w.name(i);
  w.crashed_.insert(subject);
  w.Run(milliseconds(450));
  EXPECT_EQ(w.DeadIn(subject), w.Live());
}

TEST(RingEngine, ARefutationClearsAFalseVerdict) {
  RingWorld w(12);
  w.Run(milliseconds(1000));
  const std::string subject = w.name(7);
  const auto monitors = w.at(subject).HeartbeatPeers();
  // Two monitors stop hearing it (one direction only): a verdict forms, then the subject, which
  // receives the flood, refutes it at a later sequence.
  w.cut_.insert({subject, monitors[0].str()});
  w.cut_.insert({subject, monitors[1].str()});
  w.Run(milliseconds(600));
  std::size_t far_dead = 0;
  for (std::size_t i = 0; i < 12; ++i) {
    const std::string& o = w.name(i);
    if (o == subject || o == monitors[0].str() || o == monitors[1].str()) continue;
    if (!w.Live(o, subject)) ++far_dead;
  }
  EXPECT_EQ(far_dead, 0u) << "the refutation outranks both dead reports";
}

TEST(RingEngine, AnApiOutageKeepsNonNeighboursLive) {
  RingWorld w(12);
  w.Run(milliseconds(1000));
  const std::string observer = w.name(0);
  std::size_t live = 0;
  for (std::size_t i = 1; i < 12; ++i) {
    if (w.Live(observer, w.name(i), /*lease_healthy=*/false)) ++live;
  }
  EXPECT_EQ(live, 11u);
  // A crash during the outage is still reported.
  w.crashed_.insert(w.name(4));
  w.Run(milliseconds(500));
  EXPECT_EQ(w.DeadIn(w.name(4), /*lease_healthy=*/false), w.Live());
}

// A join seen by half the nodes a few seconds before the other half: those that saw it first
// stop expecting some old neighbours' heartbeats, but keep sending them theirs for a while, so
// no one is reported dead.
TEST(RingEngine, ViewsOfAJoinThatDifferForSecondsReportNothing) {
  RingWorld w(16);
  w.Leave(15);
  w.crashed_.insert(w.name(15));
  w.Run(milliseconds(1000));
  std::set<std::string> first_half;
  for (std::size_t i = 0; i < 16; i += 2) first_half.insert(w.name(i));
  w.crashed_.erase(w.name(15));
  w.Lease(15, false, first_half);
  w.Run(milliseconds(3000));
  std::set<std::string> rest;
  for (std::size_t i = 1; i < 16; i += 2) rest.insert(w.name(i));
  w.Lease(15, false, rest);
  w.Run(milliseconds(1000));
  std::uint64_t made = 0;
  for (std::size_t i = 0; i < 16; ++i) made += w.at(w.name(i)).stats().reports_made;
  EXPECT_EQ(made, 0u);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(w.at(w.name(i)).detector().CountIn(PeerState::kDead), 0u) << w.name(i);
    EXPECT_EQ(w.at(w.name(i)).detector().CountIn(PeerState::kAlive), 4u) << w.name(i);
  }
}

TEST(RingEngine, LegacyPeersAreHeardByEveryone) {
  RingWorld w(12, {"node-2"});
  w.Run(milliseconds(1000));
  for (std::size_t i = 0; i < 12; ++i) {
    const auto& e = w.at(w.name(i));
    if (w.name(i) == "node-2") {
      // The older agent sends to everyone and hears everyone.
      EXPECT_EQ(e.detector().CountIn(PeerState::kAlive), 11u);
      continue;
    }
    EXPECT_EQ(e.legacy_peers(), 1u);
    EXPECT_TRUE(e.detector().IsPeer(NodeName("node-2"))) << w.name(i);
    EXPECT_EQ(e.Peer(NodeName("node-2"))->state, PeerState::kAlive) << w.name(i);
  }
  // Its crash is seen directly by every node.
  w.crashed_.insert("node-2");
  w.Run(milliseconds(400));
  EXPECT_EQ(w.DeadIn("node-2"), w.Live());
}

// Engines that share one lease table (the segment simulation's way to hold 5,000) do exactly what
// engines fed the same leases one by one do, before and after a leave that each engine applies to
// its own copy; the shared table itself never changes.
TEST(RingEngine, ASharedPeerTableActsAsEachEnginesOwn) {
  RingWorld own(12, {"node-9"});
  RingWorld shared(12, {"node-9"}, /*shared=*/true);
  auto same = [&](const char* when) {
    for (std::size_t i = 0; i < 12; ++i) {
      const std::string& o = own.name(i);
      SCOPED_TRACE(std::string(when) + " " + o);
      if (own.crashed_.count(o)) continue;
      EXPECT_EQ(own.at(o).HeartbeatPeers(), shared.at(o).HeartbeatPeers());
      EXPECT_EQ(own.at(o).legacy_peers(), shared.at(o).legacy_peers());
      EXPECT_EQ(own.at(o).stats().sent, shared.at(o).stats().sent);
      EXPECT_EQ(own.at(o).stats().reports_made, shared.at(o).stats().reports_made);
      EXPECT_EQ(own.at(o).stats().reports_received, shared.at(o).stats().reports_received);
      for (std::size_t j = 0; j < 12; ++j) {
        EXPECT_EQ(own.Live(o, own.name(j)), shared.Live(o, own.name(j))) << own.name(j);
      }
    }
  };
  const auto run = [&](Duration d) {
    own.Run(d);
    shared.Run(d);
  };
  run(milliseconds(1000));
  same("at rest");
  EXPECT_EQ(shared.at("node-9").HeartbeatPeers().size(), 11u) << "the legacy node hears all";
  for (auto* w : {&own, &shared}) w->crashed_.insert("node-4");
  run(milliseconds(450));
  same("after a crash");
  EXPECT_EQ(shared.DeadIn("node-4"), shared.Live());
  for (auto* w : {&own, &shared}) {
    w->crashed_.erase("node-4");
    w->Leave(6);
    w->crashed_.insert("node-6");
  }
  run(milliseconds(6000));
  same("after a leave");
  EXPECT_EQ(shared.table_->endpoints.size(), 12u) << "copied before the change";
  EXPECT_EQ(shared.at("node-0").endpoints().count(NodeName("node-6")), 0u);
}

// Whatever the joins, leaves and subnet changes before it, a crash is known to every live member
// within the detection bound plus the flood: every node that could take over one of its addresses
// stops electing it, monitor or not. (Who could take over an address depends on the subnets in the
// node leases, which the ring does not look at: every live member learns, so every possible
// successor does, whatever the subnets.) And no live node is taken for dead, before or after.
//
// The churn is spread over time: each step (a node leaves and stops; comes back as a restarted
// agent; or moves to another subnet, its heartbeat endpoint changing from 192.0.2.x to
// 198.51.100.x to 2001:db8::x) is followed by 0-800 ms of traffic, so neighbours change while
// heartbeats flow. Up to two members are older agents without the ring.
RC_GTEST_PROP(RingEngineProperty, EveryLiveMemberLearnsOfACrashAfterChurn, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(2, 24);
  std::set<std::string> legacy;
  for (std::size_t i : *rc::gen::container<std::vector<std::size_t>>(
           *rc::gen::inRange<std::size_t>(0, 3), rc::gen::inRange<std::size_t>(0, n))) {
    legacy.insert("node-" + std::to_string(i));
  }
  RingWorld w(n, legacy);
  enum Kind { kLeaveOrReturn, kMove };
  struct Step {
    Kind kind;
    std::size_t node;
    int wait_ms;
  };
  const auto steps = *rc::gen::container<std::vector<Step>>(
      rc::gen::construct<Step>(rc::gen::element(kLeaveOrReturn, kMove),
                               rc::gen::inRange<std::size_t>(0, n), rc::gen::inRange(0, 800)));
  std::set<std::size_t> away;
  w.Run(milliseconds(500));
  for (const auto& st : steps) {
    const std::string& name = w.name(st.node);
    if (st.kind == kMove) {
      w.Move(st.node);  // away or not: its lease comes back with the new endpoint
      if (away.erase(st.node) != 0) {
        w.Restart(st.node);
        w.crashed_.erase(name);
      }
    } else if (away.count(st.node) != 0) {
      w.Restart(st.node);
      w.Join(st.node);
      w.crashed_.erase(name);
      away.erase(st.node);
    } else if (away.size() + 2 < n) {
      w.Leave(st.node);
      w.crashed_.insert(name);  // gone: neither sends nor hears
      away.insert(st.node);
    }
    w.Run(milliseconds(st.wait_ms));
  }
  w.Run(milliseconds(1000));
  std::vector<std::size_t> present;
  for (std::size_t i = 0; i < n; ++i) {
    if (!away.count(i)) present.push_back(i);
  }
  const std::string victim = w.name(*rc::gen::elementOf(present));
  for (std::size_t i : present) {
    for (std::size_t j : present) RC_ASSERT(w.Live(w.name(i), w.name(j)));
  }
  w.crashed_.insert(victim);
  w.Run(milliseconds(450));
  for (std::size_t i : present) {
    const std::string& o = w.name(i);
    if (o == victim) continue;
    RC_ASSERT(!w.Live(o, victim));
    for (std::size_t j : present) {
      if (w.name(j) != victim) RC_ASSERT(w.Live(o, w.name(j)));
    }
  }
}

}  // namespace
}  // namespace pylon::heartbeat
