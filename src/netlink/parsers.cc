// Pure parsers of rtnetlink messages. Every length is checked against the buffer before it is
// read; multi-byte fields are copied out with memcpy (no aligned-access assumptions).
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <type_traits>
#include <variant>

#include "netlink/message.h"

namespace pylon::netlink {
namespace {

constexpr std::size_t kHeader = 16;  // sizeof(nlmsghdr)
constexpr std::size_t Align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

template <typename T>
T Load(std::span<const std::uint8_t> bytes, std::size_t offset = 0) {
  T v{};
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

struct Attr {
  std::uint16_t type = 0;  // NLA_F_NESTED / NLA_F_NET_BYTEORDER masked off
  std::span<const std::uint8_t> data;
};

Result<std::vector<Attr>> ParseAttrs(std::span<const std::uint8_t> bytes, std::string_view what) {
  std::vector<Attr> out;
  std::size_t off = 0;
  while (off + 4 <= bytes.size()) {
    auto len = Load<std::uint16_t>(bytes, off);
    auto type = Load<std::uint16_t>(bytes, off + 2);
    if (len < 4 || off + len > bytes.size()) {
      return Fail(ErrorCode::kInvalidArgument,
                  std::string(what) + ": attribute " + std::to_string(type & NLA_TYPE_MASK) +
                      " length " + std::to_string(len) + " overruns the message");
    }
    out.push_back(
        {static_cast<std::uint16_t>(type & NLA_TYPE_MASK), bytes.subspan(off + 4, len - 4u)});
    off += Align4(len);
  }
  return out;
}

// A message of `Head` (ifaddrmsg, rtmsg, ifinfomsg): that fixed header, then attributes.
template <typename Head>
struct Message {
  Head head;
  std::vector<Attr> attrs;
};
template <typename Head>
Result<Message<Head>> ReadMessage(const MessageView& msg, std::string_view what) {
  if (msg.bytes.size() < kHeader + sizeof(Head)) {
    return Fail(ErrorCode::kInvalidArgument, std::string(what) + ": message too short (" +
                                                 std::to_string(msg.bytes.size()) + " bytes)");
  }
  const std::size_t start = std::min(Align4(kHeader + sizeof(Head)), msg.bytes.size());
  auto attrs = ParseAttrs(msg.bytes.subspan(start), what);
  if (!attrs) return tl::unexpected(attrs.error());
  return Message<Head>{Load<Head>(msg.payload()), std::move(*attrs)};
}

Result<net::IpAddress> AddressFrom(const Attr& a, int af, std::string_view what) {
  if (af == AF_INET && a.data.size() == 4)
    return net::IpAddress::FromBytes(net::Family::kV4, a.data.data());
  if (af == AF_INET6 && a.data.size() == 16)
    return net::IpAddress::FromBytes(net::Family::kV6, a.data.data());
  return Fail(ErrorCode::kInvalidArgument, std::string(what) + ": address attribute of " +
                                               std::to_string(a.data.size()) +
                                               " bytes for family " + std::to_string(af));
}

Result<std::uint32_t> U32(const Attr& a, std::string_view what) {
  if (a.data.size() < 4)
    return Fail(ErrorCode::kInvalidArgument, std::string(what) + ": short u32");
  return Load<std::uint32_t>(a.data);
}
Result<std::uint8_t> U8(const Attr& a, std::string_view what) {
  if (a.data.empty()) return Fail(ErrorCode::kInvalidArgument, std::string(what) + ": empty u8");
  return a.data[0];
}
// Stores a parsed attribute's value in `out`, or passes its error on.
template <typename T, typename U>
Status Store(Result<T> v, U& out) {
  if (!v) return Fail(v.error());
  out = static_cast<U>(std::move(*v));
  return Ok();
}

// An attribute that is one number, stored as it is in a field of the parsed message: the
// attributes a parser needs no code for, listed in its table (kAddressNumbers, ...). Its width,
// u8 or u32, is the field's.
template <typename Info>
struct NumberAttr {
  std::uint16_t type;
  const char* name;
  std::variant<std::uint8_t Info::*, std::uint32_t Info::*, std::optional<std::uint8_t> Info::*,
               std::optional<std::uint32_t> Info::*>
      field;
};
// Reads `a` into its field when `table` lists it; leaves any other attribute alone.
template <typename Info, std::size_t N>
Status ReadNumber(const Attr& a, const std::array<NumberAttr<Info>, N>& table, Info& out) {
  for (const NumberAttr<Info>& n : table) {
    if (n.type != a.type) continue;
    return std::visit(
        [&](auto field) -> Status {
          using Field = std::remove_reference_t<decltype(out.*field)>;
          if constexpr (std::is_same_v<Field, std::uint8_t> ||
                        std::is_same_v<Field, std::optional<std::uint8_t>>) {
            return Store(U8(a, n.name), out.*field);
          } else {
            return Store(U32(a, n.name), out.*field);
          }
        },
        n.field);
  }
  return Ok();
}

constexpr std::array<NumberAttr<AddressInfo>, 2> kAddressNumbers = {{
    {IFA_FLAGS, "IFA_FLAGS", &AddressInfo::flags},
    {IFA_PROTO, "IFA_PROTO", &AddressInfo::proto},
}};
constexpr std::array<NumberAttr<RouteInfo>, 3> kRouteNumbers = {{
    {RTA_PRIORITY, "RTA_PRIORITY", &RouteInfo::priority},
    {RTA_TABLE, "RTA_TABLE", &RouteInfo::table},
    {RTA_NH_ID, "RTA_NH_ID", &RouteInfo::nexthop_id},
}};
constexpr std::array<NumberAttr<LinkInfo>, 2> kLinkNumbers = {{
    {IFLA_MTU, "IFLA_MTU", &LinkInfo::mtu},
    {IFLA_OPERSTATE, "IFLA_OPERSTATE", &LinkInfo::operstate},
}};

std::string Str(const Attr& a) {
  std::string s(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  if (auto nul = s.find('\0'); nul != std::string::npos) s.resize(nul);
  return s;
}

Result<net::Family> FamilyOf(int af, std::string_view what) {
  if (af == AF_INET) return net::Family::kV4;
  if (af == AF_INET6) return net::Family::kV6;
  return Fail(ErrorCode::kUnsupported,
              std::string(what) + ": address family " + std::to_string(af));
}

// The two messages that carry a prefix: the family field, the prefix length and what the message
// calls it.
struct PrefixFields {
  int af;
  int length;
  std::string_view length_name;
};
PrefixFields PrefixOf(const ifaddrmsg& h) {
  return {h.ifa_family, h.ifa_prefixlen, "prefix length"};
}
PrefixFields PrefixOf(const rtmsg& h) { return {h.rtm_family, h.rtm_dst_len, "dst length"}; }

// ReadMessage for an address or route message, and its family, which the prefix length must fit.
template <typename Head>
struct PrefixMessage : Message<Head> {
  net::Family family = net::Family::kV4;
};
template <typename Head>
Result<PrefixMessage<Head>> ReadPrefixMessage(const MessageView& msg, std::string_view what) {
  auto m = ReadMessage<Head>(msg, what);
  if (!m) return tl::unexpected(m.error());
  const PrefixFields p = PrefixOf(m->head);
  auto family = FamilyOf(p.af, what);
  if (!family) return tl::unexpected(family.error());
  if (p.length > net::FamilyBits(*family)) {
    return Fail(ErrorCode::kInvalidArgument, std::string(what) + ": " + std::string(p.length_name) +
                                                 " " + std::to_string(p.length));
  }
  return PrefixMessage<Head>{{std::move(*m)}, *family};
}

Status ErrorStatus(int error, std::string context, std::string_view extack) {
  if (error == 0) return Ok();
  int err = error < 0 ? -error : error;
  if (!extack.empty()) context += " (" + std::string(extack) + ")";
  return tl::unexpected(Error::FromErrno(err, context));
}

Result<std::vector<Nexthop>> ParseMultipath(std::span<const std::uint8_t> data, int af) {
  std::vector<Nexthop> out;
  std::size_t off = 0;
  constexpr std::size_t kRtnh = 8;  // sizeof(rtnexthop)
  while (off + kRtnh <= data.size()) {
    auto len = Load<std::uint16_t>(data, off);
    if (len < kRtnh || off + len > data.size()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "RTA_MULTIPATH: rtnh_len " + std::to_string(len) + " overruns the attribute");
    }
    Nexthop nh;
    nh.flags = data[off + 2];
    nh.weight = static_cast<std::uint8_t>(data[off + 3] + 1);
    nh.ifindex = Load<std::int32_t>(data, off + 4);
    auto attrs = ParseAttrs(data.subspan(off + kRtnh, len - kRtnh), "RTA_MULTIPATH nexthop");
    if (!attrs) return tl::unexpected(attrs.error());
    for (const Attr& a : *attrs) {
      if (a.type == RTA_GATEWAY) {
        auto gw = AddressFrom(a, af, "RTA_MULTIPATH gateway");
        if (!gw) return tl::unexpected(gw.error());
        nh.gateway = *gw;
      } else if (a.type == RTA_VIA && a.data.size() >= 2) {
        auto via_af = Load<std::uint16_t>(a.data);
        auto gw = AddressFrom({RTA_VIA, a.data.subspan(2)}, via_af, "RTA_VIA");
        if (!gw) return tl::unexpected(gw.error());
        nh.gateway = *gw;
      }
    }
    out.push_back(nh);
    off += Align4(len);
  }
  return out;
}

}  // namespace

Result<std::vector<MessageView>> SplitMessages(std::span<const std::uint8_t> buffer) {
  std::vector<MessageView> out;
  std::size_t off = 0;
  while (off < buffer.size()) {
    if (buffer.size() - off < kHeader) {
      return Fail(ErrorCode::kInvalidArgument,
                  "netlink: truncated header at offset " + std::to_string(off));
    }
    auto bytes = buffer.subspan(off);
    auto len = Load<std::uint32_t>(bytes, 0);
    if (len < kHeader || len > bytes.size()) {
      return Fail(ErrorCode::kInvalidArgument, "netlink: nlmsg_len " + std::to_string(len) +
                                                   " at offset " + std::to_string(off) +
                                                   " does not fit the buffer");
    }
    MessageView m;
    m.type = Load<std::uint16_t>(bytes, 4);
    m.flags = Load<std::uint16_t>(bytes, 6);
    m.seq = Load<std::uint32_t>(bytes, 8);
    m.pid = Load<std::uint32_t>(bytes, 12);
    m.bytes = bytes.subspan(0, len);
    out.push_back(m);
    off += Align4(len);
  }
  return out;
}

Status ParseAck(const MessageView& msg, std::string_view context) {
  if (msg.type != NLMSG_ERROR) {
    return Fail(ErrorCode::kInternal, std::string(context) + ": expected NLMSG_ERROR, got type " +
                                          std::to_string(msg.type));
  }
  auto p = msg.payload();
  if (p.size() < 4 + kHeader) {
    return Fail(ErrorCode::kInvalidArgument, std::string(context) + ": short NLMSG_ERROR");
  }
  auto error = Load<std::int32_t>(p, 0);
  std::string extack;
  if (msg.flags & NLM_F_ACK_TLVS) {
    // The echoed request follows the error code: its header only when capped (always for
    // ACKs, error 0), else the whole request.
    std::size_t echoed = kHeader;
    if (!(msg.flags & NLM_F_CAPPED)) echoed = Load<std::uint32_t>(p, 4);
    std::size_t tlv = Align4(4 + echoed);
    if (echoed >= kHeader && tlv <= p.size()) {
      auto attrs = ParseAttrs(p.subspan(tlv), "extack");
      if (attrs) {
        for (const Attr& a : *attrs) {
          if (a.type == NLMSGERR_ATTR_MSG) extack = Str(a);
        }
      }
    }
  }
  return ErrorStatus(error, std::string(context), extack);
}

Status ParseDone(const MessageView& msg, std::string_view context) {
  auto p = msg.payload();
  if (p.size() < 4) return Ok();
  return ErrorStatus(Load<std::int32_t>(p, 0), std::string(context) + ": dump", "");
}

Result<AddressInfo> ParseAddress(const MessageView& msg) {
  constexpr std::string_view kWhat = "RTM_NEWADDR";
  auto m = ReadPrefixMessage<ifaddrmsg>(msg, kWhat);
  if (!m) return tl::unexpected(m.error());
  const ifaddrmsg& ifa = m->head;
  AddressInfo info;
  info.ifindex = static_cast<int>(ifa.ifa_index);
  info.flags = ifa.ifa_flags;
  info.scope = ifa.ifa_scope;
  std::optional<net::IpAddress> local, address;
  for (const Attr& a : m->attrs) {
    switch (a.type) {
      case IFA_LOCAL:
      case IFA_ADDRESS: {
        auto ip = AddressFrom(a, ifa.ifa_family, kWhat);
        if (!ip) return tl::unexpected(ip.error());
        (a.type == IFA_LOCAL ? local : address) = *ip;
        break;
      }
      case IFA_CACHEINFO: {
        if (a.data.size() < sizeof(ifa_cacheinfo)) {
          return Fail(ErrorCode::kInvalidArgument, "IFA_CACHEINFO: short attribute");
        }
        auto ci = Load<ifa_cacheinfo>(a.data);
        info.lifetimes.preferred = Seconds{ci.ifa_prefered};
        info.lifetimes.valid = Seconds{ci.ifa_valid};
        break;
      }
      case IFA_LABEL:
        info.label = Str(a);
        break;
      default:
        if (auto st = ReadNumber(a, kAddressNumbers, info); !st) return Fail(st.error());
        break;
    }
  }
  if (!local) local = address;
  if (!local) return Fail(ErrorCode::kInvalidArgument, "RTM_NEWADDR: no IFA_LOCAL/IFA_ADDRESS");
  if (address && *address != *local) info.peer = address;
  if (auto st = Store(net::Prefix::Make(*local, ifa.ifa_prefixlen), info.prefix); !st) {
    return Fail(st.error());
  }
  return info;
}

Result<RouteInfo> ParseRoute(const MessageView& msg) {
  auto m = ReadPrefixMessage<rtmsg>(msg, "RTM_NEWROUTE");
  if (!m) return tl::unexpected(m.error());
  const rtmsg& rtm = m->head;
  const net::Family family = m->family;
  RouteInfo r;
  r.family = family;
  r.table = rtm.rtm_table;
  r.type = rtm.rtm_type;
  r.protocol = rtm.rtm_protocol;
  r.scope = rtm.rtm_scope;
  r.flags = rtm.rtm_flags;
  net::IpAddress dst = net::IpAddress::FromValue(family, 0);
  Nexthop single;
  bool has_single = false;
  for (const Attr& a : m->attrs) {
    switch (a.type) {
      case RTA_DST:
        if (auto st = Store(AddressFrom(a, rtm.rtm_family, "RTA_DST"), dst); !st)
          return Fail(st.error());
        break;
      case RTA_OIF: {
        auto v = U32(a, "RTA_OIF");
        if (!v) return tl::unexpected(v.error());
        single.ifindex = static_cast<int>(*v);
        has_single = true;
        break;
      }
      case RTA_GATEWAY:
        if (auto st = Store(AddressFrom(a, rtm.rtm_family, "RTA_GATEWAY"), single.gateway); !st)
          return Fail(st.error());
        break;
      case RTA_VIA: {
        if (a.data.size() < 2) return Fail(ErrorCode::kInvalidArgument, "RTA_VIA: short");
        auto ip = AddressFrom({RTA_VIA, a.data.subspan(2)}, Load<std::uint16_t>(a.data), "RTA_VIA");
        if (!ip) return tl::unexpected(ip.error());
        single.gateway = *ip;
        break;
      }
      case RTA_MULTIPATH:
        if (auto st = Store(ParseMultipath(a.data, rtm.rtm_family), r.nexthops); !st)
          return Fail(st.error());
        break;
      default:
        if (auto st = ReadNumber(a, kRouteNumbers, r); !st) return Fail(st.error());
        break;
    }
  }
  if (r.nexthops.empty() && (has_single || single.gateway)) {
    single.flags = static_cast<std::uint8_t>(rtm.rtm_flags & 0xff);
    r.nexthops.push_back(single);
  }
  if (auto st = Store(net::Prefix::Make(dst, rtm.rtm_dst_len), r.dst); !st) return Fail(st.error());
  return r;
}

Result<LinkInfo> ParseLink(const MessageView& msg) {
  auto m = ReadMessage<ifinfomsg>(msg, "RTM_NEWLINK");
  if (!m) return tl::unexpected(m.error());
  const ifinfomsg& ifi = m->head;
  LinkInfo l;
  l.index = ifi.ifi_index;
  l.flags = ifi.ifi_flags;
  for (const Attr& a : m->attrs) {
    switch (a.type) {
      case IFLA_IFNAME:
        l.name = Str(a);
        break;
      case IFLA_ADDRESS:
        l.hwaddr.assign(a.data.begin(), a.data.end());
        break;
      case IFLA_CARRIER: {
        auto v = U8(a, "IFLA_CARRIER");
        if (!v) return tl::unexpected(v.error());
        l.carrier = *v != 0;
        break;
      }
      case IFLA_LINKINFO: {
        auto nested = ParseAttrs(a.data, "IFLA_LINKINFO");
        if (!nested) return tl::unexpected(nested.error());
        for (const Attr& n : *nested) {
          if (n.type == IFLA_INFO_KIND) l.kind = Str(n);
        }
        break;
      }
      default:
        if (auto st = ReadNumber(a, kLinkNumbers, l); !st) return Fail(st.error());
        break;
    }
  }
  if (l.index <= 0) return Fail(ErrorCode::kInvalidArgument, "RTM_NEWLINK: ifindex <= 0");
  return l;
}

namespace {

// A parsed new or deleted link or address as its Event.
template <typename EventOf, typename Info>
Result<std::optional<Event>> AsEvent(Result<Info> info, bool added) {
  if (!info) return tl::unexpected(info.error());
  return Event{EventOf{added ? ChangeKind::kNew : ChangeKind::kDeleted, std::move(*info)}};
}

}  // namespace

Result<std::optional<Event>> ParseEvent(const MessageView& msg) {
  switch (msg.type) {
    case RTM_NEWLINK:
    case RTM_DELLINK:
      return AsEvent<LinkEvent>(ParseLink(msg), msg.type == RTM_NEWLINK);
    case RTM_NEWADDR:
    case RTM_DELADDR:
      return AsEvent<AddressEvent>(ParseAddress(msg), msg.type == RTM_NEWADDR);
    default:
      return std::optional<Event>{};
  }
}

}  // namespace pylon::netlink
