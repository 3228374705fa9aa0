#include "heartbeat/wire.h"
#include "support/net.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace pylon::heartbeat {
namespace {

using Bytes = std::vector<std::uint8_t>;

using test_support::Ip;

KeyRing Ring(std::vector<std::string> keys) { return *KeyRing::Create(std::move(keys)); }

const KeyRing& TestKey() {
  static const KeyRing k = Ring({"0123456789abcdef-test-key"});
  return k;
}

Heartbeat Sample() {
  Heartbeat hb;
  hb.node = election::NodeName("n1");
  hb.boot_id = 0x0102030405060708ULL;
  hb.sequence = 9;
  hb.interval_ms = 100;
  hb.flags = flags::kLinkUp;
  hb.addresses = {Ip("2001:db8::1"), Ip("192.0.2.10")};
  return hb;
}

std::string Hex(std::span<const std::uint8_t> b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (auto c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

// RFC 4231 test cases 1 and 5: HMAC-SHA256, the second truncated to 128 bits as on the wire.
TEST(KeyRingMac, Rfc4231Vectors) {
  const std::string key1(20, '\x0b');
  const std::string data1 = "Hi There";
  Mac m1 =
      Ring({key1}).Compute({reinterpret_cast<const std::uint8_t*>(data1.data()), data1.size()});
  EXPECT_EQ(Hex(m1), "b0344c61d8db38535ca8afceaf0bf12b");
  const std::string key5(20, '\x0c');
  const std::string data5 = "Test With Truncation";
  Mac m5 =
      Ring({key5}).Compute({reinterpret_cast<const std::uint8_t*>(data5.data()), data5.size()});
  EXPECT_EQ(Hex(m5), "a3b6167473100ee06e0c796c2955552b");
}

TEST(Wire, ByteLayout) {
  auto encoded = Encode(Sample(), TestKey());
  ASSERT_TRUE(encoded) << encoded.error().message();
  const Bytes expected_body = {
      'P',  'Y',  'H',  'B',                           // magic
      1,                                               // version
      0x01,                                            // flags: link up
      2,    'n',  '1',                                 // name
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // boot id
      0,    0,    0,    0,    0,    0,    0,    9,     // sequence
      0,    0,    0,    100,                           // interval ms
      0,    1,                                         // window 0 of 1
      0,    1,    192,  0,    2,    10,                // one IPv4 address
      0,    1,                                         // one IPv6 address
      0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,    0,    0, 0, 0, 0, 0, 0, 0, 1,
  };
  ASSERT_EQ(encoded->size(), expected_body.size() + kMacBytes);
  EXPECT_EQ(Bytes(encoded->begin(), encoded->end() - kMacBytes), expected_body);
  const Mac mac = TestKey().Compute(expected_body);
  EXPECT_EQ(Bytes(encoded->end() - kMacBytes, encoded->end()), Bytes(mac.begin(), mac.end()));
  EXPECT_EQ(encoded->size(), EncodedSize(Sample()));
  EXPECT_EQ(encoded->size(), kFixedBytes + 2 + 4 + 16);
}

TEST(Wire, RoundTripPutsIpv4First) {
  auto encoded = Encode(Sample(), TestKey());
  ASSERT_TRUE(encoded);
  auto decoded = Decode(*encoded, TestKey());
  ASSERT_TRUE(decoded) << decoded.error().detail;
  Heartbeat want = Sample();
  want.addresses = {Ip("192.0.2.10"), Ip("2001:db8::1")};
  EXPECT_EQ(*decoded, want);
}

TEST(Wire, FlagsRoundTripAndUnknownBitsDropped) {
  Heartbeat hb = Sample();
  hb.flags = flags::kLeaving | flags::kDeaf | flags::kNotEligible | flags::kStarting | 0xe0;
  hb.window = 2;
  hb.windows = 3;
  auto decoded = Decode(*Encode(hb, TestKey()), TestKey());
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->flags,
            flags::kLeaving | flags::kDeaf | flags::kNotEligible | flags::kStarting);
  EXPECT_EQ(decoded->window, 2);
  EXPECT_EQ(decoded->windows, 3);
  EXPECT_TRUE(decoded->leaving());
  EXPECT_FALSE(decoded->link_up());
  EXPECT_FALSE(decoded->eligible());
  EXPECT_TRUE(decoded->deaf());
  EXPECT_TRUE(decoded->starting());
  EXPECT_TRUE(decoded->partial());
}

TEST(Wire, UnknownFlagBitsOnTheWireAreIgnored) {
  // A future sender sets bit 7: this build still accepts it (re-signed, as that sender would).
  Bytes d = *Encode(Sample(), TestKey());
  d[5] |= 0x80;
  Bytes body(d.begin(), d.end() - kMacBytes);
  Mac m = TestKey().Compute(body);
  std::copy(m.begin(), m.end(), d.end() - kMacBytes);
  auto decoded = Decode(d, TestKey());
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->flags, flags::kLinkUp);
}

TEST(Wire, WrongKeyRejected) {
  auto encoded = Encode(Sample(), TestKey());
  auto decoded = Decode(*encoded, Ring({"another-key-of-16-bytes"}));
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().reason, DropReason::kBadMac);
}

