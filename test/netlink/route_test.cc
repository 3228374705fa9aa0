// Default-route selection and subnet derivation from crafted RTM_NEWROUTE / RTM_NEWADDR bytes.
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

#include <gtest/gtest.h>

#include "netlink/message.h"
#include "netlink/select.h"
#include "support/net.h"

namespace pylon::netlink {
namespace {

using test_support::Ip;
using test_support::Pfx;

void Append(Message& b, const void* p, std::size_t n) {
  const auto* c = static_cast<const std::uint8_t*>(p);
  b.insert(b.end(), c, c + n);
  while (b.size() % 4) b.push_back(0);
}
void Attr(Message& b, std::uint16_t type, const void* data, std::size_t len) {
  std::uint16_t hdr[2] = {static_cast<std::uint16_t>(4 + len), type};
  Append(b, hdr, 4);
  b.resize(b.size() - 0);
  const auto* c = static_cast<const std::uint8_t*>(data);
  b.insert(b.end(), c, c + len);
  while (b.size() % 4) b.push_back(0);
}
void AttrIp(Message& b, std::uint16_t type, const char* ip) {
  auto a = Ip(ip);
  auto bytes = a.bytes();
  Attr(b, type, bytes.data(), a.is_v4() ? 4 : 16);
}
void AttrU32(Message& b, std::uint16_t type, std::uint32_t v) { Attr(b, type, &v, 4); }

struct Hop {
  int ifindex;
  const char* gateway;  // nullptr: on-link
  std::uint8_t flags = 0;
};

struct RouteSpec {
  int af = AF_INET;
  const char* dst = nullptr;  // nullptr: default route
  std::uint8_t dst_len = 0;
  std::uint32_t table = RT_TABLE_MAIN;
  std::uint8_t type = RTN_UNICAST;
  std::uint8_t protocol = RTPROT_BOOT;
  std::optional<std::uint32_t> metric{};
  std::vector<Hop> hops{};  // one: RTA_OIF/RTA_GATEWAY; more: RTA_MULTIPATH
  bool table_attr = true;
};

// Builds RTM_NEWROUTE bytes the way the kernel dumps them (rtmsg + RTA_TABLE + ...).
Message RouteBytes(const RouteSpec& s) {
  Message b(16, 0);
  rtmsg rtm{};
  rtm.rtm_family = static_cast<unsigned char>(s.af);
  rtm.rtm_dst_len = s.dst_len;
  rtm.rtm_table = static_cast<unsigned char>(s.table < 256 ? s.table : RT_TABLE_UNSPEC);
  rtm.rtm_protocol = s.protocol;
  rtm.rtm_scope = RT_SCOPE_UNIVERSE;
  rtm.rtm_type = s.type;
  if (s.hops.size() == 1) rtm.rtm_flags = s.hops[0].flags;
  Append(b, &rtm, sizeof(rtm));
  if (s.table_attr) AttrU32(b, RTA_TABLE, s.table);
  if (s.dst) AttrIp(b, RTA_DST, s.dst);
  if (s.metric) AttrU32(b, RTA_PRIORITY, *s.metric);
  if (s.hops.size() == 1) {
    if (s.hops[0].gateway) AttrIp(b, RTA_GATEWAY, s.hops[0].gateway);
    AttrU32(b, RTA_OIF, static_cast<std::uint32_t>(s.hops[0].ifindex));
  } else if (!s.hops.empty()) {
    Message mp;
    for (const Hop& h : s.hops) {
      Message one(8, 0);
      if (h.gateway) AttrIp(one, RTA_GATEWAY, h.gateway);
      rtnexthop nh{};
      nh.rtnh_len = static_cast<unsigned short>(one.size());
      nh.rtnh_flags = h.flags;
      nh.rtnh_hops = 0;
      nh.rtnh_ifindex = h.ifindex;
      std::memcpy(one.data(), &nh, sizeof(nh));
      mp.insert(mp.end(), one.begin(), one.end());
    }
    Attr(b, RTA_MULTIPATH, mp.data(), mp.size());
  }
  std::uint32_t len = static_cast<std::uint32_t>(b.size());
  std::memcpy(b.data(), &len, 4);
  std::uint16_t type = RTM_NEWROUTE, flags = NLM_F_MULTI;
  std::memcpy(&b[4], &type, 2);
  std::memcpy(&b[6], &flags, 2);
  return b;
}

std::vector<RouteInfo> Parse(const std::vector<RouteSpec>& specs) {
  // Concatenate into one dump datagram, as the kernel sends them.
  Message all;
  for (const RouteSpec& s : specs) {
    Message m = RouteBytes(s);
    all.insert(all.end(), m.begin(), m.end());
  }
  auto views = SplitMessages(all);
  EXPECT_TRUE(views.has_value());
  std::vector<RouteInfo> out;
  for (const MessageView& v : *views) {
    auto r = ParseRoute(v);
    EXPECT_TRUE(r.has_value()) << r.error().message();
    if (r) out.push_back(*r);
  }
  return out;
}

TEST(ParseRoute, SinglePathAndMultipath) {
  auto routes = Parse({
      {.af = AF_INET, .metric = 100, .hops = {{2, "192.0.2.1"}}},
      {.af = AF_INET6, .metric = 1024, .hops = {{3, "fe80::1"}, {4, "fe80::2", RTNH_F_LINKDOWN}}},
      {.af = AF_INET, .dst = "10.0.0.0", .dst_len = 8, .table = 1000, .hops = {{5, nullptr}}},
  });
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0].dst, Pfx("0.0.0.0/0"));
  EXPECT_EQ(routes[0].priority, 100u);
  EXPECT_EQ(routes[0].table, kMainTable);
  ASSERT_EQ(routes[0].nexthops.size(), 1u);
  EXPECT_EQ(routes[0].nexthops[0].ifindex, 2);
  EXPECT_EQ(routes[0].nexthops[0].gateway, Ip("192.0.2.1"));
  ASSERT_EQ(routes[1].nexthops.size(), 2u);
  EXPECT_EQ(routes[1].family, net::Family::kV6);
  EXPECT_EQ(routes[1].nexthops[1].ifindex, 4);
  EXPECT_EQ(routes[1].nexthops[1].flags, RTNH_F_LINKDOWN);
  EXPECT_EQ(routes[1].nexthops[1].gateway, Ip("fe80::2"));
  EXPECT_EQ(routes[2].table, 1000u);  // RTA_TABLE beats the 8-bit rtm_table
  EXPECT_EQ(routes[2].dst, Pfx("10.0.0.0/8"));
  EXPECT_FALSE(routes[2].nexthops[0].gateway.has_value());
}

