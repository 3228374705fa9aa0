// Byte-level tests of the rtnetlink builders and parsers against the kernel's struct layouts
// (<linux/rtnetlink.h>, <linux/if_addr.h>, <linux/if_link.h>), built here by hand.
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "netlink/message.h"
#include "support/net.h"

namespace pylon::netlink {
namespace {

using test_support::Ip;
using test_support::Pfx;

std::uint16_t U16(const Message& m, std::size_t off) {
  std::uint16_t v;
  std::memcpy(&v, m.data() + off, 2);
  return v;
}
std::uint32_t U32(const Message& m, std::size_t off) {
  std::uint32_t v;
  std::memcpy(&v, m.data() + off, 4);
  return v;
}

// Finds attribute `type` in the TLVs starting at `off`; returns its offset or 0.
std::size_t FindAttr(const Message& m, std::size_t off, std::uint16_t type) {
  while (off + 4 <= m.size()) {
    std::uint16_t len = U16(m, off);
    if (len < 4) return 0;
    if ((U16(m, off + 2) & NLA_TYPE_MASK) == type) return off;
    off += (len + 3u) & ~3u;
  }
  return 0;
}

// A message writer independent of the code under test: appends header fields and attributes.
class Writer {
 public:
  Writer(std::uint16_t type, std::uint16_t flags) {
    Put32(0);  // length, patched in Done
    Put16(type);
    Put16(flags);
    Put32(7);  // seq
    Put32(0);  // pid
  }
  template <typename T>
  Writer& Raw(const T& v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
    Pad();
    return *this;
  }
  Writer& Attr(std::uint16_t type, const void* data, std::size_t len) {
    Put16(static_cast<std::uint16_t>(4 + len));
    Put16(type);
    const auto* p = static_cast<const std::uint8_t*>(data);
    b_.insert(b_.end(), p, p + len);
    Pad();
    return *this;
  }
  Writer& AttrU32(std::uint16_t type, std::uint32_t v) { return Attr(type, &v, 4); }
  Writer& AttrIp(std::uint16_t type, const char* ip) {
    auto a = Ip(ip);
    auto bytes = a.bytes();
    return Attr(type, bytes.data(), a.is_v4() ? 4 : 16);
  }
  Message Done() {
    std::uint32_t len = static_cast<std::uint32_t>(b_.size());
    std::memcpy(b_.data(), &len, 4);
    return b_;
  }

