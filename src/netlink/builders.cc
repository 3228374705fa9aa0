// Builders of rtnetlink requests. libmnl lays out headers and attributes into a scratch buffer;
// the result is trimmed to nlmsg_len.
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

#include "netlink/message.h"

namespace pylon::netlink {
namespace {

constexpr std::size_t kScratch = 512;

// Owns the scratch buffer of one message under construction.
class Builder {
 public:
  Builder(std::uint16_t type, std::uint16_t flags) : buf_(kScratch, 0) {
    nlh_ = mnl_nlmsg_put_header(buf_.data());
    nlh_->nlmsg_type = type;
    nlh_->nlmsg_flags = flags;
  }
  template <typename T>
  T* Extra() {
    return static_cast<T*>(mnl_nlmsg_put_extra_header(nlh_, sizeof(T)));
  }
  nlmsghdr* nlh() { return nlh_; }
  Message Finish() {
    buf_.resize(nlh_->nlmsg_len);
    return std::move(buf_);
  }

 private:
  Message buf_;
  nlmsghdr* nlh_;
};

unsigned char FamilyToAf(net::Family f) { return f == net::Family::kV4 ? AF_INET : AF_INET6; }

void PutAddress(nlmsghdr* nlh, std::uint16_t type, const net::IpAddress& a) {
  auto bytes = a.bytes();
  mnl_attr_put(nlh, type, a.is_v4() ? 4 : 16, bytes.data());
}

// ifaddrmsg + IFA_LOCAL + IFA_ADDRESS (both the local address: no point-to-point peer).
void PutIfaddr(Builder& b, int ifindex, const net::Prefix& p, std::uint32_t ifa_flags) {
  auto* ifa = b.Extra<ifaddrmsg>();
  ifa->ifa_family = FamilyToAf(p.family());
  ifa->ifa_prefixlen = static_cast<unsigned char>(p.length());
  ifa->ifa_flags = static_cast<unsigned char>(ifa_flags & 0xff);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = static_cast<unsigned>(ifindex);
  PutAddress(b.nlh(), IFA_LOCAL, p.address());
  PutAddress(b.nlh(), IFA_ADDRESS, p.address());
}

}  // namespace

AddressSpec VipAddressSpec(int ifindex, const net::Prefix& address, Seconds valid_lifetime,
                           std::optional<std::uint8_t> proto, PrefixRoute prefix_route) {
  AddressSpec s;
  s.ifindex = ifindex;
  s.address = address;
  s.prefix_route = prefix_route;
  s.proto = proto;
  s.lifetimes.valid = valid_lifetime;
  if (address.family() == net::Family::kV6) {
    s.dad = Dad::kSkip;
    s.lifetimes.preferred = Seconds{0};
  } else {
    s.lifetimes.preferred = valid_lifetime;
  }
  return s;
}

Status ValidateAddressSpec(const AddressSpec& s) {
  const std::string what = "address " + s.address.ToString();
  if (s.ifindex <= 0) return Fail(ErrorCode::kInvalidArgument, what + ": ifindex must be > 0");
  if (s.address.length() < 0 || s.address.length() > net::FamilyBits(s.address.family())) {
    return Fail(ErrorCode::kInvalidArgument, what + ": bad prefix length");
  }
  if (s.dad == Dad::kSkip && s.address.family() == net::Family::kV4) {
    return Fail(ErrorCode::kInvalidArgument, what + ": IFA_F_NODAD is IPv6-only");
  }
  if (s.lifetimes.valid.count() <= 0 || s.lifetimes.valid > kForever) {
    return Fail(ErrorCode::kInvalidArgument, what + ": valid lifetime must be in 1..2^32-1 s");
  }
  if (s.lifetimes.preferred.count() < 0 || s.lifetimes.preferred > s.lifetimes.valid) {
    return Fail(ErrorCode::kInvalidArgument, what + ": preferred lifetime exceeds valid lifetime");
  }
  return Ok();
}

Result<Message> BuildNewAddress(const AddressSpec& s) {
  if (auto st = ValidateAddressSpec(s); !st) return tl::unexpected(st.error());
  std::uint32_t flags = 0;
  if (s.dad == Dad::kSkip) flags |= IFA_F_NODAD;
  if (s.prefix_route == PrefixRoute::kSuppress) flags |= IFA_F_NOPREFIXROUTE;
  std::uint16_t nl_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
  nl_flags |= s.mode == AddMode::kCreateExclusive ? NLM_F_EXCL : NLM_F_REPLACE;
  Builder b(RTM_NEWADDR, nl_flags);
  PutIfaddr(b, s.ifindex, s.address, flags);
  nlmsghdr* nlh = b.nlh();
  if (s.address.family() == net::Family::kV4 && s.address.length() < 31) {
    PutAddress(nlh, IFA_BROADCAST, s.address.Broadcast());
  }
  mnl_attr_put_u32(nlh, IFA_FLAGS, flags);
  if (s.lifetimes.valid != kForever || s.lifetimes.preferred != kForever) {
    ifa_cacheinfo ci{};
    ci.ifa_prefered = static_cast<std::uint32_t>(s.lifetimes.preferred.count());
    ci.ifa_valid = static_cast<std::uint32_t>(s.lifetimes.valid.count());
    mnl_attr_put(nlh, IFA_CACHEINFO, sizeof(ci), &ci);
  }
  if (s.proto) mnl_attr_put_u8(nlh, IFA_PROTO, *s.proto);
  return b.Finish();
}

Message BuildDeleteAddress(int ifindex, const net::Prefix& address) {
  Builder b(RTM_DELADDR, NLM_F_REQUEST | NLM_F_ACK);
  PutIfaddr(b, ifindex, address, 0);
  return b.Finish();
}

Message BuildGetAddresses(std::optional<net::Family> family) {
  Builder b(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
  auto* ifa = b.Extra<ifaddrmsg>();
  ifa->ifa_family = family ? FamilyToAf(*family) : AF_UNSPEC;
  return b.Finish();
}

Message BuildGetRoutes(net::Family family) {
  Builder b(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP);
  auto* rtm = b.Extra<rtmsg>();
  rtm->rtm_family = FamilyToAf(family);
  return b.Finish();
}

Message BuildGetLinks() {
  Builder b(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP);
  auto* ifi = b.Extra<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  return b.Finish();
}

namespace {
Status CheckLinkName(std::string_view name) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    return Fail(ErrorCode::kInvalidArgument,
                "interface name '" + std::string(name) + "' must be 1-15 characters");
  }
  for (char c : name) {
    if (c == '/' || c == ':' || c == '\0' || c == ' ') {
      return Fail(ErrorCode::kInvalidArgument,
                  "interface name '" + std::string(name) + "' has a forbidden character");
    }
  }
  return Ok();
}
}  // namespace