TEST(ParseRoute, TruncatedMultipathIsAnError) {
  Message m = RouteBytes({.metric = 5, .hops = {{3, "192.0.2.1"}, {4, "192.0.2.2"}}});
  // The first rtnh_len sits right after the RTA_MULTIPATH header; make it overrun.
  std::size_t off = 16 + sizeof(rtmsg);
  while (off < m.size()) {
    std::uint16_t len, type;
    std::memcpy(&len, &m[off], 2);
    std::memcpy(&type, &m[off + 2], 2);
    if (type == RTA_MULTIPATH) {
      std::uint16_t huge = 500;
      std::memcpy(&m[off + 4], &huge, 2);
      break;
    }
    off += (len + 3u) & ~3u;
  }
  auto views = SplitMessages(m);
  ASSERT_TRUE(views.has_value());
  EXPECT_FALSE(ParseRoute(views->front()).has_value());
}

struct DefaultCase {
  const char* name;
  std::vector<RouteSpec> routes;
  net::Family family;
  std::optional<DefaultRoute> want;  // nullopt: kNotFound
};

TEST(SelectDefaultRoute, Table) {
  const std::vector<DefaultCase> cases = {
      {"lowest metric wins",
       {{.metric = 200, .hops = {{2, "192.0.2.1"}}},
        {.metric = 100, .hops = {{3, "198.51.100.1"}}}},
       net::Family::kV4,
       DefaultRoute{100, {3}}},
      {"missing RTA_PRIORITY is metric 0",
       {{.metric = 5, .hops = {{2, "192.0.2.1"}}}, {.hops = {{3, "198.51.100.1"}}}},
       net::Family::kV4,
       DefaultRoute{0, {3}}},
      {"ECMP gives every nexthop interface",
       {{.metric = 300, .hops = {{2, "192.0.2.1"}}},
        {.metric = 50, .hops = {{3, "192.0.2.9"}, {4, "198.51.100.1"}, {3, "192.0.2.8"}}}},
       net::Family::kV4,
       DefaultRoute{50, {3, 4}}},
      {"IPv6 multipath with link-local gateways",
       {{.af = AF_INET6, .metric = 1024, .hops = {{7, "fe80::1"}, {8, "fe80::2"}}}},
       net::Family::kV6,
       DefaultRoute{1024, {7, 8}}},
      {"dead and linkdown nexthops are skipped",
       {{.metric = 10, .hops = {{2, "192.0.2.1", RTNH_F_DEAD}, {3, "192.0.2.2"}}},
        {.metric = 5, .hops = {{4, "198.51.100.1", RTNH_F_LINKDOWN}}}},
       net::Family::kV4,
       DefaultRoute{10, {3}}},
      {"other tables, types, families and non-default routes are ignored",
       {{.table = 100, .metric = 1, .hops = {{9, "192.0.2.1"}}},
        {.type = RTN_BLACKHOLE, .metric = 1, .hops = {}},
        {.af = AF_INET6, .metric = 1, .hops = {{8, "fe80::1"}}},
        {.dst = "192.0.2.0", .dst_len = 24, .metric = 0, .hops = {{7, nullptr}}},
        {.metric = 600, .hops = {{2, "192.0.2.1"}}}},
       net::Family::kV4,
       DefaultRoute{600, {2}}},
      {"same metric in two messages keeps kernel order",
       {{.metric = 100, .hops = {{5, "192.0.2.1"}}}, {.metric = 100, .hops = {{6, "192.0.2.2"}}}},
       net::Family::kV4,
       DefaultRoute{100, {5, 6}}},
      {"no default route",
       {{.dst = "192.0.2.0", .dst_len = 24, .hops = {{2, nullptr}}}},
       net::Family::kV4,
       std::nullopt},
  };
  for (const DefaultCase& c : cases) {
    auto routes = Parse(c.routes);
    auto got = SelectDefaultRoute(routes, c.family);
    if (!c.want) {
      ASSERT_FALSE(got.has_value()) << c.name;
      EXPECT_EQ(got.error().code(), ErrorCode::kNotFound) << c.name;
      continue;
    }
    ASSERT_TRUE(got.has_value()) << c.name << ": " << got.error().message();
    EXPECT_EQ(*got, *c.want) << c.name;
  }
}

