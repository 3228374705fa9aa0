#include "net/ip.h"

#include <gtest/gtest.h>

namespace pylon::net {
namespace {

TEST(IpAddress, ParsesAndPrintsCanonically) {
  struct Row {
    const char *in, *out;
    Family family;
  };
  const Row rows[] = {
      {"192.168.10.225", "192.168.10.225", Family::kV4},
      {"0.0.0.0", "0.0.0.0", Family::kV4},
      {"255.255.255.255", "255.255.255.255", Family::kV4},
      {"fc00:270:154:0:8000::4", "fc00:270:154:0:8000::4", Family::kV6},
      {"FC00:0270:0154:0000:8000:0:0:4", "fc00:270:154:0:8000::4", Family::kV6},
      {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1", Family::kV6},
      {"::", "::", Family::kV6},
      {"::1", "::1", Family::kV6},
  };
  for (const auto& r : rows) {
    auto a = IpAddress::Parse(r.in);
    ASSERT_TRUE(a) << r.in;
    EXPECT_EQ(a->ToString(), r.out) << r.in;
    EXPECT_EQ(a->family(), r.family) << r.in;
  }
}

TEST(IpAddress, RejectsMalformed) {
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.4/24",
                          "fe80::1%eth0", "::g", "1:2:3:4:5:6:7:8:9", " 1.2.3.4x", "abc"}) {
    auto a = IpAddress::Parse(bad);
    EXPECT_FALSE(a) << bad;
    if (!a) {
      EXPECT_EQ(a.error().code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(IpAddress, OrdersByFamilyThenValue) {
  auto a = *IpAddress::Parse("10.0.0.1");
  auto b = *IpAddress::Parse("10.0.0.2");
  auto c = *IpAddress::Parse("::1");
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(IpAddress::V4(0x0a000001), a);
  EXPECT_EQ(a.bytes()[0], 10);
  EXPECT_EQ(a.bytes()[3], 1);
}

TEST(Prefix, KeepsAddressAsWrittenAndMasks) {
  auto p = *Prefix::Parse("fc00:270:154:0:8000::4/126");
  EXPECT_FALSE(p.HasHostBits());
  EXPECT_EQ(p.Network().ToString(), "fc00:270:154:0:8000::4");
  EXPECT_EQ(p.Broadcast().ToString(), "fc00:270:154:0:8000::7");
  EXPECT_EQ(ToDecimal(p.Size()), "4");

  auto q = *Prefix::Parse("10.0.0.10/24");
  EXPECT_TRUE(q.HasHostBits());
  EXPECT_EQ(q.ToString(), "10.0.0.10/24");
  EXPECT_EQ(q.Masked().ToString(), "10.0.0.0/24");
  EXPECT_TRUE(q.Contains(*IpAddress::Parse("10.0.0.255")));
  EXPECT_FALSE(q.Contains(*IpAddress::Parse("10.0.1.0")));
}

TEST(Prefix, SizesAre128BitExact) {
  EXPECT_EQ(ToDecimal(Prefix::Parse("2001:db8::/64")->Size()), "18446744073709551616");
  EXPECT_EQ(ToDecimal(Prefix::Parse("2001:db8::/48")->Size()), "1208925819614629174706176");
  EXPECT_EQ(ToDecimal(Prefix::Parse("10.0.0.0/8")->Size()), "16777216");
  EXPECT_EQ(ToDecimal(Prefix::Parse("0.0.0.0/0")->Size()), "4294967296");
  EXPECT_EQ(ToDecimal(Prefix::Parse("::/0")->Size()), "340282366920938463463374607431768211455");
  EXPECT_EQ(ToDecimal(Prefix::Parse("2001:db8::1/128")->Size()), "1");
}

TEST(Prefix, RejectsBadLengths) {
  for (const char* bad : {"10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "10.0.0.0", "::/129",
                          "10.0.0.0/08", "10.0.0.0/2x", "x/24"}) {
    EXPECT_FALSE(Prefix::Parse(bad)) << bad;
  }
}

TEST(Prefix, ContainsPrefix) {
  auto subnet = *Prefix::Parse("fc00:270:154:0::/64");
  EXPECT_TRUE(subnet.Contains(*Prefix::Parse("fc00:270:154:0:8000::4/126")));
  EXPECT_FALSE(subnet.Contains(*Prefix::Parse("fc00:270:154:1::/126")));
  EXPECT_FALSE(subnet.Contains(*Prefix::Parse("fc00:270:154::/48")));
  EXPECT_FALSE(subnet.Contains(*Prefix::Parse("10.0.0.0/8")));
}

TEST(AddressRange, ParsesRangesAndSingles) {
  auto r = *AddressRange::Parse("192.168.10.225-192.168.10.229");
  EXPECT_EQ(ToDecimal(r.Size()), "5");
  EXPECT_EQ(r.ToString(), "192.168.10.225-192.168.10.229");
  auto s = *AddressRange::Parse(" 2001:db8::1 - 2001:db8::ffff ");
  EXPECT_EQ(ToDecimal(s.Size()), "65535");
  auto one = *AddressRange::Parse("203.0.113.7");
  EXPECT_EQ(ToDecimal(one.Size()), "1");
  EXPECT_EQ(one.ToString(), "203.0.113.7");
}

TEST(AddressRange, RejectsBadRanges) {
  auto back = AddressRange::Parse("10.0.0.9-10.0.0.1");
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message().find("start after end"), std::string::npos);
  auto mixed = AddressRange::Parse("10.0.0.1-::1");
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.error().message().find("mixes"), std::string::npos);
  EXPECT_FALSE(AddressRange::Parse("10.0.0.1-"));
  EXPECT_FALSE(AddressRange::Parse("-10.0.0.1"));
}

TEST(AddressRange, OverlapAndContainment) {
  auto a = *AddressRange::Parse("10.0.0.0-10.0.0.255");
  auto b = *AddressRange::Parse("10.0.0.10-10.0.0.20");
  auto c = *AddressRange::Parse("10.0.1.0-10.0.1.5");
  EXPECT_TRUE(a.Overlaps(b));
  EXPECT_TRUE(b.Overlaps(a));
  EXPECT_TRUE(a.Contains(b));
  EXPECT_FALSE(b.Contains(a));
  EXPECT_FALSE(a.Overlaps(c));
  EXPECT_FALSE(a.Overlaps(*AddressRange::Parse("::-::ffff")));
}

TEST(Decimal, RoundTrips) {
  EXPECT_EQ(ToDecimal(*ParseDecimal("340282366920938463463374607431768211455")),
            "340282366920938463463374607431768211455");
  EXPECT_FALSE(ParseDecimal("340282366920938463463374607431768211456"));
  EXPECT_FALSE(ParseDecimal("12a"));
  EXPECT_FALSE(ParseDecimal(""));
}

}  // namespace
}  // namespace pylon::net
