// Properties of the netlink builders and parsers: what a builder writes, the parser reads back;
// arbitrary bytes never crash a parser (run under ASan/UBSan in a sanitizer build).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <linux/rtnetlink.h>

#include <cstring>

#include "netlink/message.h"

namespace pylon::netlink {
namespace {

net::Prefix RandomPrefix() {
  const bool v6 = *rc::gen::arbitrary<bool>();
  const auto hi = *rc::gen::arbitrary<std::uint64_t>();
  const auto lo = *rc::gen::arbitrary<std::uint64_t>();
  const net::Family f = v6 ? net::Family::kV6 : net::Family::kV4;
  const net::Uint128 value = v6 ? ((net::Uint128{hi} << 64) | lo) : (lo & 0xffffffffu);
  const int len = *rc::gen::inRange(0, net::FamilyBits(f) + 1);
  return *net::Prefix::Make(net::IpAddress::FromValue(f, value), len);
}

RC_GTEST_PROP(NetlinkProperty, NewAddressBuildThenParseAgrees, ()) {
  AddressSpec s;
  s.ifindex = *rc::gen::inRange(1, 1 << 20);
  s.address = RandomPrefix();
  s.dad = (s.address.family() == net::Family::kV6 && *rc::gen::arbitrary<bool>()) ? Dad::kSkip
                                                                                  : Dad::kPerform;
  s.prefix_route = *rc::gen::arbitrary<bool>() ? PrefixRoute::kSuppress : PrefixRoute::kInstall;
  const auto valid = *rc::gen::inRange<std::uint32_t>(1, 0xffffffffu);
  s.lifetimes.valid = Seconds(valid);
  s.lifetimes.preferred = Seconds(*rc::gen::inRange<std::uint32_t>(0, valid));
  if (*rc::gen::arbitrary<bool>()) s.proto = *rc::gen::arbitrary<std::uint8_t>();
  s.mode = *rc::gen::arbitrary<bool>() ? AddMode::kReplace : AddMode::kCreateExclusive;

  auto msg = BuildNewAddress(s);
  RC_ASSERT(msg.has_value());
  auto views = SplitMessages(*msg);
  RC_ASSERT(views.has_value());
  RC_ASSERT(views->size() == 1u);
  auto parsed = ParseAddress(views->front());
  RC_ASSERT(parsed.has_value());
  RC_ASSERT(parsed->ifindex == s.ifindex);
  RC_ASSERT(parsed->prefix == s.address);
  RC_ASSERT(parsed->has_flag(addr_flags::kNoDad) == (s.dad == Dad::kSkip));
  RC_ASSERT(parsed->has_flag(addr_flags::kNoPrefixRoute) ==
            (s.prefix_route == PrefixRoute::kSuppress));
  RC_ASSERT(parsed->lifetimes == s.lifetimes);
  RC_ASSERT(parsed->proto == s.proto);
  RC_ASSERT(!parsed->peer.has_value());
}

RC_GTEST_PROP(NetlinkProperty, ArbitraryBytesNeverCrashParsers, ()) {
  auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>());
  // Half the time, give it a plausible header so the parsers past SplitMessages are reached.
  if (*rc::gen::arbitrary<bool>() && bytes.size() >= 16) {
    const auto len = static_cast<std::uint32_t>(bytes.size());
    std::memcpy(bytes.data(), &len, 4);
  }
  auto views = SplitMessages(bytes);
  if (!views) return;
  for (const MessageView& v : *views) {
    (void)ParseAddress(v);
    (void)ParseRoute(v);
    (void)ParseLink(v);
    (void)ParseAck(v, "x");
    (void)ParseDone(v, "x");
    (void)ParseEvent(v);
  }
}

}  // namespace
}  // namespace pylon::netlink
