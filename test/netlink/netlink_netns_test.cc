// NetlinkImpl against the real kernel, inside throw-away network namespaces (LABELS root).
// Topology: namespace A and namespace B joined by two veth pairs, a0<->b0 and a1<->b1.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "netlink/netlink_impl.h"
#include "netlink/ops.h"
#include "netlink/select.h"
#include "netns_helper.h"
#include "support/net.h"

namespace pylon::netlink {
namespace {

using pylon::testing::Eventually;
using pylon::testing::InNetns;
using std::chrono::seconds;

using test_support::Pfx;

// The kernel's dumps through the pure selection (select.h), as the agent's network view does.
Result<DefaultRoute> KernelDefaultRoute(Netlink& nl, net::Family family) {
  auto routes = nl.ListRoutes(family);
  if (!routes) return tl::unexpected(routes.error());
  return SelectDefaultRoute(*routes, family);
}
std::vector<net::Prefix> Subnets(Netlink& nl, int ifindex, net::Family family) {
  auto addrs = nl.ListAddresses(family);
  auto routes = nl.ListRoutes(family);
  EXPECT_TRUE(addrs && routes);
  if (!addrs || !routes) return {};
  return InterfaceSubnets(*addrs, *routes, ifindex, family, kPylonAddressProto);
}

class NetlinkNetnsTest : public pylon::testing::TwoNetnsTest {
 protected:
  NetlinkNetnsTest() : TwoNetnsTest("pylon-nl", 2) {}

  // `ip -j addr show dev <dev>` in A: the addr_info entry for `local`, or null.
  nlohmann::json IpAddrEntry(const std::string& dev, const std::string& local) {
    auto j = nlohmann::json::parse(a_->IpOut("-j addr show dev " + dev), nullptr, false);
    if (j.is_discarded() || j.empty()) return nullptr;
    for (const auto& e : j[0]["addr_info"]) {
      if (e.value("local", "") == local) return e;
    }
    return nullptr;
  }

