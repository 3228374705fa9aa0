// HeartbeatService end to end over loopback (no root): real sockets and threads, short intervals.
// Waits poll the observed state with a deadline; no timing assertions.
#include "heartbeat/service.h"
#include "support/election.h"
#include "support/eventually.h"
#include "support/net.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

namespace pylon::heartbeat {
namespace {

using election::NodeName;
using std::chrono::milliseconds;
using std::chrono::seconds;

using test_support::Ip;

KeyRing Key(const char* k) { return *KeyRing::Create({k}); }

// Polls every millisecond, for 5 s unless told.
constexpr test_support::Poll WaitFor{.timeout = seconds(5), .every = milliseconds(1)};

std::unique_ptr<HeartbeatService> Make(const char* name, const KeyRing& key,
                                       std::uint64_t boot = 0) {
  ServiceOptions o;
  o.node = NodeName(name);
  o.config.interval = milliseconds(50);
  o.config.miss_count = 3;
  o.config.port = 0;
  if (boot != 0) o.boot_id = boot;
  ServiceDeps deps;
  deps.clock = &SystemClock::Instance();
  auto s = HeartbeatService::Create(std::move(o), key, std::move(deps), nullptr);
  EXPECT_TRUE(s) << s.error().message();
  auto st = (*s)->Start();
  EXPECT_TRUE(st) << st.error().message();
  election::Membership judged;  // the agent's first pass: past kStarting (engine_test covers it)
  (*s)->Sync(judged, {true, false, true});
  return std::move(*s);
}

PeerState StateOf(const HeartbeatService& s, const char* peer) {
  auto p = s.Peer(NodeName(peer));
  return p ? p->state : PeerState::kNeverHeard;
}

class Loopback : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* n : {"a", "b", "c"}) nodes_[n] = Make(n, key_);
    Wire();
  }
  // Every node lists every other node at 127.0.0.1:<its port>.
  void Wire() {
    for (auto& [name, svc] : nodes_) {
      std::map<NodeName, std::vector<Endpoint>> peers;
      for (auto& [other, o] : nodes_) {
        if (other != name && o) peers[NodeName(other)] = {Endpoint{Ip("127.0.0.1"), o->port()}};
      }
      for (auto& [other, port] : extra_) peers[NodeName(other)] = {Endpoint{Ip("127.0.0.1"), port}};
      if (svc) svc->SetPeers(peers);
    }
  }
  bool AllAlive() {
    for (auto& [name, svc] : nodes_) {
      for (auto& [other, o] : nodes_) {
        if (other != name && StateOf(*svc, other.c_str()) != PeerState::kAlive) return false;
      }
    }
    return true;
  }
  KeyRing key_ = Key("loopback-test-key-0123");
  std::map<std::string, std::unique_ptr<HeartbeatService>> nodes_;
  std::map<std::string, std::uint16_t> extra_;
};

TEST_F(Loopback, DetectsStopAndLeaveAndRevival) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));

  // c stops (a crash as far as the wire is concerned).
  const auto t0 = std::chrono::steady_clock::now();
  nodes_["c"]->Stop();
  ASSERT_TRUE(WaitFor([&] {
    return StateOf(*nodes_["a"], "c") == PeerState::kDead &&
           StateOf(*nodes_["b"], "c") == PeerState::kDead;
  }));
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
  std::printf("loopback: crash of c detected by a and b after %.1f ms (bound 150 ms)\n",
              ms.count());
  EXPECT_TRUE(WaitFor([&] { return StateOf(*nodes_["a"], "b") == PeerState::kAlive; }));

  // c comes back (new process, new boot id): alive again at its first heartbeat.
  nodes_["c"] = Make("c", key_);
  Wire();
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));

  // b leaves gracefully: dead at once, no bound to wait for.
  nodes_["b"]->Leave();
  ASSERT_TRUE(WaitFor([&] { return StateOf(*nodes_["a"], "b") == PeerState::kDead; }));
  EXPECT_NE(nodes_["a"]->Peer(NodeName("b"))->reason.find("leaving"), std::string::npos);
}