 private:
  void Put16(std::uint16_t v) { Raw16(v); }
  void Raw16(std::uint16_t v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b_.insert(b_.end(), p, p + 2);
  }
  void Put32(std::uint32_t v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b_.insert(b_.end(), p, p + 4);
  }
  void Pad() {
    while (b_.size() % 4) b_.push_back(0);
  }
  Message b_;
};

MessageView Single(const Message& m) {
  auto views = SplitMessages(m);
  EXPECT_TRUE(views.has_value());
  EXPECT_EQ(views->size(), 1u);
  return views->front();
}

TEST(BuildNewAddress, Ipv6VipLayout) {
  auto spec = VipAddressSpec(3, Pfx("2001:db8::10/64"), Seconds(300), kPylonAddressProto);
  auto m = BuildNewAddress(spec);
  ASSERT_TRUE(m.has_value()) << m.error().message();
  const Message& b = *m;
  ASSERT_EQ(U32(b, 0), b.size());
  EXPECT_EQ(U16(b, 4), RTM_NEWADDR);
  EXPECT_EQ(U16(b, 6), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  EXPECT_EQ(U32(b, 8), 0u);  // seq stamped by the socket
  // ifaddrmsg at 16: family, prefixlen, flags (low 8 bits), scope, index.
  EXPECT_EQ(b[16], AF_INET6);
  EXPECT_EQ(b[17], 64);
  EXPECT_EQ(b[18], IFA_F_NODAD);
  EXPECT_EQ(b[19], RT_SCOPE_UNIVERSE);
  EXPECT_EQ(U32(b, 20), 3u);
  std::size_t attrs = 24;
  auto local = FindAttr(b, attrs, IFA_LOCAL);
  ASSERT_NE(local, 0u);
  EXPECT_EQ(U16(b, local), 20);
  EXPECT_EQ(std::memcmp(&b[local + 4], Ip("2001:db8::10").bytes().data(), 16), 0);
  ASSERT_NE(FindAttr(b, attrs, IFA_ADDRESS), 0u);
  EXPECT_EQ(FindAttr(b, attrs, IFA_BROADCAST), 0u);  // IPv4 only
  auto flags = FindAttr(b, attrs, IFA_FLAGS);
  ASSERT_NE(flags, 0u);
  EXPECT_EQ(U32(b, flags + 4), static_cast<std::uint32_t>(IFA_F_NODAD));
  auto ci = FindAttr(b, attrs, IFA_CACHEINFO);
  ASSERT_NE(ci, 0u);
  EXPECT_EQ(U16(b, ci), 4 + sizeof(ifa_cacheinfo));
  EXPECT_EQ(U32(b, ci + 4), 0u);    // ifa_prefered: never a source address
  EXPECT_EQ(U32(b, ci + 8), 300u);  // ifa_valid: dead-man switch
  auto proto = FindAttr(b, attrs, IFA_PROTO);
  ASSERT_NE(proto, 0u);
  EXPECT_EQ(U16(b, proto), 5);
  EXPECT_EQ(b[proto + 4], kPylonAddressProto);
}

TEST(BuildNewAddress, Ipv4ReplaceWithBroadcastAndNoPrefixRoute) {
  AddressSpec s =
      VipAddressSpec(2, Pfx("192.0.2.10/24"), Seconds(300), std::nullopt, PrefixRoute::kSuppress);
  s.mode = AddMode::kReplace;
  auto m = BuildNewAddress(s);
  ASSERT_TRUE(m.has_value());
  const Message& b = *m;
  EXPECT_EQ(U16(b, 6), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
  EXPECT_EQ(b[16], AF_INET);
  EXPECT_EQ(b[17], 24);
  EXPECT_EQ(b[18], 0);  // 0x200 does not fit the 8-bit field
  auto flags = FindAttr(b, 24, IFA_FLAGS);
  ASSERT_NE(flags, 0u);
  EXPECT_EQ(U32(b, flags + 4), static_cast<std::uint32_t>(IFA_F_NOPREFIXROUTE));
  auto brd = FindAttr(b, 24, IFA_BROADCAST);
  ASSERT_NE(brd, 0u);
  EXPECT_EQ(std::memcmp(&b[brd + 4], Ip("192.0.2.255").bytes().data(), 4), 0);
  auto ci = FindAttr(b, 24, IFA_CACHEINFO);
  ASSERT_NE(ci, 0u);
  EXPECT_EQ(U32(b, ci + 4), 300u);  // IPv4: preferred = valid
  EXPECT_EQ(U32(b, ci + 8), 300u);
  EXPECT_EQ(FindAttr(b, 24, IFA_PROTO), 0u);
}

TEST(BuildNewAddress, PermanentAddressHasNoCacheinfo) {
  AddressSpec s;
  s.ifindex = 1;
  s.address = Pfx("198.51.100.1/32");
  auto m = BuildNewAddress(s);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(FindAttr(*m, 24, IFA_CACHEINFO), 0u);
  EXPECT_EQ(FindAttr(*m, 24, IFA_BROADCAST), 0u);  // /32
}

TEST(ValidateAddressSpec, RejectsWhatTheKernelWouldMisapply) {
  struct Row {
    const char* name;
    AddressSpec spec;
  };
  auto base = [] {
    AddressSpec s;
    s.ifindex = 2;
    s.address = Pfx("192.0.2.10/24");
    return s;
  };
  std::vector<Row> rows;
  {
    auto s = base();
    s.dad = Dad::kSkip;
    rows.push_back({"nodad on IPv4", s});
  }
  {
    auto s = base();
    s.ifindex = 0;
    rows.push_back({"ifindex 0", s});
  }
  {
    auto s = base();
    s.lifetimes = {Seconds(10), Seconds(20)};
    rows.push_back({"preferred > valid", s});
  }
  {
    auto s = base();
    s.lifetimes = {Seconds(0), Seconds(0)};
    rows.push_back({"valid 0", s});
  }
  for (const Row& r : rows) {
    auto st = ValidateAddressSpec(r.spec);
    EXPECT_FALSE(st.has_value()) << r.name;
    if (!st) {
      EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument) << r.name;
    }
    EXPECT_FALSE(BuildNewAddress(r.spec).has_value()) << r.name;
  }
  EXPECT_TRUE(ValidateAddressSpec(base()).has_value());
}

TEST(BuildDeleteAddress, TargetsOneInterface) {
  auto b = BuildDeleteAddress(5, Pfx("2001:db8::10/64"));
  EXPECT_EQ(U16(b, 4), RTM_DELADDR);
  EXPECT_EQ(U16(b, 6), NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(b[17], 64);
  EXPECT_EQ(U32(b, 20), 5u);
  EXPECT_NE(FindAttr(b, 24, IFA_LOCAL), 0u);
}

TEST(BuildDumps, HeadersAndFamilies) {
  auto a = BuildGetAddresses(net::Family::kV6);
  EXPECT_EQ(a.size(), 24u);
  EXPECT_EQ(U16(a, 4), RTM_GETADDR);
  EXPECT_EQ(U16(a, 6), NLM_F_REQUEST | NLM_F_DUMP);
  EXPECT_EQ(a[16], AF_INET6);
  EXPECT_EQ(BuildGetAddresses(std::nullopt)[16], AF_UNSPEC);
  auto r = BuildGetRoutes(net::Family::kV4);
  EXPECT_EQ(r.size(), 16 + sizeof(rtmsg));
  EXPECT_EQ(U16(r, 4), RTM_GETROUTE);
  EXPECT_EQ(r[16], AF_INET);
  auto l = BuildGetLinks();
  EXPECT_EQ(l.size(), 16 + sizeof(ifinfomsg));
  EXPECT_EQ(U16(l, 4), RTM_GETLINK);
  EXPECT_EQ(U16(l, 6), NLM_F_REQUEST | NLM_F_DUMP);
}

TEST(BuildNewLink, CreateExclusiveWithKind) {
  auto m = BuildNewLink("kube-lb0", "dummy");
  ASSERT_TRUE(m.has_value());
  const Message& b = *m;
  EXPECT_EQ(U16(b, 4), RTM_NEWLINK);
  EXPECT_EQ(U16(b, 6), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  const std::size_t attrs = 16 + sizeof(ifinfomsg);
  auto name = FindAttr(b, attrs, IFLA_IFNAME);
  ASSERT_NE(name, 0u);
  EXPECT_STREQ(reinterpret_cast<const char*>(&b[name + 4]), "kube-lb0");
  auto info = FindAttr(b, attrs, IFLA_LINKINFO);
  ASSERT_NE(info, 0u);
  auto kind = FindAttr(b, info + 4, IFLA_INFO_KIND);
  ASSERT_NE(kind, 0u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&b[kind + 4]), U16(b, kind) - 4u), "dummy");
  EXPECT_FALSE(BuildNewLink("a-name-longer-than-15", "dummy").has_value());
  EXPECT_FALSE(BuildNewLink("bad/name", "dummy").has_value());
}

TEST(BuildSetLinkUp, ChangesOnlyIffUp) {
  auto b = BuildSetLinkUp(9, true);
  ifinfomsg ifi;
  std::memcpy(&ifi, &b[16], sizeof(ifi));
  EXPECT_EQ(ifi.ifi_index, 9);
  EXPECT_EQ(ifi.ifi_flags, static_cast<unsigned>(IFF_UP));
  EXPECT_EQ(ifi.ifi_change, static_cast<unsigned>(IFF_UP));
  std::memcpy(&ifi, &BuildSetLinkUp(9, false)[16], sizeof(ifi));
  EXPECT_EQ(ifi.ifi_flags, 0u);
  auto d = BuildDeleteLink(9);
  EXPECT_EQ(U16(d, 4), RTM_DELLINK);
}

TEST(SplitMessages, RejectsTruncation) {
  Message m = Writer(NLMSG_DONE, NLM_F_MULTI).Raw(std::int32_t{0}).Done();
  Message two = m;
  two.insert(two.end(), m.begin(), m.end());
  auto views = SplitMessages(two);
  ASSERT_TRUE(views.has_value());
  EXPECT_EQ(views->size(), 2u);
  EXPECT_EQ((*views)[1].seq, 7u);
  Message cut(two.begin(), two.end() - 2);
  EXPECT_FALSE(SplitMessages(cut).has_value());
  Message bad_len = m;
  bad_len[0] = 200;
  EXPECT_FALSE(SplitMessages(bad_len).has_value());
  EXPECT_FALSE(SplitMessages(std::span<const std::uint8_t>(m.data(), 10)).has_value());
}

TEST(ParseAck, ErrnoAndExtendedAckMessage) {
  // Capped error with NLMSGERR_ATTR_MSG, as the kernel answers RTM_NEWLINK of an unknown kind.
  nlmsghdr echoed{};
  echoed.nlmsg_len = 40;
  echoed.nlmsg_type = RTM_NEWLINK;
  const char text[] = "Unknown device type";
  Message m = Writer(NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS)
                  .Raw(std::int32_t{-EOPNOTSUPP})
                  .Raw(echoed)
                  .Attr(NLMSGERR_ATTR_MSG, text, sizeof(text))
                  .Done();
  auto st = ParseAck(Single(m), "create dummy link kube-lb0");
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(st.error().sys_errno(), EOPNOTSUPP);
  EXPECT_NE(st.error().message().find("create dummy link kube-lb0"), std::string::npos);
  EXPECT_NE(st.error().message().find("Unknown device type"), std::string::npos);

  // Uncapped: the whole request is echoed before the TLVs.
  Message uncapped = Writer(NLMSG_ERROR, NLM_F_ACK_TLVS)
                         .Raw(std::int32_t{-EEXIST})
                         .Raw(echoed)
                         .Raw(std::array<std::uint8_t, 24>{})
                         .Attr(NLMSGERR_ATTR_MSG, "dup", 4)
                         .Done();
  st = ParseAck(Single(uncapped), "add");
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(st.error().message().find("(dup)"), std::string::npos);

  Message ack = Writer(NLMSG_ERROR, NLM_F_CAPPED).Raw(std::int32_t{0}).Raw(echoed).Done();
  EXPECT_TRUE(ParseAck(Single(ack), "x").has_value());
  Message shorty = Writer(NLMSG_ERROR, 0).Raw(std::int32_t{0}).Done();
  EXPECT_FALSE(ParseAck(Single(shorty), "x").has_value());
}

TEST(ParseDone, DumpError) {
  EXPECT_TRUE(ParseDone(Single(Writer(NLMSG_DONE, NLM_F_MULTI).Raw(std::int32_t{0}).Done()), "d"));
  auto st =
      ParseDone(Single(Writer(NLMSG_DONE, NLM_F_MULTI).Raw(std::int32_t{-EINTR}).Done()), "d");
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().sys_errno(), EINTR);
}

Message AddressMessage(const char* ip, std::uint8_t plen, std::uint32_t flags,
                       std::optional<std::uint8_t> proto, std::uint32_t valid,
                       std::uint32_t preferred) {
  auto a = Ip(ip);
  ifaddrmsg ifa{};
  ifa.ifa_family = a.is_v4() ? AF_INET : AF_INET6;
  ifa.ifa_prefixlen = plen;
  ifa.ifa_flags = static_cast<std::uint8_t>(flags);
  ifa.ifa_index = 4;
  ifa_cacheinfo ci{};
  ci.ifa_prefered = preferred;
  ci.ifa_valid = valid;
  Writer w(RTM_NEWADDR, NLM_F_MULTI);
  w.Raw(ifa).AttrIp(IFA_ADDRESS, ip);
  if (a.is_v4()) w.AttrIp(IFA_LOCAL, ip).Attr(IFA_LABEL, "eth0", 5);
  w.AttrU32(IFA_FLAGS, flags).Attr(IFA_CACHEINFO, &ci, sizeof(ci));
  if (proto) w.Attr(IFA_PROTO, &*proto, 1);
  return w.Done();
}

TEST(ParseAddress, FlagsLifetimesProto) {
  auto m = AddressMessage("2001:db8::10", 64, IFA_F_NODAD | IFA_F_DEPRECATED | IFA_F_NOPREFIXROUTE,
                          kPylonAddressProto, 297, 0);
  auto a = ParseAddress(Single(m));
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(a->ifindex, 4);
  EXPECT_EQ(a->prefix, Pfx("2001:db8::10/64"));
  EXPECT_EQ(a->flags, static_cast<std::uint32_t>(IFA_F_NODAD | IFA_F_DEPRECATED |
                                                 IFA_F_NOPREFIXROUTE));  // from IFA_FLAGS
  EXPECT_EQ(a->lifetimes.valid, Seconds(297));
  EXPECT_EQ(a->lifetimes.preferred, Seconds(0));
  EXPECT_EQ(a->proto, kPylonAddressProto);
  EXPECT_FALSE(a->peer.has_value());

  auto v4 = ParseAddress(Single(AddressMessage("192.0.2.7", 24, IFA_F_SECONDARY | IFA_F_PERMANENT,
                                               std::nullopt, 0xffffffffu, 0xffffffffu)));
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->prefix, Pfx("192.0.2.7/24"));
  EXPECT_EQ(v4->label, "eth0");
  EXPECT_FALSE(v4->proto.has_value());
  EXPECT_EQ(v4->lifetimes.valid, kForever);
  EXPECT_TRUE(v4->has_flag(addr_flags::kSecondary));
}

TEST(ParseAddress, MalformedInputIsAnError) {
  auto good = AddressMessage("192.0.2.7", 24, 0, std::nullopt, 1, 1);
  struct Row {
    const char* name;
    std::function<void(Message&)> damage;
  };
  std::vector<Row> rows = {
      {"prefix length 33", [](Message& m) { m[17] = 33; }},
      {"unknown family", [](Message& m) { m[16] = 99; }},
      {"attribute overruns", [](Message& m) { m[24] = 0xf0; }},
      {"attribute length < 4", [](Message& m) { m[24] = 2; }},
      {"IPv4 address of 5 bytes", [](Message& m) { m[24] = 9; }},
  };
  for (const Row& r : rows) {
    Message m = good;
    r.damage(m);
    auto views = SplitMessages(m);
    ASSERT_TRUE(views.has_value()) << r.name;
    EXPECT_FALSE(ParseAddress(views->front()).has_value()) << r.name;
  }
  Message header_only = Writer(RTM_NEWADDR, 0).Done();
  EXPECT_FALSE(ParseAddress(Single(header_only)).has_value());
}

TEST(ParseLink, StateAndKind) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = 12;
  ifi.ifi_flags = IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_LOWER_UP;
  std::uint8_t oper = 6, carrier = 1;
  std::uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x12};
  Message kind = Writer(0, 0).Attr(IFLA_INFO_KIND, "veth", 4).Done();  // used as nested bytes
  Message m = Writer(RTM_NEWLINK, 0)
                  .Raw(ifi)
                  .Attr(IFLA_IFNAME, "eth1", 5)
                  .Attr(IFLA_ADDRESS, mac, 6)
                  .AttrU32(IFLA_MTU, 9000)
                  .Attr(IFLA_OPERSTATE, &oper, 1)
                  .Attr(IFLA_CARRIER, &carrier, 1)
                  .Attr(IFLA_LINKINFO | NLA_F_NESTED, kind.data() + 16, kind.size() - 16)
                  .Done();
  auto l = ParseLink(Single(m));
  ASSERT_TRUE(l.has_value()) << l.error().message();
  EXPECT_EQ(l->index, 12);
  EXPECT_EQ(l->name, "eth1");
  EXPECT_EQ(l->kind, "veth");
  EXPECT_EQ(l->mtu, 9000u);
  EXPECT_EQ(l->hwaddr, std::vector<std::uint8_t>(mac, mac + 6));
  EXPECT_TRUE(l->operational());
  EXPECT_EQ(l->carrier, true);

  // Link down notification: admin up, no carrier.
  ifi.ifi_flags = IFF_UP | IFF_BROADCAST;
  oper = 2;
  Message down = Writer(RTM_NEWLINK, 0)
                     .Raw(ifi)
                     .Attr(IFLA_IFNAME, "eth1", 5)
                     .Attr(IFLA_OPERSTATE, &oper, 1)
                     .Done();
  auto ev = ParseEvent(Single(down));
  ASSERT_TRUE(ev.has_value());
  ASSERT_TRUE(ev->has_value());
  const auto* le = std::get_if<LinkEvent>(&**ev);
  ASSERT_NE(le, nullptr);
  EXPECT_EQ(le->kind, ChangeKind::kNew);
  EXPECT_TRUE(le->link.admin_up());
  EXPECT_FALSE(le->link.lower_up());
  EXPECT_FALSE(le->link.operational());
}

