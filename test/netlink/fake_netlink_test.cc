// FakeNetlink semantics, and EnsureVirtualLink (ops.h) run over it.
#include "support/netlink/fake_netlink.h"

#include <linux/if.h>

#include <gtest/gtest.h>

#include "netlink/ops.h"
#include "netlink/select.h"
#include "support/net.h"

namespace pylon::netlink {
namespace {

using std::chrono::seconds;

using test_support::Ip;
using test_support::Pfx;

class FakeNetlinkTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  FakeNetlink nl_{clock_};
  int eth0_ = nl_.AddTestLink("eth0");
  int eth1_ = nl_.AddTestLink("eth1");

  const AddressInfo* Find(const std::vector<AddressInfo>& v, const char* prefix) {
    for (const auto& a : v) {
      if (a.prefix == Pfx(prefix)) return &a;
    }
    return nullptr;
  }
  std::vector<AddressInfo> On(int ifindex) {
    std::vector<AddressInfo> out;
    auto all = nl_.ListAddresses(std::nullopt);
    for (AddressInfo& a : *all) {
      if (a.ifindex == ifindex) out.push_back(std::move(a));
    }
    return out;
  }
  AddressSpec Plain(int ifindex, const char* prefix) {
    AddressSpec s;
    s.ifindex = ifindex;
    s.address = Pfx(prefix);
    return s;
  }
};

TEST_F(FakeNetlinkTest, VipLifetimesCountDownRenewAndExpire) {
  auto sub = nl_.Subscribe();
  ASSERT_TRUE(sub.has_value());
  ASSERT_TRUE(nl_.AddAddress(
      VipAddressSpec(eth0_, Pfx("2001:db8::10/64"), seconds(300), kPylonAddressProto)));
  clock_.Advance(seconds(100));
  auto addrs = On(eth0_);
  ASSERT_EQ(addrs.size(), 1u);
  EXPECT_EQ(addrs[0].lifetimes.valid, seconds(200));
  EXPECT_EQ(addrs[0].lifetimes.preferred, seconds(0));
  EXPECT_TRUE(addrs[0].has_flag(addr_flags::kNoDad));
  EXPECT_TRUE(addrs[0].has_flag(addr_flags::kDeprecated));  // preferred_lft 0: never a source
  EXPECT_EQ(addrs[0].proto, kPylonAddressProto);

  // Exclusive add of the same address fails; renewal (kReplace) resets the valid lifetime.
  auto dup =
      nl_.AddAddress(VipAddressSpec(eth0_, Pfx("2001:db8::10/64"), seconds(300), std::nullopt));
  ASSERT_FALSE(dup.has_value());
  EXPECT_EQ(dup.error().code(), ErrorCode::kAlreadyExists);
  auto renew = VipAddressSpec(eth0_, Pfx("2001:db8::10/64"), seconds(300), kPylonAddressProto);
  renew.mode = AddMode::kReplace;
  ASSERT_TRUE(nl_.AddAddress(renew));
  clock_.Advance(seconds(299));
  ASSERT_EQ(On(eth0_).size(), 1u);
  EXPECT_EQ(On(eth0_)[0].lifetimes.valid, seconds(1));
  // The agent died: nobody renews; the address disappears by itself.
  clock_.Advance(seconds(1));
  EXPECT_TRUE(On(eth0_).empty());
  auto events = (*sub)->Poll(std::chrono::milliseconds(0));
  ASSERT_TRUE(events.has_value());
  ASSERT_EQ(events->size(), 3u);  // added, renewed, expired
  const auto* last = std::get_if<AddressEvent>(&events->back());
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->kind, ChangeKind::kDeleted);
}

TEST_F(FakeNetlinkTest, Ipv4SecondaryAndPromotion) {
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.151/24")));
  ASSERT_TRUE(
      nl_.AddAddress(VipAddressSpec(eth0_, Pfx("192.0.2.226/24"), seconds(300), std::nullopt)));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.227/24")));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.228/32")));  // other prefix length: primary
  auto addrs = On(eth0_);
  ASSERT_EQ(addrs.size(), 4u);
  EXPECT_FALSE(Find(addrs, "192.0.2.151/24")->has_flag(addr_flags::kSecondary));
  EXPECT_TRUE(Find(addrs, "192.0.2.226/24")->has_flag(addr_flags::kSecondary));
  EXPECT_FALSE(Find(addrs, "192.0.2.228/32")->has_flag(addr_flags::kSecondary));
  EXPECT_TRUE(Find(addrs, "192.0.2.151/24")->has_flag(addr_flags::kPermanent));
  EXPECT_EQ(Find(addrs, "192.0.2.226/24")->lifetimes.preferred, seconds(300));

  // Without promote_secondaries, deleting the primary takes the secondaries with it.
  ASSERT_TRUE(nl_.RemoveAddress(eth0_, Pfx("192.0.2.151/24")));
  EXPECT_EQ(On(eth0_).size(), 1u);

  ASSERT_TRUE(nl_.WriteSysctl(PromoteSecondaries("eth0"), "1"));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.151/24")));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.226/24")));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.227/24")));
  ASSERT_TRUE(nl_.RemoveAddress(eth0_, Pfx("192.0.2.151/24")));
  addrs = On(eth0_);
  ASSERT_EQ(addrs.size(), 3u);
  EXPECT_FALSE(Find(addrs, "192.0.2.226/24")->has_flag(addr_flags::kSecondary));  // promoted
  EXPECT_TRUE(Find(addrs, "192.0.2.227/24")->has_flag(addr_flags::kSecondary));
}

