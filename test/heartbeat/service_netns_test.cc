// Needs root: three nodes in network namespaces on one bridge (lab::Topology), a real
// HeartbeatService per node bound to its eth0 (SO_BINDTODEVICE) and following eth0 through
// netlink. A node is stopped, its link is set down, a node with a wrong key joins; the others'
// detectors must report what happened. Waits poll with generous deadlines; measured detection
// times are printed, never asserted.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "heartbeat/local_endpoints.h"
#include "heartbeat/service.h"
#include "lab/netns.h"
#include "lab/process.h"
#include "lab/topology.h"
#include "netlink/netlink_impl.h"
#include "support/eventually.h"

namespace pylon::heartbeat {
namespace {

using election::NodeName;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr test_support::Poll WaitFor{.timeout = seconds(10), .every = milliseconds(1)};

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class NetnsHeartbeat : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    topo_ = std::make_unique<lab::Topology>("hb" + std::to_string(getpid() % 100000), 3);
    auto up = topo_->Up();
    ASSERT_TRUE(up) << up.error().message();
    for (const auto& n : topo_->nodes()) {
      auto ip4 = *net::IpAddress::Parse(n.ipv4);
      auto ip6 = *net::IpAddress::Parse(n.ipv6);
      peers_[NodeName(n.name)] = {Endpoint{ip4, kDefaultPort}, Endpoint{ip6, kDefaultPort}};
    }
    for (std::size_t i = 0; i < topo_->nodes().size(); ++i) Launch(i, key_);
  }
  void TearDown() override {
    services_.clear();
    if (topo_) (void)topo_->Down();
  }

  // Creates and starts node i's service inside its namespace (socket, netlink, thread).
  void Launch(std::size_t i, const KeyRing& key) {
    const lab::LabNode& n = topo_->nodes()[i];
    std::string error;
    std::vector<net::IpAddress> published;
    auto made = lab::InNetns(n.netns, [&]() -> std::unique_ptr<HeartbeatService> {
      auto nl = netlink::NetlinkImpl::Create();
      if (!nl) {
        error = nl.error().message();
        return nullptr;
      }
      // What the agent would publish in its lease annotation, from the kernel's view of eth0.
      auto link = (*nl)->GetLink("eth0");
      auto addrs = (*nl)->ListAddresses(std::nullopt);
      if (link && addrs) published = EndpointAddresses(*addrs, link->index, std::nullopt, {});
      ServiceOptions o;
      o.node = NodeName(n.name);
      o.interface = "eth0";
      ServiceDeps deps;
      deps.clock = &SystemClock::Instance();
      deps.netlink = std::move(*nl);
      auto s = HeartbeatService::Create(std::move(o), key, std::move(deps), nullptr);
      if (!s) {
        error = s.error().message();
        return nullptr;
      }
      if (auto st = (*s)->Start(); !st) {
        error = st.error().message();
        return nullptr;
      }
      election::Membership judged;  // the agent's first pass: past kStarting
      (*s)->Sync(judged, {true, false, true});
      return std::move(*s);
    });
    ASSERT_TRUE(made) << made.error().message();
    ASSERT_NE(*made, nullptr) << error;
    // The node's own addresses (the lowest of each family); the IPv6 one may still be tentative
    // right after the link came back up, and is then left out.
    const std::string endpoints = FormatEndpoints((*made)->LocalEndpoints(published));
    if (published.size() == 2) {
      EXPECT_EQ(endpoints, n.ipv4 + ":7934,[" + n.ipv6 + "]:7934");
    } else {
      EXPECT_EQ(endpoints, n.ipv4 + ":7934");
    }
    services_[n.name] = std::move(*made);
    services_[n.name]->SetPeers(peers_);
  }

  PeerState StateOf(const std::string& observer, const std::string& peer) {
    auto p = services_.at(observer)->Peer(NodeName(peer));
    return p ? p->state : PeerState::kNeverHeard;
  }
  bool AllAlive() {
    for (const auto& [a, s] : services_) {
      for (const auto& [b, t] : services_) {
        if (a != b && StateOf(a, b) != PeerState::kAlive) return false;
      }
    }
    return true;
  }
  bool OthersSee(const std::string& peer, PeerState state) {
    for (const auto& [a, s] : services_) {
      if (a != peer && StateOf(a, peer) != state) return false;
    }
    return true;
  }

