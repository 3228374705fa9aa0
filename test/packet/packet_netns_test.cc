// Gratuitous ARP, unsolicited NA and duplicate-address probes on the wire between two network
// namespaces (LABELS root): A sends, B's kernel reacts.
#include <net/if.h>

#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../netlink/netns_helper.h"
#include "common/clock.h"
#include "netlink/message.h"
#include "netlink/netlink_impl.h"
#include "packet/announcer.h"
#include "packet/arp.h"
#include "packet/claim_listener.h"
#include "packet/packet_socket.h"
#include "support/net.h"

namespace pylon::packet {
namespace {

using pylon::testing::InNetns;

using test_support::Ip;

class PacketNetnsTest : public pylon::testing::TwoNetnsTest {
 protected:
  PacketNetnsTest() : TwoNetnsTest("pylon-pk", 1) {}

  void SetUp() override {
    TwoNetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(a_->Ip("addr add 192.0.2.1/24 dev a0"), 0);
    ASSERT_EQ(b_->Ip("addr add 192.0.2.2/24 dev b0"), 0);
    ASSERT_EQ(a_->Ip("addr add 2001:db8::1/64 dev a0 nodad"), 0);
    ASSERT_EQ(b_->Ip("addr add 2001:db8::2/64 dev b0 nodad"), 0);
    // The interface as the agent would learn it: ifindex and MAC from netlink (IFLA_ADDRESS),
    // cross-checked with SIOCGIFHWADDR.
    InNetns(*a_, [&] {
      auto nl = netlink::NetlinkImpl::Create();
      ASSERT_TRUE(nl.has_value());
      auto link = (*nl)->GetLink("a0");
      ASSERT_TRUE(link.has_value());
      auto mac = MacAddress::FromBytes(link->hwaddr);
      ASSERT_TRUE(mac.has_value());
      auto ioctl_mac = InterfaceMac("a0");
      ASSERT_TRUE(ioctl_mac.has_value()) << ioctl_mac.error().message();
      EXPECT_EQ(*ioctl_mac, *mac);
      iface_ = Interface{link->index, *mac};
      EXPECT_EQ(InterfaceMac("nope0").error().code(), ErrorCode::kNotFound);
    });
    ASSERT_GT(iface_.ifindex, 0);
    b_mac_ = *MacAddress::Parse(
        nlohmann::json::parse(b_->IpOut("-j link show dev b0"))[0]["address"].get<std::string>());
  }

  // B's neighbour entry for `ip` on b0: its lladdr, or "" if none.
  std::string PeerLladdr(const std::string& ip) {
    auto j = nlohmann::json::parse(b_->IpOut("-j neigh show " + ip + " dev b0"), nullptr, false);
    if (j.is_discarded() || j.empty()) return "";
    return j[0].value("lladdr", "");
  }

  // B believes `ip` is at an old owner's MAC (a failover just happened); A announces it; B's
  // entry must then name A's MAC.
  void ExpectAnnouncementOverridesPeerEntry(const std::string& ip) {
    const std::string family = Ip(ip).is_v6() ? "-6 " : "";
    ASSERT_EQ(b_->Ip(family + "neigh replace " + ip + " lladdr 02:00:00:00:00:99 dev b0 nud stale"),
              0);
    ASSERT_EQ(PeerLladdr(ip), "02:00:00:00:00:99");
    InNetns(*a_, [&] {
      AnnouncerImpl announcer(clock_);
      auto st = announcer.Announce(iface_, Ip(ip));
      ASSERT_TRUE(st.has_value()) << st.error().message();
    });
    EXPECT_TRUE(pylon::testing::Eventually([&] { return PeerLladdr(ip) == iface_.mac.ToString(); }))
        << "B still has " << PeerLladdr(ip);
  }

