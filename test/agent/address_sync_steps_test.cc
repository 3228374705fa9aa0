// The pure steps of AddressSync::Apply (src/agent/address_sync.h): which present addresses are
// ours, which secondaries a primary takes along, when a desired address is someone else's, and
// the spec an address is added with. Apply itself is tested over the fake netlink in
// reconciler_test.cc and in a namespace in address_sync_netns_test.cc.
#include <gtest/gtest.h>

#include "agent/address_sync.h"

namespace pylon::agent {
namespace {

net::Prefix P(const char* text) { return *net::Prefix::Parse(text); }

netlink::AddressInfo Addr(int ifindex, const char* prefix, std::uint32_t flags = 0,
                          std::optional<std::uint8_t> proto = std::nullopt) {
  netlink::AddressInfo a;
  a.ifindex = ifindex;
  a.prefix = P(prefix);
  a.flags = flags;
  a.proto = proto;
  return a;
}

PresentAddress Present(const char* interface, int ifindex, const char* prefix, bool ours,
                       bool secondary = false) {
  const bool v4 = P(prefix).family() == net::Family::kV4;
  return PresentAddress{OwnedAddress{interface, P(prefix)}, ifindex, ours, v4 && secondary,
                        v4 && !secondary};
}

TEST(ClassifyPresentTest, OursByTagOrRecordOnKnownLinksOnly) {
  const std::map<int, std::string> links = {{2, "eth0"}, {3, "kube-lb0"}};
  const std::set<OwnedAddress> owned = {{"eth0", P("192.0.2.51/24")}};
  const auto present = ClassifyPresent(
      {Addr(2, "192.0.2.10/24"),
       Addr(2, "192.0.2.50/24", netlink::addr_flags::kSecondary, netlink::kPylonAddressProto),
       Addr(2, "192.0.2.51/24", netlink::addr_flags::kSecondary), Addr(3, "2001:db8::5/128"),
       Addr(9, "198.51.100.1/24", 0, netlink::kPylonAddressProto)},
      links, owned);
  ASSERT_EQ(present.size(), 4u);  // ifindex 9 is on no listed link
  EXPECT_EQ(present[0].key, (OwnedAddress{"eth0", P("192.0.2.10/24")}));
  EXPECT_FALSE(present[0].ours);
  EXPECT_TRUE(present[0].primary_v4);
  EXPECT_TRUE(present[1].ours);  // tagged
  EXPECT_TRUE(present[1].secondary_v4);
  EXPECT_FALSE(present[1].primary_v4);
  EXPECT_TRUE(present[2].ours);  // recorded
  EXPECT_EQ(present[3].key.interface, "kube-lb0");
  EXPECT_FALSE(present[3].primary_v4);  // IPv6: neither primary nor secondary
  EXPECT_FALSE(present[3].secondary_v4);
}

TEST(SecondariesOfTest, SameLinkSameLengthInsideTheSubnetNotGone) {
  const std::vector<PresentAddress> present = {
      Present("eth0", 2, "192.0.2.50/24", true),          // the primary
      Present("eth0", 2, "192.0.2.51/24", true, true),    // goes with it
      Present("eth0", 2, "192.0.2.52/24", false, true),   // goes with it (not ours)
      Present("eth0", 2, "192.0.2.53/25", true, true),    // another length
      Present("eth1", 3, "192.0.2.54/24", true, true),    // another link
      Present("eth0", 2, "198.51.100.5/24", true, true),  // another subnet
      Present("eth0", 2, "192.0.2.55/24", true, true),    // already removed
  };
  const std::set<OwnedAddress> gone = {{"eth0", P("192.0.2.55/24")}};
  std::vector<std::string> along;
  for (const auto* p : SecondariesOf(present, present[0], gone)) {
    along.push_back(p->key.address.ToString());
  }
  EXPECT_EQ(along, (std::vector<std::string>{"192.0.2.51/24", "192.0.2.52/24"}));
}

TEST(ConflictForTest, Table) {
  const OwnedAddress want{"eth0", P("192.0.2.50/24")};
  const PresentAddress ours_same = Present("eth0", 2, "192.0.2.50/24", true);
  const PresentAddress foreign_same = Present("eth0", 2, "192.0.2.50/24", false);
  const PresentAddress foreign_elsewhere = Present("eth1", 3, "192.0.2.50/32", false);
  const PresentAddress ours_elsewhere = Present("eth1", 3, "192.0.2.50/32", true);
  struct Case {
    const char* name;
    std::vector<const PresentAddress*> same_ip;
    std::string conflict;
  };
  const Case cases[] = {
      {"absent", {}, ""},
      {"present and ours: renew", {&ours_same}, ""},
      {"present, not ours",
       {&foreign_same},
       "192.0.2.50 is already on eth0 and was not added by this agent"},
      {"someone else's elsewhere",
       {&foreign_elsewhere},
       "192.0.2.50 is held by someone else on eth1 (192.0.2.50/32)"},
      {"ours elsewhere is no conflict", {&ours_elsewhere}, ""},
      {"ours here wins over someone else's elsewhere", {&foreign_elsewhere, &ours_same}, ""},
  };
  for (const auto& c : cases) EXPECT_EQ(ConflictFor(want, c.same_ip), c.conflict) << c.name;
}

TEST(DesiredAddressSpecTest, PolicyLifetimesAndPrefixRoute) {
  DesiredAddress d{P("192.0.2.50/24"), "eth0", 2, AddressKind::kLocal, {}, false, ""};
  AddressPolicy policy{netlink::Seconds{30}, netlink::Seconds{60}, netlink::PrefixRoute::kSuppress,
                       std::chrono::seconds(10)};
  auto spec = DesiredAddressSpec(d, policy, netlink::kPylonAddressProto);
  EXPECT_EQ(spec.ifindex, 2);
  EXPECT_EQ(spec.address, d.address);
  EXPECT_EQ(spec.lifetimes.valid, netlink::Seconds{30});
  EXPECT_EQ(spec.lifetimes.preferred, netlink::Seconds{30});  // clamped to the valid lifetime
  EXPECT_EQ(spec.prefix_route, netlink::PrefixRoute::kSuppress);
  EXPECT_EQ(spec.proto, std::optional<std::uint8_t>(netlink::kPylonAddressProto));
  EXPECT_EQ(spec.mode, netlink::AddMode::kCreateExclusive);

  policy.preferred_lifetime = netlink::Seconds{10};
  EXPECT_EQ(DesiredAddressSpec(d, policy, std::nullopt).lifetimes.preferred, netlink::Seconds{10});

  // IPv6 never takes the preferred lifetime of the policy: 0, never a source address.
  d.address = P("2001:db8::50/64");
  const auto v6 = DesiredAddressSpec(d, policy, std::nullopt);
  EXPECT_EQ(v6.lifetimes.preferred, netlink::Seconds{0});
  EXPECT_EQ(v6, netlink::VipAddressSpec(2, d.address, netlink::Seconds{30}, std::nullopt,
                                        netlink::PrefixRoute::kSuppress));
}

}  // namespace
}  // namespace pylon::agent