  std::unique_ptr<NetlinkImpl> Open() {
    auto nl = NetlinkImpl::Create();
    EXPECT_TRUE(nl.has_value()) << nl.error().message();
    return nl ? std::move(*nl) : nullptr;
  }
};

TEST_F(NetlinkNetnsTest, AddRenewRemoveAddresses) {
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    auto a0 = nl->GetLink("a0");
    ASSERT_TRUE(a0.has_value()) << a0.error().message();
    EXPECT_EQ(a0->kind, "veth");
    EXPECT_EQ(a0->hwaddr.size(), 6u);
    EXPECT_EQ(nl->GetLink("nope0").error().code(), ErrorCode::kNotFound);

    AddressSpec primary;
    primary.ifindex = a0->index;
    primary.address = Pfx("192.0.2.1/24");
    ASSERT_TRUE(nl->AddAddress(primary));
    const auto proto =
        nl->SupportsAddressProto() ? std::optional(kPylonAddressProto) : std::nullopt;
    ASSERT_TRUE(
        nl->AddAddress(VipAddressSpec(a0->index, Pfx("192.0.2.10/24"), seconds(300), proto)));
    ASSERT_TRUE(
        nl->AddAddress(VipAddressSpec(a0->index, Pfx("2001:db8::10/64"), seconds(300), proto)));

    // What `ip` sees.
    auto v4 = IpAddrEntry("a0", "192.0.2.10");
    ASSERT_FALSE(v4.is_null());
    EXPECT_EQ(v4.value("prefixlen", 0), 24);
    EXPECT_TRUE(v4.value("secondary", false));
    EXPECT_GT(v4.value("valid_life_time", 0u), 0u);
    EXPECT_LE(v4.value("valid_life_time", 0u), 300u);
    auto v6 = IpAddrEntry("a0", "2001:db8::10");
    ASSERT_FALSE(v6.is_null());
    EXPECT_TRUE(v6.value("nodad", false));
    EXPECT_FALSE(v6.value("tentative", false));
    EXPECT_TRUE(v6.value("deprecated", false));
    EXPECT_EQ(v6.value("preferred_life_time", 99u), 0u);
    EXPECT_LE(v6.value("valid_life_time", 0u), 300u);

    // What our own dump sees, including IFA_PROTO on 6.1+.
    auto all = nl->ListAddresses(std::nullopt);
    ASSERT_TRUE(all.has_value());
    int tagged = 0;
    for (const AddressInfo& a : *all) {
      if (a.ifindex != a0->index) continue;
      if (a.prefix == Pfx("2001:db8::10/64")) {
        EXPECT_TRUE(a.has_flag(addr_flags::kNoDad));
        EXPECT_EQ(a.lifetimes.preferred, seconds(0));
      }
      if (a.proto == kPylonAddressProto) ++tagged;
    }
    EXPECT_EQ(tagged, nl->SupportsAddressProto() ? 2 : 0);
    EXPECT_EQ(Subnets(*nl, a0->index, net::Family::kV4),
              std::vector<net::Prefix>{Pfx("192.0.2.0/24")});

    // Exclusive add of a present address: EEXIST with context.
    auto dup = nl->AddAddress(VipAddressSpec(a0->index, Pfx("192.0.2.10/24"), seconds(300), proto));
    ASSERT_FALSE(dup.has_value());
    EXPECT_EQ(dup.error().code(), ErrorCode::kAlreadyExists);
    EXPECT_EQ(dup.error().sys_errno(), EEXIST);
    EXPECT_NE(dup.error().message().find("192.0.2.10/24"), std::string::npos);
    // NODAD on IPv4 never reaches the kernel.
    auto bad = VipAddressSpec(a0->index, Pfx("192.0.2.11/24"), seconds(300), proto);
    bad.dad = Dad::kSkip;
    EXPECT_EQ(nl->AddAddress(bad).error().code(), ErrorCode::kInvalidArgument);

    // Renewal with a longer lifetime is visible.
    auto renew = VipAddressSpec(a0->index, Pfx("192.0.2.10/24"), seconds(600), proto);
    renew.mode = AddMode::kReplace;
    ASSERT_TRUE(nl->AddAddress(renew));
    EXPECT_GT(IpAddrEntry("a0", "192.0.2.10").value("valid_life_time", 0u), 300u);

    // Removal: exact prefix length on the given interface only.
    auto a1 = nl->GetLink("a1");
    ASSERT_TRUE(a1.has_value());
    EXPECT_EQ(nl->RemoveAddress(a1->index, Pfx("192.0.2.10/24")).error().code(),
              ErrorCode::kNotFound);
    ASSERT_TRUE(nl->RemoveAddress(a0->index, Pfx("192.0.2.10/24")));
    ASSERT_TRUE(nl->RemoveAddress(a0->index, Pfx("2001:db8::10/64")));
    EXPECT_TRUE(IpAddrEntry("a0", "192.0.2.10").is_null());
    EXPECT_TRUE(IpAddrEntry("a0", "2001:db8::10").is_null());
    EXPECT_FALSE(IpAddrEntry("a0", "192.0.2.1").is_null());
    EXPECT_EQ(nl->RemoveAddress(a0->index, Pfx("192.0.2.10/24")).error().code(),
              ErrorCode::kNotFound);
  });
}

TEST_F(NetlinkNetnsTest, DefaultInterfaceByMetricAndEcmp) {
  ASSERT_EQ(a_->Ip("addr add 192.0.2.1/24 dev a0"), 0);
  ASSERT_EQ(a_->Ip("addr add 198.51.100.1/24 dev a1"), 0);
  ASSERT_EQ(a_->Ip("addr add 2001:db8:1::1/64 dev a0 nodad"), 0);
  ASSERT_EQ(a_->Ip("addr add 2001:db8:2::1/64 dev a1 nodad"), 0);
  ASSERT_EQ(a_->Ip("route add default via 192.0.2.2 dev a0 metric 200"), 0);
  ASSERT_EQ(a_->Ip("route add default via 198.51.100.2 dev a1 metric 100"), 0);
  ASSERT_EQ(a_->Ip("-6 route add default via 2001:db8:1::2 dev a0 metric 300"), 0);
  ASSERT_EQ(a_->Ip("-6 route add default via 2001:db8:2::2 dev a1 metric 100"), 0);
  // A lower-metric default in another table must not count.
  ASSERT_EQ(a_->Ip("route add default via 192.0.2.2 dev a0 metric 1 table 100"), 0);
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    const int a1 = nl->GetLink("a1")->index;
    for (auto family : {net::Family::kV4, net::Family::kV6}) {
      auto d = KernelDefaultRoute(*nl, family);
      ASSERT_TRUE(d.has_value()) << d.error().message();
      EXPECT_EQ(d->metric, 100u);
      EXPECT_EQ(d->ifindexes, std::vector<int>{a1});
    }
  });
  ASSERT_EQ(a_->Ip("route add default metric 50 nexthop via 192.0.2.2 dev a0 nexthop via "
                   "198.51.100.2 dev a1"),
            0);
  ASSERT_EQ(a_->Ip("-6 route add default metric 50 nexthop via 2001:db8:1::2 dev a0 nexthop via "
                   "2001:db8:2::2 dev a1"),
            0);
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    const int a0 = nl->GetLink("a0")->index;
    const int a1 = nl->GetLink("a1")->index;
    for (auto family : {net::Family::kV4, net::Family::kV6}) {
      auto d = KernelDefaultRoute(*nl, family);
      ASSERT_TRUE(d.has_value()) << d.error().message();
      EXPECT_EQ(d->metric, 50u) << net::FamilyName(family);
      EXPECT_EQ(d->ifindexes, (std::vector<int>{a0, a1})) << net::FamilyName(family);
    }
  });
  // Carrier loss on a1 (its peer goes down) marks that next hop linkdown: only a0 remains.
  ASSERT_EQ(b_->Ip("link set b1 down"), 0);
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    const int a0 = nl->GetLink("a0")->index;
    EXPECT_TRUE(Eventually([&] {
      auto d = KernelDefaultRoute(*nl, net::Family::kV4);
      return d && d->metric == 50u && d->ifindexes == std::vector<int>{a0};
    }));
  });
}