TEST(Wire, KeyRingSignsWithFirstAcceptsAll) {
  const KeyRing old_only = Ring({"old-key-0123456789"});
  const KeyRing rotating = Ring({"new-key-0123456789", "old-key-0123456789"});
  const KeyRing new_only = Ring({"new-key-0123456789"});
  auto from_old = *Encode(Sample(), old_only);
  auto from_rotating = *Encode(Sample(), rotating);
  EXPECT_TRUE(Decode(from_old, rotating));       // step 1: accepts the old key
  EXPECT_TRUE(Decode(from_rotating, new_only));  // signs with the first (new) key
  EXPECT_FALSE(Decode(from_rotating, old_only));
  EXPECT_FALSE(Decode(from_old, new_only));
}

TEST(Wire, EveryTruncationRejected) {
  const Bytes d = *Encode(Sample(), TestKey());
  for (std::size_t n = 0; n < d.size(); ++n) {
    auto decoded = Decode(std::span<const std::uint8_t>(d.data(), n), TestKey());
    ASSERT_FALSE(decoded) << n;
    if (n < kMinDatagramBytes) {
      EXPECT_EQ(decoded.error().reason, DropReason::kTooShort) << n;
    } else {
      EXPECT_EQ(decoded.error().reason, DropReason::kBadMac) << n;
    }
  }
}

TEST(Wire, OversizedRejected) {
  Bytes d = *Encode(Sample(), TestKey());
  d.resize(kMaxDatagramBytes + 1, 0);
  auto decoded = Decode(d, TestKey());
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().reason, DropReason::kTooLong);
}

