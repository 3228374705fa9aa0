#include "election/hash.h"

#include <gtest/gtest.h>

#include "net/ip.h"

namespace pylon::election {
namespace {

// External vectors, computed outside this code base with coreutils:
//   printf 'node1#192.0.2.10' | sha256sum
//   printf 'node1#2001:db8::10' | sha256sum
constexpr const char* kV4Vector =
    "8ca210481d15cae5b41525a6e5fbf545b6c70c6718346ab9cb82349c0faaf214";
constexpr const char* kV6Vector =
    "039565c79d3912be7329488022cd751d5ff26f0013d0fd439461db33e07435a0";

TEST(ElectionHash, MatchesExternalSha256Vectors) {
  auto hasher = Sha256Hasher::Create();
  ASSERT_TRUE(hasher);
  EXPECT_EQ(DigestHex((*hasher)->Hash("node1", "192.0.2.10")), kV4Vector);
  EXPECT_EQ(DigestHex((*hasher)->Hash("node1", "2001:db8::10")), kV6Vector);
  // The reused context gives the same answer on repeat and for the one-shot helper.
  EXPECT_EQ(DigestHex((*hasher)->Hash("node1", "192.0.2.10")), kV4Vector);
  auto one_shot = ElectionDigest("node1", "192.0.2.10");
  ASSERT_TRUE(one_shot);
  EXPECT_EQ(DigestHex(*one_shot), kV4Vector);
}

TEST(ElectionHash, UsesCanonicalAddressText) {
  // The elector hashes IpAddress::ToString(): a non-canonical spelling must land on the vector.
  auto a = net::IpAddress::Parse("2001:0DB8:0:0:0:0:0:0010");
  ASSERT_TRUE(a);
  auto d = ElectionDigest("node1", a->ToString());
  ASSERT_TRUE(d);
  EXPECT_EQ(DigestHex(*d), kV6Vector);
}

TEST(ElectionHash, RankIsTheBigEndianPrefix) {
  Digest d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(i + 1);
  EXPECT_EQ(DigestRank(d), 0x0102030405060708ULL);
  auto v = ElectionDigest("node1", "192.0.2.10");
  ASSERT_TRUE(v);
  EXPECT_EQ(DigestRank(*v), 0x8ca210481d15cae5ULL);
}

}  // namespace
}  // namespace pylon::election