  KeyRing key_ = *KeyRing::Create({"netns-test-key-0123456789"});
  std::unique_ptr<lab::Topology> topo_;
  std::map<NodeName, std::vector<Endpoint>> peers_;
  std::map<std::string, std::unique_ptr<HeartbeatService>> services_;
};

TEST_F(NetnsHeartbeat, StopLinkDownAndWrongKey) {
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); })) << "nodes never heard each other";
  // Each heartbeat goes to a peer's IPv4 and IPv6 endpoints: the second copy is a duplicate.
  ASSERT_TRUE(WaitFor([&] {
    return services_.begin()->second->stats().dropped[static_cast<std::size_t>(
               DropReason::kDuplicate)] > 5;
  }));
  EXPECT_EQ(
      services_.begin()->second->stats().dropped[static_cast<std::size_t>(DropReason::kReplay)],
      0u);
  const std::string victim = topo_->nodes()[2].name;
  const std::string victim_ns = topo_->nodes()[2].netns;

  // 1. The victim's agent stops (a crash, as seen on the wire).
  auto t0 = Clock::now();
  services_[victim]->Stop();
  ASSERT_TRUE(WaitFor([&] { return OthersSee(victim, PeerState::kDead); }));
  std::printf("netns: stopped node detected dead by both peers after %.1f ms (bound 300 ms)\n",
              MsSince(t0));

  // It restarts: alive again.
  services_.erase(victim);
  Launch(2, key_);
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }));

  // 2. Its announcing link goes down: it judges itself unhealthy at once (netlink event), its
  // heartbeats stop, and its peers see it dead.
  t0 = Clock::now();
  ASSERT_TRUE(lab::RunCommandChecked({"ip", "link", "set", "eth0", "down"}, victim_ns));
  ASSERT_TRUE(WaitFor([&] { return !services_[victim]->link_up(); }));
  std::printf("netns: link down seen by the node itself after %.1f ms\n", MsSince(t0));
  EXPECT_EQ(services_[victim]->JudgeSelf(true, false), SelfHealth::kLinkDown);
  ASSERT_TRUE(WaitFor([&] { return OthersSee(victim, PeerState::kDead); }));
  std::printf("netns: link-down node detected dead by both peers after %.1f ms\n", MsSince(t0));
  // The victim hears nobody meanwhile, and (its link being down) declares no one dead.
  for (const auto& n : topo_->nodes()) {
    if (n.name != victim) {
      EXPECT_NE(StateOf(victim, n.name), PeerState::kDead) << n.name;
    }
  }

  // Link back up: heartbeats resume, everyone alive.
  ASSERT_TRUE(lab::RunCommandChecked({"ip", "link", "set", "eth0", "up"}, victim_ns));
  ASSERT_TRUE(WaitFor([&] { return services_[victim]->link_up(); }));
  ASSERT_TRUE(WaitFor([&] { return AllAlive(); }, seconds(20)));

  // 3. The victim restarts with a wrong key: the others never accept it (dead stays dead) and
  // count the rejected datagrams.
  const std::string observer = topo_->nodes()[0].name;
  services_[victim]->Stop();
  ASSERT_TRUE(WaitFor([&] { return OthersSee(victim, PeerState::kDead); }));
  services_.erase(victim);
  const auto bad_before =
      services_[observer]->stats().dropped[static_cast<std::size_t>(DropReason::kBadMac)];
  Launch(2, *KeyRing::Create({"some-other-key-0123456789"}));
  ASSERT_TRUE(WaitFor([&] {
    return services_[observer]->stats().dropped[static_cast<std::size_t>(DropReason::kBadMac)] >=
           bad_before + 10;
  }));
  EXPECT_TRUE(OthersSee(victim, PeerState::kDead));
  EXPECT_TRUE(
      WaitFor([&] { return StateOf(observer, topo_->nodes()[1].name) == PeerState::kAlive; }));
  // The wrong-key node hears nobody either: its peers stay never_heard (the lease decides).
  EXPECT_EQ(StateOf(victim, observer), PeerState::kNeverHeard);
}

}  // namespace
}  // namespace pylon::heartbeat