TEST(ParseLink, ShortNumberAttributesAreErrors) {
  ifinfomsg ifi{};
  ifi.ifi_index = 12;
  const std::uint8_t two[2] = {1, 2};
  auto mtu = ParseLink(Single(Writer(RTM_NEWLINK, 0).Raw(ifi).Attr(IFLA_MTU, two, 2).Done()));
  ASSERT_FALSE(mtu.has_value());
  EXPECT_EQ(mtu.error().message(), "IFLA_MTU: short u32");
  auto oper =
      ParseLink(Single(Writer(RTM_NEWLINK, 0).Raw(ifi).Attr(IFLA_OPERSTATE, two, 0).Done()));
  ASSERT_FALSE(oper.has_value());
  EXPECT_EQ(oper.error().message(), "IFLA_OPERSTATE: empty u8");
}

TEST(ParseEvent, AddressDeletedAndIgnoredTypes) {
  Message m = AddressMessage("192.0.2.9", 24, 0, std::nullopt, 1, 1);
  std::uint16_t del = RTM_DELADDR;
  std::memcpy(&m[4], &del, 2);
  auto ev = ParseEvent(Single(m));
  ASSERT_TRUE(ev.has_value() && ev->has_value());
  const auto* ae = std::get_if<AddressEvent>(&**ev);
  ASSERT_NE(ae, nullptr);
  EXPECT_EQ(ae->kind, ChangeKind::kDeleted);
  EXPECT_EQ(ae->address.prefix, Pfx("192.0.2.9/24"));
  Message other = Writer(RTM_NEWNEIGH, 0).Raw(std::array<std::uint8_t, 12>{}).Done();
  auto none = ParseEvent(Single(other));
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace pylon::netlink