TEST_F(FakeNetlinkTest, RemoveOnlyTouchesTheGivenInterfaceAndPrefixLength) {
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "192.0.2.10/24")));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth1_, "192.0.2.10/24")));
  auto wrong_len = nl_.RemoveAddress(eth0_, Pfx("192.0.2.10/32"));
  ASSERT_FALSE(wrong_len.has_value());
  EXPECT_EQ(wrong_len.error().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(nl_.RemoveAddress(eth1_, Pfx("192.0.2.10/24")));
  EXPECT_EQ(On(eth0_).size(), 1u);
  EXPECT_TRUE(On(eth1_).empty());
  EXPECT_EQ(nl_.RemoveAddress(eth1_, Pfx("192.0.2.10/24")).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(nl_.AddAddress(Plain(99, "192.0.2.11/24")).error().code(), ErrorCode::kNotFound);
}

TEST_F(FakeNetlinkTest, DadFailureUnlessNodad) {
  nl_.InjectDadFailure(Ip("2001:db8::20"));
  ASSERT_TRUE(nl_.AddAddress(Plain(eth0_, "2001:db8::20/64")));
  auto a = On(eth0_);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].has_flag(addr_flags::kDadFailed));
  // kube-vip's remedy: delete and re-add with NODAD.
  ASSERT_TRUE(nl_.RemoveAddress(eth0_, Pfx("2001:db8::20/64")));
  nl_.InjectDadFailure(Ip("2001:db8::20"));
  ASSERT_TRUE(
      nl_.AddAddress(VipAddressSpec(eth0_, Pfx("2001:db8::20/64"), seconds(300), std::nullopt)));
  EXPECT_FALSE(On(eth0_)[0].has_flag(addr_flags::kDadFailed));
}

TEST_F(FakeNetlinkTest, ProtoDroppedWithoutKernelSupport) {
  nl_.SetSupportsAddressProto(false);
  EXPECT_FALSE(nl_.SupportsAddressProto());
  ASSERT_TRUE(nl_.AddAddress(
      VipAddressSpec(eth0_, Pfx("192.0.2.50/24"), seconds(300), kPylonAddressProto)));
  EXPECT_FALSE(On(eth0_)[0].proto.has_value());
}

TEST_F(FakeNetlinkTest, VirtualLinkFallsBackToBridge) {
  auto sub = *nl_.Subscribe();
  auto v = EnsureVirtualLink(nl_);
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_EQ(v->kind, VirtualLinkKind::kBridge);
  EXPECT_TRUE(v->created);
  EXPECT_NE(v->note.find("Unknown device type"), std::string::npos) << v->note;
  EXPECT_EQ(v->link.name, "kube-lb0");
  EXPECT_EQ(v->link.kind, "bridge");
  EXPECT_TRUE(v->link.admin_up());
  // Second call: reused, nothing created, nothing changed.
  const int before = nl_.mutation_count();
  auto again = EnsureVirtualLink(nl_);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->kind, VirtualLinkKind::kBridge);
  EXPECT_EQ(again->link.index, v->link.index);
  EXPECT_EQ(nl_.mutation_count(), before);
  EXPECT_FALSE(sub->Poll(std::chrono::milliseconds(0))->empty());
}

TEST_F(FakeNetlinkTest, VirtualLinkPrefersDummyAndReportsOtherErrors) {
  nl_.SetKindSupported("dummy", true);
  auto v = EnsureVirtualLink(nl_, "kube-lb0");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->kind, VirtualLinkKind::kDummy);
  EXPECT_TRUE(v->note.empty());

  FakeNetlink other(clock_);
  other.FailNext("CreateLink", Error(ErrorCode::kPermission, "EPERM"));
  auto denied = EnsureVirtualLink(other);
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code(), ErrorCode::kPermission);  // no fallback on other errors

  FakeNetlink third(clock_);
  third.SetKindSupported("bridge", false);
  auto neither = EnsureVirtualLink(third);
  ASSERT_FALSE(neither.has_value());
  EXPECT_EQ(neither.error().code(), ErrorCode::kUnsupported);
}