TEST_F(NetlinkNetnsTest, Ipv6HostAddressMatchedToRaPrefix) {
  ASSERT_EQ(a_->Ip("addr add 2001:db8:5::5/128 dev a0 nodad"), 0);
  ASSERT_EQ(a_->Ip("-6 route add 2001:db8:5::/64 dev a0 proto ra"), 0);
  ASSERT_EQ(a_->Ip("addr add 2001:db8:6::6/128 dev a0 nodad"), 0);  // no on-link route
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    const int a0 = nl->GetLink("a0")->index;
    // fe80::/64 (link-local) and the /128 without an on-link route are not subnets.
    EXPECT_EQ(Subnets(*nl, a0, net::Family::kV6), std::vector<net::Prefix>{Pfx("2001:db8:5::/64")});
  });
}

TEST_F(NetlinkNetnsTest, KubeLb0FallsBackToBridgeAndAddressesAreLocal) {
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    // This kernel has no dummy driver: the raw create says so with the kernel's own words.
    auto dummy = nl->CreateLink("probe-dummy0", "dummy");
    if (dummy) {
      GTEST_SKIP() << "this kernel has the dummy driver; fallback not exercised";
    }
    EXPECT_EQ(dummy.error().code(), ErrorCode::kUnsupported);
    EXPECT_EQ(dummy.error().sys_errno(), EOPNOTSUPP);
    EXPECT_NE(dummy.error().message().find("Unknown device type"), std::string::npos)
        << dummy.error().message();

    auto v = EnsureVirtualLink(*nl);
    ASSERT_TRUE(v.has_value()) << v.error().message();
    EXPECT_EQ(v->kind, VirtualLinkKind::kBridge);
    EXPECT_TRUE(v->created);
    EXPECT_NE(v->note.find("Unknown device type"), std::string::npos) << v->note;
    EXPECT_EQ(v->link.kind, "bridge");
    EXPECT_TRUE(v->link.admin_up());
    const auto proto =
        nl->SupportsAddressProto() ? std::optional(kPylonAddressProto) : std::nullopt;
    ASSERT_TRUE(
        nl->AddAddress(VipAddressSpec(v->link.index, Pfx("203.0.113.5/32"), kForever, proto)));
    ASSERT_TRUE(
        nl->AddAddress(VipAddressSpec(v->link.index, Pfx("2001:db8:ff::5/128"), kForever, proto)));
    auto again = EnsureVirtualLink(*nl);
    ASSERT_TRUE(again.has_value());
    EXPECT_FALSE(again->created);
    EXPECT_EQ(again->link.index, v->link.index);
    auto exists = nl->CreateLink("kube-lb0", "bridge");
    ASSERT_FALSE(exists.has_value());
    EXPECT_EQ(exists.error().code(), ErrorCode::kAlreadyExists);
  });
  // Usable: both addresses are in the local table and answer locally; IPv6 is not tentative.
  EXPECT_NE(a_->IpOut("route show table local").find("local 203.0.113.5 dev kube-lb0"),
            std::string::npos);
  EXPECT_NE(a_->IpOut("-6 route show table local").find("local 2001:db8:ff::5 dev kube-lb0"),
            std::string::npos);
  EXPECT_EQ(IpAddrEntry("kube-lb0", "2001:db8:ff::5").value("tentative", false), false);
  EXPECT_EQ(a_->Exec("ping -c1 -W2 203.0.113.5"), 0);
  EXPECT_EQ(a_->Exec("ping -6 -c1 -W2 2001:db8:ff::5"), 0);
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    auto link = nl->GetLink("kube-lb0");
    ASSERT_TRUE(link.has_value());
    ASSERT_TRUE(nl->DeleteLink(link->index));
    EXPECT_EQ(nl->GetLink("kube-lb0").error().code(), ErrorCode::kNotFound);
  });
}