Result<Message> BuildGetLinkByName(std::string_view name) {
  if (auto st = CheckLinkName(name); !st) return tl::unexpected(st.error());
  Builder b(RTM_GETLINK, NLM_F_REQUEST);
  auto* ifi = b.Extra<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(b.nlh(), IFLA_IFNAME, std::string(name).c_str());
  return b.Finish();
}

Result<Message> BuildNewLink(std::string_view name, std::string_view kind) {
  if (auto st = CheckLinkName(name); !st) return tl::unexpected(st.error());
  if (kind.empty() || kind.size() > 32) {
    return Fail(ErrorCode::kInvalidArgument, "link kind must be 1-32 characters");
  }
  Builder b(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  auto* ifi = b.Extra<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(b.nlh(), IFLA_IFNAME, std::string(name).c_str());
  nlattr* info = mnl_attr_nest_start(b.nlh(), IFLA_LINKINFO);
  mnl_attr_put_str(b.nlh(), IFLA_INFO_KIND, std::string(kind).c_str());
  mnl_attr_nest_end(b.nlh(), info);
  return b.Finish();
}

Message BuildSetLinkUp(int ifindex, bool up) {
  Builder b(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
  auto* ifi = b.Extra<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = up ? IFF_UP : 0;
  ifi->ifi_change = IFF_UP;
  return b.Finish();
}

Message BuildDeleteLink(int ifindex) {
  Builder b(RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK);
  auto* ifi = b.Extra<ifinfomsg>();
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  return b.Finish();
}

}  // namespace pylon::netlink