TEST(Wire, EveryBitFlipRejected) {
  const Bytes d = *Encode(Sample(), TestKey());
  for (std::size_t i = 0; i < d.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes x = d;
      x[i] ^= static_cast<std::uint8_t>(1u << bit);
      auto decoded = Decode(x, TestKey());
      ASSERT_FALSE(decoded) << "byte " << i << " bit " << bit;
      const DropReason want = i < 4    ? DropReason::kBadMagic
                              : i == 4 ? DropReason::kBadVersion
                                       : DropReason::kBadMac;
      EXPECT_EQ(decoded.error().reason, want) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(Wire, GarbageRejectedNeverCrashes) {
  std::mt19937 rng(7);
  const Bytes good = *Encode(Sample(), TestKey());
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes x(rng() % 200);
    for (auto& b : x) b = static_cast<std::uint8_t>(rng());
    if (i % 2 == 0 && x.size() >= 5) std::copy(good.begin(), good.begin() + 5, x.begin());
    rejected += Decode(x, TestKey()) ? 0 : 1;
  }
  EXPECT_EQ(rejected, 20000);
}

// Authenticated but inconsistent bodies (a buggy sender with the right key): kMalformed.
TEST(Wire, MalformedButAuthenticated) {
  auto sign = [](Bytes body) {
    Mac m = TestKey().Compute(body);
    body.insert(body.end(), m.begin(), m.end());
    return body;
  };
  const Bytes header = {'P', 'Y', 'H', 'B', 1, 1};
  auto with = [&](std::initializer_list<std::uint8_t> rest) {
    Bytes b = header;
    b.insert(b.end(), rest);
    return sign(b);
  };
  // boot id, sequence, interval 100, window 0 of 1, no addresses.
  const Bytes tail_ok = {0, 0, 0, 0, 0, 0, 0,   1, 0, 0, 0, 0, 0,
                         0, 0, 1, 0, 0, 0, 100, 0, 1, 0, 0, 0, 0};
  struct Case {
    const char* name;
    Bytes datagram;
  };
  Bytes upper = header;
  upper.insert(upper.end(), {1, 'N'});
  upper.insert(upper.end(), tail_ok.begin(), tail_ok.end());
  Bytes zero_interval = header;
  zero_interval.insert(zero_interval.end(), {1, 'n'});
  zero_interval.insert(zero_interval.end(), tail_ok.begin(), tail_ok.end());
  zero_interval[7 + 1 + 16 + 3] = 0;
  Bytes big_interval = zero_interval;
  big_interval[7 + 1 + 16 + 0] = 0x01;  // 0x01000000 ms
  Bytes v4_overrun = header;
  v4_overrun.insert(v4_overrun.end(), {1, 'n'});
  v4_overrun.insert(v4_overrun.end(), tail_ok.begin(), tail_ok.end());
  v4_overrun[v4_overrun.size() - 3] = 9;  // 9 IPv4 addresses announced, none present
  Bytes trailing = header;
  trailing.insert(trailing.end(), {1, 'n'});
  trailing.insert(trailing.end(), tail_ok.begin(), tail_ok.end());
  trailing.push_back(0);
  Bytes no_windows = header;
  no_windows.insert(no_windows.end(), {1, 'n'});
  no_windows.insert(no_windows.end(), tail_ok.begin(), tail_ok.end());
  no_windows[7 + 1 + 20 + 1] = 0;  // window count 0
  Bytes window_past = no_windows;
  window_past[7 + 1 + 20] = 3;  // window 3 of 2
  window_past[7 + 1 + 20 + 1] = 2;
  Bytes name_overrun = header;
  name_overrun.insert(name_overrun.end(), {200, 'n'});
  name_overrun.insert(name_overrun.end(), tail_ok.begin(), tail_ok.end());
  const Case cases[] = {
      {"empty name", with({0, 'n', 0, 0, 0, 0, 0, 0,   0, 1, 0, 0, 0, 0,
                           0, 0,   0, 1, 0, 0, 0, 100, 0, 1, 0, 0, 0, 0})},
      {"zero windows", sign(no_windows)},
      {"window index past the count", sign(window_past)},
      {"upper-case name", sign(upper)},
      {"zero interval", sign(zero_interval)},
      {"interval above 60 s", sign(big_interval)},
      {"IPv4 count beyond the end", sign(v4_overrun)},
      {"trailing byte", sign(trailing)},
      {"name beyond the end", sign(name_overrun)},
  };
  for (const auto& c : cases) {
    auto decoded = Decode(c.datagram, TestKey());
    ASSERT_FALSE(decoded) << c.name;
    EXPECT_EQ(decoded.error().reason, DropReason::kMalformed)
        << c.name << ": " << decoded.error().detail;
  }
  // The same shape with a valid name and interval decodes (the cases above differ by one field).
  Bytes good = header;
  good.insert(good.end(), {1, 'n'});
  good.insert(good.end(), tail_ok.begin(), tail_ok.end());
  EXPECT_TRUE(Decode(sign(good), TestKey()));
}

TEST(Wire, EncodeRejectsBadInput) {
  Heartbeat hb = Sample();
  hb.node = election::NodeName("");
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb.node = election::NodeName("Node_1");
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb.node = election::NodeName(std::string(254, 'a'));
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb.node = election::NodeName(std::string(253, 'a'));
  EXPECT_TRUE(Encode(hb, TestKey()));
  hb = Sample();
  hb.interval_ms = 0;
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb.interval_ms = kMaxIntervalMs + 1;
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb = Sample();
  hb.windows = 0;
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb.windows = 2;
  hb.window = 2;
  EXPECT_FALSE(Encode(hb, TestKey()));
  hb = Sample();
  hb.addresses.assign(5000, Ip("2001:db8::1"));  // 80 KB
  auto big = Encode(hb, TestKey());
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("exceeds"), std::string::npos);
}

TEST(Wire, LargestAcceptedDatagramRoundTrips) {
  Heartbeat hb = Sample();
  const std::size_t room = kMaxDatagramBytes - kFixedBytes - 2;
  hb.addresses.assign(room / 16, Ip("2001:db8::1"));
  auto encoded = Encode(hb, TestKey());
  ASSERT_TRUE(encoded);
  EXPECT_LE(encoded->size(), kMaxDatagramBytes);
  auto decoded = Decode(*encoded, TestKey());
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->addresses.size(), room / 16);
}