// a hears nobody for a while (b and c stop sending to it: a partition, or a stopped a): its peers
// go silent, not dead; heard again, they count as rejoined -- the agent's cue to re-announce.
TEST_F(Loopback, PeersHeardAgainAfterASilenceCountAsRejoined) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  EXPECT_EQ(nodes_["a"]->stats().rejoined, 0u);
  for (const char* n : {"b", "c"}) {
    std::map<NodeName, std::vector<Endpoint>> peers;
    for (const char* o : {"b", "c"}) {
      if (std::string(o) != n) peers[NodeName(o)] = {Endpoint{Ip("127.0.0.1"), nodes_[o]->port()}};
    }
    peers[NodeName("a")] = {Endpoint{Ip("127.0.0.1"), 9}};  // not a: nothing listens there
    nodes_[n]->SetPeers(peers);
  }
  ASSERT_TRUE(WaitFor([&] {
    return StateOf(*nodes_["a"], "b") == PeerState::kSilent &&
           StateOf(*nodes_["a"], "c") == PeerState::kSilent;
  }));
  EXPECT_EQ(nodes_["a"]->stats().rejoined, 0u);
  Wire();
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  EXPECT_EQ(nodes_["a"]->stats().rejoined, 2u);
  EXPECT_EQ(nodes_["b"]->stats().rejoined, 0u);
}

TEST_F(Loopback, WrongKeyIgnored) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  auto intruder = Make("d", Key("not-the-cluster-key-000"));
  extra_["d"] = intruder->port();
  Wire();
  std::map<NodeName, std::vector<Endpoint>> targets;
  for (auto& [name, svc] : nodes_)
    targets[NodeName(name)] = {Endpoint{Ip("127.0.0.1"), svc->port()}};
  intruder->SetPeers(targets);
  // a receives d's datagrams and drops every one as unauthenticated.
  ASSERT_TRUE(WaitFor([&] {
    return nodes_["a"]->stats().dropped[static_cast<std::size_t>(DropReason::kBadMac)] >= 5;
  }));
  EXPECT_EQ(StateOf(*nodes_["a"], "d"), PeerState::kNeverHeard);
  EXPECT_EQ(StateOf(*intruder, "a"), PeerState::kNeverHeard);
  // ... while the cluster members still hear each other.
  EXPECT_TRUE(WaitFor([&] { return AllAlive(); }));
}

TEST_F(Loopback, ReplayedAndForeignDatagramsDropped) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  auto sock = UdpSocket::Open("", 0);
  ASSERT_TRUE(sock) << sock.error().message();
  const Endpoint a{Ip("127.0.0.1"), nodes_["a"]->port()};
  auto count = [&](DropReason r) {
    return nodes_["a"]->stats().dropped[static_cast<std::size_t>(r)];
  };
  // An authentic-looking heartbeat of b with b's boot id and an old sequence: a replay. (0 is
  // below anything b sent; 1 could still be b's latest, hence a duplicate.)
  Heartbeat old;
  old.node = NodeName("b");
  old.boot_id = nodes_["b"]->boot_id();
  old.sequence = 0;
  ASSERT_TRUE(sock->SendTo(*Encode(old, key_), a));
  ASSERT_TRUE(WaitFor([&] { return count(DropReason::kReplay) >= 1; }));
  // A valid heartbeat of a node that is not a listed peer.
  Heartbeat stranger = old;
  stranger.node = NodeName("zz");
  ASSERT_TRUE(sock->SendTo(*Encode(stranger, key_), a));
  ASSERT_TRUE(WaitFor([&] { return count(DropReason::kUnknownSender) >= 1; }));
  // One pretending to be a itself.
  Heartbeat self = old;
  self.node = NodeName("a");
  ASSERT_TRUE(sock->SendTo(*Encode(self, key_), a));
  ASSERT_TRUE(WaitFor([&] { return count(DropReason::kSelf) >= 1; }));
  // Garbage and an oversized datagram.
  const std::vector<std::uint8_t> garbage(64, 0x5a);
  ASSERT_TRUE(sock->SendTo(garbage, a));
  ASSERT_TRUE(WaitFor([&] { return count(DropReason::kBadMagic) >= 1; }));
  const std::vector<std::uint8_t> huge(kMaxDatagramBytes + 1 - 28, 0x5a);  // fits in one UDP/IPv6
  if (sock->SendTo(huge, a)) {
    ASSERT_TRUE(WaitFor([&] {
      return count(DropReason::kTooShort) + count(DropReason::kTooLong) +
                 count(DropReason::kBadMagic) >=
             2;
    }));
  }
  // b kept beating through all of that (polled: one scheduling stall of a loaded machine can make
  // it look dead for a moment).
  EXPECT_TRUE(WaitFor([&] { return StateOf(*nodes_["a"], "b") == PeerState::kAlive; }));
  EXPECT_EQ(nodes_["a"]->Peer(NodeName("zz")), std::nullopt);
}