TEST_F(FakeNetlinkTest, DefaultInterfaceAndSubnets) {
  RouteInfo slow;
  slow.family = net::Family::kV4;
  slow.dst = Pfx("0.0.0.0/0");
  slow.table = kMainTable;
  slow.type = 1;
  slow.priority = 200;
  slow.nexthops = {{eth0_, Ip("192.0.2.1"), 0, 1}};
  RouteInfo fast = slow;
  fast.priority = 100;
  fast.nexthops = {{eth1_, Ip("198.51.100.1"), 0, 1}, {eth0_, Ip("192.0.2.1"), 0, 1}};
  nl_.AddTestRoute(slow);
  nl_.AddTestRoute(fast);
  // The fake's dumps feed the pure selection (select.h) as the agent's network view does.
  auto d = SelectDefaultRoute(*nl_.ListRoutes(net::Family::kV4), net::Family::kV4);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->metric, 100u);
  EXPECT_EQ(d->ifindexes, (std::vector<int>{eth1_, eth0_}));
  EXPECT_EQ(SelectDefaultRoute(*nl_.ListRoutes(net::Family::kV6), net::Family::kV6).error().code(),
            ErrorCode::kNotFound);

  ASSERT_TRUE(nl_.AddAddress(Plain(eth1_, "198.51.100.20/24")));
  ASSERT_TRUE(nl_.AddAddress(
      VipAddressSpec(eth1_, Pfx("198.51.100.99/24"), seconds(300), kPylonAddressProto)));
  auto subnets =
      InterfaceSubnets(*nl_.ListAddresses(net::Family::kV4), *nl_.ListRoutes(net::Family::kV4),
                       eth1_, net::Family::kV4, kPylonAddressProto);
  EXPECT_EQ(subnets, std::vector<net::Prefix>{Pfx("198.51.100.0/24")});
}

TEST_F(FakeNetlinkTest, CarrierLossIsNotified) {
  auto sub = *nl_.Subscribe();
  nl_.SetCarrier(eth0_, false);
  auto events = *sub->Poll(std::chrono::milliseconds(0));
  ASSERT_EQ(events.size(), 1u);
  const auto& le = std::get<LinkEvent>(events[0]);
  EXPECT_EQ(le.link.index, eth0_);
  EXPECT_TRUE(le.link.admin_up());
  EXPECT_FALSE(le.link.operational());
  EXPECT_TRUE(sub->Poll(std::chrono::milliseconds(0))->empty());
}

TEST_F(FakeNetlinkTest, SysctlsAndFailureInjection) {
  EXPECT_EQ(*nl_.ReadSysctl(ArpIgnore("eth0")), "0");
  ASSERT_TRUE(nl_.WriteSysctl(ArpIgnore("eth0"), "1"));
  ASSERT_TRUE(nl_.WriteSysctl(ArpAnnounce("eth0"), "2"));
  EXPECT_EQ(*nl_.ReadSysctl(ArpIgnore("eth0")), "1");
  EXPECT_EQ(*nl_.ReadSysctl(ArpAnnounce("eth0")), "2");
  EXPECT_EQ(*nl_.ReadSysctl(AcceptDad("eth1")), "1");
  EXPECT_EQ(nl_.ReadSysctl(ArpIgnore("nope0")).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(nl_.ReadSysctl(SysctlKey{net::Family::kV4, "..", "arp_ignore"}).error().code(),
            ErrorCode::kInvalidArgument);
  nl_.FailNext("ListAddresses", Error(ErrorCode::kUnavailable, "boom"));
  EXPECT_EQ(nl_.ListAddresses(std::nullopt).error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(nl_.ListAddresses(std::nullopt).has_value());  // one-shot
}

TEST(SysctlRelativePath, Table) {
  struct Row {
    SysctlKey key;
    const char* want;  // nullptr: rejected
  };
  for (const Row& r : std::vector<Row>{
           {ArpIgnore("eth0"), "net/ipv4/conf/eth0/arp_ignore"},
           {AcceptDad("all"), "net/ipv6/conf/all/accept_dad"},
           {PromoteSecondaries("eth0.100"), "net/ipv4/conf/eth0.100/promote_secondaries"},
           {{net::Family::kV4, "../../x", "arp_ignore"}, nullptr},
           {{net::Family::kV4, "eth0", "../arp"}, nullptr},
           {{net::Family::kV4, "", "arp_ignore"}, nullptr},
           {{net::Family::kV4, "averyveryverylongname", "arp_ignore"}, nullptr},
       }) {
    auto p = SysctlRelativePath(r.key);
    if (r.want == nullptr) {
      EXPECT_FALSE(p.has_value()) << r.key.interface << "/" << r.key.name;
    } else {
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(*p, r.want);
    }
  }
}

}  // namespace
}  // namespace pylon::netlink