TEST(KeyRing, ParseFileFormat) {
  auto ring =
      KeyRing::Parse("# rotation in progress\nnew-key-0123456789\r\n\nold-key-0123456789\n");
  ASSERT_TRUE(ring) << ring.error().message();
  EXPECT_EQ(ring->size(), 2u);
  EXPECT_FALSE(KeyRing::Parse(""));
  EXPECT_FALSE(KeyRing::Parse("# only a comment\n"));
  auto short_key = KeyRing::Parse("short\n", "/etc/key");
  ASSERT_FALSE(short_key);
  EXPECT_NE(short_key.error().message().find("/etc/key"), std::string::npos);
  EXPECT_NE(short_key.error().message().find("5 bytes"), std::string::npos);
  std::string many;
  for (int i = 0; i < 9; ++i) many += "key-number-" + std::to_string(i) + "-abcdefgh\n";
  EXPECT_FALSE(KeyRing::Parse(many));
  EXPECT_FALSE(KeyRing::Parse(std::string(kMaxKeyBytes + 1, 'k')));
}

TEST(KeyRing, LoadFile) {
  const std::string path = testing::TempDir() + "/hb-key-" + std::to_string(::getpid());
  EXPECT_EQ(LoadKeyRingFile(path).error().code(), ErrorCode::kNotFound);
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("c2VjcmV0LWtleS1mb3ItdGVzdHM=\n", f);
    std::fclose(f);
  }
  auto ring = LoadKeyRingFile(path);
  ASSERT_TRUE(ring) << ring.error().message();
  // The trailing newline is not part of the key: a ring built from the bare text agrees.
  auto hb = Encode(Sample(), *ring);
  EXPECT_TRUE(Decode(*hb, Ring({"c2VjcmV0LWtleS1mb3ItdGVzdHM="})));
  std::remove(path.c_str());
}

Report SampleReport() {
  return Report{election::NodeName("m1"), 0x11, 42, election::NodeName("node-x"), 0x22, 1234,
                ReportKind::kDead};
}

TEST(Report, RoundTripAndLayout) {
  auto bytes = EncodeReport(SampleReport(), TestKey());
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), kReportFixedBytes + 2 + 6);
  EXPECT_TRUE(LooksLikeReport(*bytes));
  EXPECT_EQ((*bytes)[5], 2);  // kind dead
  auto back = DecodeReport(*bytes, TestKey());
  ASSERT_TRUE(back) << back.error().detail;
  EXPECT_EQ(*back, SampleReport());
  // A heartbeat is not a report and the other way round.
  auto hb = Encode(Sample(), TestKey());
  EXPECT_FALSE(LooksLikeReport(*hb));
  EXPECT_EQ(Decode(*bytes, TestKey()).error().reason, DropReason::kBadMagic);
}

TEST(Report, EveryTruncationBitFlipAndWrongKeyRejected) {
  auto bytes = *EncodeReport(SampleReport(), TestKey());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeReport(std::span(bytes).first(n), TestKey())) << n;
  }
  for (std::size_t i = 0; i < bytes.size() * 8; ++i) {
    Bytes flipped = bytes;
    flipped[i / 8] ^= static_cast<std::uint8_t>(1u << (i % 8));
    EXPECT_FALSE(DecodeReport(flipped, TestKey())) << "bit " << i;
  }
  EXPECT_EQ(DecodeReport(bytes, Ring({"another-key-0123456789"})).error().reason,
            DropReason::kBadMac);
  Bytes longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(DecodeReport(longer, TestKey()));
}

TEST(Report, BadNamesAndKindsRejected) {
  Report r = SampleReport();
  r.subject = election::NodeName("Bad_Name");
  EXPECT_FALSE(EncodeReport(r, TestKey()));
  // An authenticated report of an unknown kind is malformed, not a crash.
  auto bytes = *EncodeReport(SampleReport(), TestKey());
  bytes[5] = 9;
  bytes.resize(bytes.size() - kMacBytes);
  const Mac mac = TestKey().Compute(bytes);
  bytes.insert(bytes.end(), mac.begin(), mac.end());
  EXPECT_EQ(DecodeReport(bytes, TestKey()).error().reason, DropReason::kMalformed);
}

}  // namespace
}  // namespace pylon::heartbeat
