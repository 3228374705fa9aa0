// Properties over random inputs (rapidcheck): the codec round-trips, and split-brain resolution
// leaves exactly one keeper per contested address whatever the claims and deaf flags.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "heartbeat/split_brain.h"
#include "heartbeat/wire.h"

namespace pylon::heartbeat {
namespace {

const KeyRing& Key() {
  static const KeyRing k = *KeyRing::Create({"property-test-key-0123456789"});
  return k;
}

rc::Gen<std::string> GenName() {
  return rc::gen::map(rc::gen::container<std::vector<char>>(rc::gen::elementOf(
                          std::string("abcdefghijklmnopqrstuvwxyz0123456789.-"))),
                      [](std::vector<char> v) {
                        if (v.empty()) v.push_back('n');
                        if (v.size() > kMaxNodeNameBytes) v.resize(kMaxNodeNameBytes);
                        return std::string(v.begin(), v.end());
                      });
}

rc::Gen<net::IpAddress> GenAddress() {
  return rc::gen::map(
      rc::gen::pair(rc::gen::arbitrary<bool>(), rc::gen::arbitrary<std::uint64_t>()),
      [](std::pair<bool, std::uint64_t> p) {
        if (p.first) return net::IpAddress::V4(static_cast<std::uint32_t>(p.second));
        return net::IpAddress::FromValue(net::Family::kV6,
                                         (net::Uint128{0x20010db8u} << 96) | p.second);
      });
}

RC_GTEST_PROP(HeartbeatProperty, EncodeDecodeRoundTrip, ()) {
  Heartbeat hb;
  hb.node = election::NodeName(*GenName());
  hb.boot_id = *rc::gen::arbitrary<std::uint64_t>();
  hb.sequence = *rc::gen::arbitrary<std::uint64_t>();
  hb.interval_ms = *rc::gen::inRange<std::uint32_t>(1, kMaxIntervalMs + 1);
  hb.flags = *rc::gen::arbitrary<std::uint8_t>();
  hb.windows = *rc::gen::inRange<std::uint8_t>(1, 255);
  hb.window = *rc::gen::inRange<std::uint8_t>(0, hb.windows);
  hb.addresses = *rc::gen::container<std::vector<net::IpAddress>>(GenAddress());
  auto encoded = Encode(hb, Key());
  RC_ASSERT(encoded.has_value());
  RC_ASSERT(encoded->size() == EncodedSize(hb));
  auto decoded = Decode(*encoded, Key());
  RC_ASSERT(decoded.has_value());
  Heartbeat want = hb;
  want.flags &= flags::kKnown;
  std::stable_partition(want.addresses.begin(), want.addresses.end(),
                        [](const net::IpAddress& a) { return a.is_v4(); });
  RC_ASSERT(*decoded == want);
  // Any single corrupted byte is rejected.
  auto corrupt = *encoded;
  const auto at = *rc::gen::inRange<std::size_t>(0, corrupt.size());
  corrupt[at] ^= *rc::gen::inRange<std::uint8_t>(1, 255);
  RC_ASSERT(!Decode(corrupt, Key()).has_value());
}

RC_GTEST_PROP(HeartbeatProperty, SplitBrainLeavesExactlyOneKeeper, ()) {
  auto hasher = *election::Sha256Hasher::Create();
  const int nodes = *rc::gen::inRange(2, 6);
  std::vector<Claim> claims;
  for (int i = 0; i < nodes; ++i) {
    Claim c{election::NodeName("node" + std::to_string(i)), *rc::gen::arbitrary<bool>(), {}};
    const auto mask = *rc::gen::inRange<unsigned>(0, 1u << 8);
    for (unsigned a = 0; a < 8; ++a) {
      if ((mask >> a) & 1u) c.addresses.push_back(net::IpAddress::V4(0xc0000200u + a));
    }
    claims.push_back(std::move(c));
  }
  std::map<net::IpAddress, int> claimants, keepers;
  for (std::size_t i = 0; i < claims.size(); ++i) {
    std::vector<Claim> others;
    for (std::size_t j = 0; j < claims.size(); ++j) {
      if (j != i) others.push_back(claims[j]);
    }
    const auto yield = AddressesToYield(claims[i], others, *hasher);
    for (const auto& a : claims[i].addresses) {
      claimants[a]++;
      if (!std::binary_search(yield.begin(), yield.end(), a)) keepers[a]++;
    }
  }
  for (const auto& [address, n] : claimants) RC_ASSERT(keepers[address] == 1);
}

}  // namespace
}  // namespace pylon::heartbeat