TEST_F(NetlinkNetnsTest, LinkDownAndAddressNotifications) {
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    const int a0 = nl->GetLink("a0")->index;
    auto sub = nl->Subscribe();
    ASSERT_TRUE(sub.has_value()) << sub.error().message();
    ASSERT_GE((*sub)->fd(), 0);

    // Cable pull: the peer goes down, a0 stays admin up but loses carrier.
    ASSERT_EQ(b_->Ip("link set b0 down"), 0);
    bool saw_down = false;
    EXPECT_TRUE(Eventually([&] {
      auto events = (*sub)->Poll(std::chrono::milliseconds(100));
      if (!events) return false;
      for (const Event& e : *events) {
        const auto* le = std::get_if<LinkEvent>(&e);
        if (le && le->link.index == a0 && le->link.admin_up() && !le->link.lower_up()) {
          saw_down = true;
        }
      }
      return saw_down;
    }));

    // Someone else adds and removes an address: both are seen at once.
    ASSERT_EQ(a_->Ip("addr add 192.0.2.99/24 dev a0"), 0);
    ASSERT_EQ(a_->Ip("addr del 192.0.2.99/24 dev a0"), 0);
    bool added = false, deleted = false;
    EXPECT_TRUE(Eventually([&] {
      auto events = (*sub)->Poll(std::chrono::milliseconds(100));
      if (!events) return false;
      for (const Event& e : *events) {
        const auto* ae = std::get_if<AddressEvent>(&e);
        if (ae && ae->address.prefix == Pfx("192.0.2.99/24")) {
          (ae->kind == ChangeKind::kNew ? added : deleted) = true;
        }
      }
      return added && deleted;
    }));
    // Carrier back.
    ASSERT_EQ(b_->Ip("link set b0 up"), 0);
    EXPECT_TRUE(Eventually([&] {
      auto events = (*sub)->Poll(std::chrono::milliseconds(100));
      if (!events) return false;
      for (const Event& e : *events) {
        const auto* le = std::get_if<LinkEvent>(&e);
        if (le && le->link.index == a0 && le->link.lower_up()) return true;
      }
      return false;
    }));
  });
}

TEST_F(NetlinkNetnsTest, SysctlsAreReadAndWrittenInTheNamespace) {
  InNetns(*a_, [&] {
    auto nl = Open();
    ASSERT_NE(nl, nullptr);
    EXPECT_EQ(*nl->ReadSysctl(ArpIgnore("a0")), "0");
    ASSERT_TRUE(nl->WriteSysctl(ArpIgnore("a0"), "1"));
    ASSERT_TRUE(nl->WriteSysctl(ArpAnnounce("a0"), "2"));
    EXPECT_EQ(*nl->ReadSysctl(ArpIgnore("a0")), "1");
    EXPECT_EQ(*nl->ReadSysctl(ArpAnnounce("a0")), "2");
    ASSERT_TRUE(nl->WriteSysctl(PromoteSecondaries("a0"), "1"));
    EXPECT_EQ(nl->ReadSysctl(ArpIgnore("nope0")).error().code(), ErrorCode::kNotFound);
  });
  EXPECT_EQ(pylon::testing::ShOut("ip netns exec " + a_->name() +
                                  " cat /proc/sys/net/ipv4/conf/a0/arp_ignore"),
            "1\n");
  EXPECT_EQ(pylon::testing::ShOut("ip netns exec " + b_->name() +
                                  " cat /proc/sys/net/ipv4/conf/b0/arp_ignore"),
            "0\n");
}

}  // namespace
}  // namespace pylon::netlink
