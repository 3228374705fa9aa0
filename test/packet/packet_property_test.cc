// Properties of the ARP and NDP codecs over random addresses: encode/decode round trips, the
// receiver's checksum rule holds, every single-bit error in the checksummed bytes is rejected, and
// arbitrary bytes never crash a decoder.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "packet/arp.h"
#include "packet/ndp.h"

namespace pylon::packet {
namespace {

MacAddress RandomMac() {
  std::array<std::uint8_t, 6> b{};
  for (auto& v : b) v = *rc::gen::arbitrary<std::uint8_t>();
  return MacAddress(b);
}
net::IpAddress RandomV4() { return net::IpAddress::V4(*rc::gen::arbitrary<std::uint32_t>()); }
net::IpAddress RandomUnicastV6() {
  auto hi = *rc::gen::arbitrary<std::uint64_t>();
  hi &= ~(std::uint64_t{0xff} << 56);  // never ff00::/8
  auto lo = *rc::gen::arbitrary<std::uint64_t>();
  return net::IpAddress::FromValue(net::Family::kV6, (net::Uint128{hi} << 64) | lo);
}

RC_GTEST_PROP(PacketProperty, ArpRoundTripAndConflict, ()) {
  const MacAddress own = RandomMac();
  const MacAddress other = RandomMac();
  RC_PRE(own != other);
  const auto ip = RandomV4();
  RC_PRE(ip != net::IpAddress::V4(0));
  for (auto make : {&GratuitousArpRequest, &GratuitousArpReply, &ArpProbe}) {
    auto p = make(other, ip);
    RC_ASSERT(p.has_value());
    auto bytes = EncodeArp(*p);
    auto back = DecodeArp(bytes);
    RC_ASSERT(back.has_value());
    RC_ASSERT(*back == *p);
    RC_ASSERT(ArpConflict(*back, ip, own) == std::optional<MacAddress>(other));
    RC_ASSERT(!ArpConflict(*back, ip, other).has_value());
  }
}

RC_GTEST_PROP(PacketProperty, NaRoundTripChecksumAndBitErrors, ()) {
  const MacAddress mac = RandomMac();
  const auto target = RandomUnicastV6();
  NdpMessage m = *UnsolicitedNa(mac, target);
  if (*rc::gen::arbitrary<bool>()) m = *DadSolicitation(target);
  auto bytes = EncodeNdp(m);
  auto back = DecodeNdp(bytes);
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == m);
  RC_ASSERT(IsValidNdp(*back));
  // One bit flipped anywhere in the addresses or the ICMPv6 message: the checksum catches it.
  const auto at = *rc::gen::inRange<std::size_t>(8, bytes.size());
  const auto bit = *rc::gen::inRange(0, 8);
  bytes[at] = static_cast<std::uint8_t>(bytes[at] ^ (1u << bit));
  RC_ASSERT(!DecodeNdp(bytes).has_value());
}

RC_GTEST_PROP(PacketProperty, ArbitraryBytesNeverCrashDecoders, ()) {
  auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>());
  if (*rc::gen::arbitrary<bool>() && bytes.size() >= 40) {
    bytes[0] = 0x60;
    bytes[6] = 58;
    const auto len = bytes.size() - 40;
    bytes[4] = static_cast<std::uint8_t>(len >> 8);
    bytes[5] = static_cast<std::uint8_t>(len & 0xff);
  }
  (void)DecodeArp(bytes);
  auto n = DecodeNdp(bytes);
  if (n) (void)IsValidNdp(*n);
}

}  // namespace
}  // namespace pylon::packet