  Interface iface_;
  MacAddress b_mac_;
  SystemClock& clock_ = SystemClock::Instance();
};

TEST_F(PacketNetnsTest, GratuitousArpOverridesPeerNeighbourEntry) {
  ASSERT_EQ(a_->Ip("addr add 192.0.2.10/24 dev a0"), 0);
  ExpectAnnouncementOverridesPeerEntry("192.0.2.10");
}

TEST_F(PacketNetnsTest, PeerReceivesBothGratuitousArpFormsOnTheWire) {
  // A raw listener in B sees exactly what A put on the wire.
  std::optional<PacketSocket> listener;
  InNetns(*b_, [&] {
    auto s = PacketSocket::Open(static_cast<int>(::if_nametoindex("b0")), kEtherTypeArp);
    ASSERT_TRUE(s.has_value()) << s.error().message();
    listener.emplace(std::move(*s));
  });
  ASSERT_TRUE(listener.has_value());
  InNetns(*a_, [&] {
    AnnouncerImpl announcer(clock_, ArpForm::kRequestAndReply);
    auto st = announcer.Announce(iface_, Ip("192.0.2.10"));
    ASSERT_TRUE(st.has_value()) << st.error().message();
  });
  std::vector<ArpPacket> seen;
  const auto deadline = clock_.Now() + std::chrono::seconds(2);
  while (seen.size() < 2) {
    auto frame = listener->Receive(clock_, deadline);
    ASSERT_TRUE(frame.has_value());
    ASSERT_TRUE(frame->has_value()) << "saw only " << seen.size() << " ARP packets";
    EXPECT_EQ((*frame)->source, iface_.mac);
    EXPECT_EQ((*frame)->pkttype, 1);  // PACKET_BROADCAST
    auto arp = DecodeArp((*frame)->payload);
    ASSERT_TRUE(arp.has_value());
    if (arp->sender_ip == Ip("192.0.2.10")) seen.push_back(*arp);
  }
  EXPECT_EQ(seen[0], *GratuitousArpRequest(iface_.mac, Ip("192.0.2.10")));
  EXPECT_EQ(seen[1], *GratuitousArpReply(iface_.mac, Ip("192.0.2.10")));
}

TEST_F(PacketNetnsTest, UnsolicitedNaOverridesPeerNeighbourEntry) {
  InNetns(*a_, [&] {
    auto nl = netlink::NetlinkImpl::Create();
    ASSERT_TRUE(nl.has_value());
    ASSERT_TRUE((*nl)->AddAddress(
        netlink::VipAddressSpec(iface_.ifindex, test_support::Pfx("2001:db8::10/64"),
                                std::chrono::seconds(300), std::nullopt)));
  });
  ExpectAnnouncementOverridesPeerEntry("2001:db8::10");
}

TEST_F(PacketNetnsTest, ProbesFindTheOwnerAndOnlyTheOwner) {
  InNetns(*a_, [&] {
    AnnouncerImpl announcer(clock_);
    struct Row {
      const char* address;
      bool owned_by_b;
    };
    for (const Row& r : std::vector<Row>{{"192.0.2.2", true},
                                         {"192.0.2.77", false},
                                         {"2001:db8::2", true},
                                         {"2001:db8::77", false}}) {
      auto owner = announcer.ProbeOwner(iface_, Ip(r.address),
                                        std::chrono::milliseconds(r.owned_by_b ? 2000 : 300));
      ASSERT_TRUE(owner.has_value()) << r.address << ": " << owner.error().message();
      if (r.owned_by_b) {
        ASSERT_TRUE(owner->has_value()) << r.address << ": nobody answered";
        EXPECT_EQ(**owner, b_mac_) << r.address;
      } else {
        EXPECT_FALSE(owner->has_value()) << r.address << " answered by " << (*owner)->ToString();
      }
    }
  });
}

TEST_F(PacketNetnsTest, ProbeBurstIgnoresKnownMacsAndFindsForeignOnes) {
  // B holds a /128 VIP added like the agent adds one (nodad, valid lifetime): the kernel answers
  // DAD for it as for any address. Rows: B as a foreign host, then B as a cluster member whose
  // MAC is known (a SIGKILLed holder): the same answer must not count.
  ASSERT_EQ(b_->Ip("addr add 192.0.2.50/24 dev b0"), 0);
  ASSERT_EQ(b_->Ip("addr add 2001:db8::50/128 dev b0 nodad"), 0);
  InNetns(*a_, [&] {
    AnnouncerImpl announcer(clock_);
    struct Row {
      const char* address;
      bool b_known;
      bool expect_owner;
    };
    for (const Row& r : std::vector<Row>{{"192.0.2.50", false, true},
                                         {"2001:db8::50", false, true},
                                         {"192.0.2.50", true, false},
                                         {"2001:db8::50", true, false},
                                         {"192.0.2.51", false, false},
                                         {"2001:db8::51", false, false}}) {
      SCOPED_TRACE(std::string(r.address) + (r.b_known ? " (B known)" : ""));
      ProbeOptions o;  // 3 x 80 ms
      if (r.b_known) o.ignore.push_back(b_mac_);
      auto owner = announcer.Probe(iface_, Ip(r.address), o);
      ASSERT_TRUE(owner.has_value()) << owner.error().message();
      EXPECT_EQ(owner->has_value(), r.expect_owner);
      if (r.expect_owner && owner->has_value()) {
        EXPECT_EQ(**owner, b_mac_);
      }
    }
  });
}

TEST_F(PacketNetnsTest, ClaimListenerSeesAnotherHostAnnouncingAndUsingAnAddress) {
  // A watches; B announces 192.0.2.60 (GARP) and 2001:db8::60 (unsolicited NA from B).
  std::optional<ClaimListener> listener;
  InNetns(*a_, [&] {
    auto l = ClaimListener::Open(iface_.ifindex);
    ASSERT_TRUE(l.has_value()) << l.error().message();
    listener.emplace(std::move(*l));
  });
  ASSERT_TRUE(listener.has_value());
  ASSERT_EQ(b_->Ip("addr add 2001:db8::60/128 dev b0 nodad"), 0);
  InNetns(*b_, [&] {
    AnnouncerImpl announcer(clock_);
    Interface b{static_cast<int>(::if_nametoindex("b0")), b_mac_};
    ASSERT_TRUE(announcer.Announce(b, Ip("192.0.2.60")).has_value());
    ASSERT_TRUE(announcer.Announce(b, Ip("2001:db8::60")).has_value());
  });
  std::vector<Claim> seen;
  const auto deadline = clock_.Now() + std::chrono::seconds(2);
  auto has = [&](const char* ip) {
    return std::any_of(seen.begin(), seen.end(),
                       [&](const Claim& c) { return c.address == Ip(ip) && c.mac == b_mac_; });
  };
  while (clock_.Now() < deadline && !(has("192.0.2.60") && has("2001:db8::60"))) {
    auto claims = listener->Poll(clock_, deadline);
    ASSERT_TRUE(claims.has_value()) << claims.error().message();
    seen.insert(seen.end(), claims->begin(), claims->end());
  }
  EXPECT_TRUE(has("192.0.2.60"));
  EXPECT_TRUE(has("2001:db8::60"));
  for (const auto& c : seen) EXPECT_NE(c.mac, iface_.mac);  // never our own transmissions
}

TEST_F(PacketNetnsTest, ReceiverTimesOutWithoutTraffic) {
  InNetns(*a_, [&] {
    auto sock = PacketSocket::Open(iface_.ifindex, 0x88b5);  // IEEE local experimental EtherType
    ASSERT_TRUE(sock.has_value()) << sock.error().message();
    auto frame = sock->Receive(clock_, clock_.Now() + std::chrono::milliseconds(50));
    ASSERT_TRUE(frame.has_value());
    EXPECT_FALSE(frame->has_value());
  });
}

}  // namespace
}  // namespace pylon::packet