AddressInfo Addr(int ifindex, const char* prefix, std::uint32_t flags = 0, std::uint8_t scope = 0,
                 std::optional<std::uint8_t> proto = std::nullopt) {
  AddressInfo a;
  a.ifindex = ifindex;
  a.prefix = Pfx(prefix);
  a.flags = flags;
  a.scope = scope;
  a.proto = proto;
  return a;
}

TEST(InterfaceSubnets, Ipv4MasksAndSkips) {
  std::vector<AddressInfo> addrs = {
      Addr(2, "192.0.2.151/24"),
      Addr(2, "192.0.2.226/24", IFA_F_SECONDARY),  // same subnet, deduplicated
      Addr(2, "198.51.100.7/25"),
      Addr(3, "203.0.113.1/24"),                             // other interface
      Addr(2, "169.254.3.3/16", 0, RT_SCOPE_LINK),           // link-local
      Addr(2, "203.0.113.77/24", 0, 0, kPylonAddressProto),  // our own VIP
  };
  auto subnets = InterfaceSubnets(addrs, {}, 2, net::Family::kV4, kPylonAddressProto);
  EXPECT_EQ(subnets, (std::vector<net::Prefix>{Pfx("192.0.2.0/24"), Pfx("198.51.100.0/25")}));
}

TEST(InterfaceSubnets, Ipv6HostAddressMatchedToOnLinkPrefix) {
  // The seed's node3: a DHCPv6 /128, a SLAAC /64 with noprefixroute, a static /64, link-local.
  std::vector<AddressInfo> addrs = {
      Addr(2, "2001:db8:154::1:f2dc/128"),
      Addr(2, "2001:db8:154:0:5054:ff:fec9:7073/64", IFA_F_NOPREFIXROUTE | IFA_F_MANAGETEMPADDR),
      Addr(2, "fe80::5054:ff:fec9:7073/64", 0, RT_SCOPE_LINK),
      Addr(2, "2001:db8:999::5/128"),                   // no covering route: nothing
      Addr(2, "2001:db8:aaaa::1/64", IFA_F_TENTATIVE),  // tentative: skipped
      Addr(2, "2001:db8:bbbb::1/64", IFA_F_DADFAILED | IFA_F_TENTATIVE),
      Addr(2, "2001:db8:777::9/128"),  // matched via a static on-link /48
  };
  // clang-format off
  auto routes = Parse({
      {.af = AF_INET6, .dst = "2001:db8:154::", .dst_len = 64, .protocol = RTPROT_RA, .metric = 100, .hops = {{2, nullptr}}},
      // A wider kernel route covering the same address: the RA route is preferred.
      {.af = AF_INET6, .dst = "2001:db8::", .dst_len = 32, .protocol = RTPROT_KERNEL, .metric = 256, .hops = {{2, nullptr}}},
      // Via a gateway: not on-link.
      {.af = AF_INET6, .dst = "2001:db8:999::", .dst_len = 64, .protocol = RTPROT_STATIC, .hops = {{2, "fe80::1"}}},
      {.af = AF_INET6, .dst = "2001:db8:777::", .dst_len = 48, .protocol = RTPROT_STATIC, .hops = {{2, nullptr}}},
      {.af = AF_INET6, .metric = 1024, .hops = {{2, "fe80::1"}}},
  });
  // clang-format on
  // Without the /32 kernel route, 2001:db8:999::5 would have no on-link route at all; with it,
  // the /32 is what covers it. Check both situations.
  auto subnets = InterfaceSubnets(addrs, routes, 2, net::Family::kV6, std::nullopt);
  EXPECT_EQ(subnets, (std::vector<net::Prefix>{Pfx("2001:db8:154::/64"), Pfx("2001:db8::/32"),
                                               Pfx("2001:db8:777::/48")}));
  std::vector<RouteInfo> without_wide;
  for (const auto& r : routes) {
    if (r.dst.length() != 32) without_wide.push_back(r);
  }
  subnets = InterfaceSubnets(addrs, without_wide, 2, net::Family::kV6, std::nullopt);
  EXPECT_EQ(subnets,
            (std::vector<net::Prefix>{Pfx("2001:db8:154::/64"), Pfx("2001:db8:777::/48")}));
  // The same route on another interface does not count.
  std::vector<AddressInfo> elsewhere = {Addr(5, "2001:db8:154::1:f2dc/128")};
  EXPECT_TRUE(InterfaceSubnets(elsewhere, routes, 5, net::Family::kV6, std::nullopt).empty());
}

TEST(KernelRelease, ParseAndProtoSupport) {
  struct Row {
    const char* text;
    bool ok, proto;
  };
  for (const Row& r : std::vector<Row>{{"6.18.44-fc-v769", true, true},
                                       {"6.1.0-13-amd64", true, true},
                                       {"6.0.19", true, false},
                                       {"5.15.0-91-generic", true, false},
                                       {"10.2", true, true},
                                       {"garbage", false, false},
                                       {"6", false, false}}) {
    auto v = ParseKernelRelease(r.text);
    EXPECT_EQ(v.has_value(), r.ok) << r.text;
    if (v) {
      EXPECT_EQ(KernelSupportsAddressProto(*v), r.proto) << r.text;
    }
  }
}

}  // namespace
}  // namespace pylon::netlink