TEST_F(Loopback, SplitBrainResolvedWithinAnInterval) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  const std::vector<net::IpAddress> both = {Ip("192.0.2.77"), Ip("2001:db8::77")};
  nodes_["a"]->SetAnnounced(both);
  nodes_["b"]->SetAnnounced(both);
  // Each side sees the other's list, and exactly one of them yields each address.
  ASSERT_TRUE(WaitFor([&] {
    auto pa = nodes_["a"]->Peer(NodeName("b"));
    auto pb = nodes_["b"]->Peer(NodeName("a"));
    return pa && pb && pa->addresses.size() == 2 && pb->addresses.size() == 2;
  }));
  auto ya = nodes_["a"]->AddressesToYield(both);
  auto yb = nodes_["b"]->AddressesToYield(both);
  EXPECT_EQ(ya.size() + yb.size(), 2u);
  for (const auto& addr : both) {
    const bool a_yields = std::find(ya.begin(), ya.end(), addr) != ya.end();
    const bool b_yields = std::find(yb.begin(), yb.end(), addr) != yb.end();
    EXPECT_NE(a_yields, b_yields) << addr.ToString();
  }
}

TEST_F(Loopback, SyncDrivesMembershipAndSelfHealth) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  election::Membership m;
  // Leases seen long ago: every lease looks expired now (an API outage).
  for (const char* n : {"a", "b", "c"}) {
    m.Observe(test_support::HeldLease(n, "t", "192.0.2.0/24"),
              SystemClock::Instance().Now() - seconds(60));
  }
  EXPECT_EQ(m.LiveCount(SystemClock::Instance().Now()), 0u);
  HeartbeatService::PassResult r;
  ASSERT_TRUE(WaitFor([&] {
    r = nodes_["a"]->Sync(m, {false, false, true});
    return r.health == SelfHealth::kHealthy;
  }));
  EXPECT_TRUE(r.overrides_changed);
  EXPECT_EQ(m.LiveCount(SystemClock::Instance().Now()), 3u);  // peers by heartbeat, self by health
  // With a lease-only member (a lease without the annotation), a failing lease means withdraw.
  election::LeaseObservation old_agent;
  old_agent.node = NodeName("old");
  old_agent.holder_identity = "old";
  old_agent.renew_time = "t";
  m.Observe(old_agent, SystemClock::Instance().Now());
  r = nodes_["a"]->Sync(m, {false, false, true});
  EXPECT_EQ(r.health, SelfHealth::kLeaseUnhealthy);
  EXPECT_FALSE(m.IsLive(NodeName("a"), SystemClock::Instance().Now()));
  // b hears that a is not eligible and treats it as unhealthy.
  ASSERT_TRUE(WaitFor([&] { return StateOf(*nodes_["b"], "a") == PeerState::kUnhealthy; }));
  r = nodes_["a"]->Sync(m, {true, false, true});
  EXPECT_EQ(r.health, SelfHealth::kHealthy);
  ASSERT_TRUE(WaitFor([&] { return StateOf(*nodes_["b"], "a") == PeerState::kAlive; }));
}

TEST_F(Loopback, LinkDownStopsHeartbeatsAndMakesSelfUnhealthy) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));
  nodes_["c"]->SetLinkUp(false);
  EXPECT_EQ(nodes_["c"]->JudgeSelf(true, false), SelfHealth::kLinkDown);
  ASSERT_TRUE(WaitFor([&] { return StateOf(*nodes_["a"], "c") == PeerState::kDead; }));
  nodes_["c"]->SetLinkUp(true);
  ASSERT_TRUE(WaitFor([&] { return StateOf(*nodes_["a"], "c") == PeerState::kAlive; }));
}

TEST(LoopbackPartial, LongAddressListsRotate) {
  const KeyRing key = Key("loopback-test-key-0123");
  auto a = Make("a", key);
  auto b = Make("b", key);
  a->SetPeers({{NodeName("b"), {Endpoint{Ip("127.0.0.1"), b->port()}}}});
  b->SetPeers({{NodeName("a"), {Endpoint{Ip("127.0.0.1"), a->port()}}}});
  std::vector<net::IpAddress> many;
  for (int i = 0; i < 600; ++i) {
    many.push_back(
        net::IpAddress::FromValue(net::Family::kV4, 0xc6336400u + static_cast<unsigned>(i)));
  }
  a->SetAnnounced(many);
  // 600 IPv4 addresses do not fit in 1400 bytes: a sends windows in turn; b assembles them.
  ASSERT_TRUE(WaitFor([&] {
    auto p = b->Peer(NodeName("a"));
    return p && p->addresses == many;
  }));
  EXPECT_GT(b->Peer(NodeName("a"))->windows.size(), 1u);
  // The list shrinks to fit one datagram: b's view follows (the window count changed: reset).
  many.resize(10);
  a->SetAnnounced(many);
  ASSERT_TRUE(WaitFor([&] {
    auto p = b->Peer(NodeName("a"));
    return p && p->addresses == many;
  }));
  EXPECT_EQ(b->Peer(NodeName("a"))->windows.size(), 1u);
}

}  // namespace
}  // namespace pylon::heartbeat
