// Byte-level tests of the ARP and NDP encoders/decoders against the RFC layouts. Expected bytes are
// written out field by field here; checksums are checked against vectors computed independently
// (Python: ipaddress + struct, the RFC 1071 one's-complement sum over the RFC 8200 pseudo-header)
// and by the receiver's rule that the sum over pseudo-header + message is 0xffff.
#include <gtest/gtest.h>

#include <array>
#include <functional>

#include "packet/announcer.h"
#include "packet/arp.h"
#include "packet/claims.h"
#include "packet/mac.h"
#include "packet/ndp.h"
#include "support/net.h"
#include "support/packet/fake_announcer.h"

namespace pylon::packet {
namespace {

using test_support::Ip;
MacAddress Mac(const char* s) { return *MacAddress::Parse(s); }

// RFC 1071 sum over the pseudo-header and the ICMPv6 message, checksum included.
std::uint16_t ReceiverSum(const std::vector<std::uint8_t>& packet) {
  std::vector<std::uint8_t> data(packet.begin() + 8, packet.begin() + 40);  // src + dst
  const std::size_t len = packet.size() - 40;
  for (int shift : {24, 16, 8, 0}) data.push_back(static_cast<std::uint8_t>(len >> shift));
  data.insert(data.end(), {0, 0, 0, 58});
  data.insert(data.end(), packet.begin() + 40, packet.end());
  if (data.size() % 2) data.push_back(0);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < data.size(); i += 2) sum += (data[i] << 8) | data[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

TEST(Mac, MulticastMappings) {
  EXPECT_EQ(SolicitedNodeAddress(Ip("2001:db8::abcd:1234:5678")), Ip("ff02::1:ff34:5678"));
  EXPECT_EQ(Ipv6MulticastMac(Ip("ff02::1:ff34:5678")), Mac("33:33:ff:34:56:78"));
  EXPECT_EQ(Ipv6MulticastMac(AllNodesAddress()), Mac("33:33:00:00:00:01"));
}

TEST(Arp, GratuitousRequestLayout) {
  auto p = GratuitousArpRequest(Mac("02:00:00:00:00:01"), Ip("192.0.2.10"));
  ASSERT_TRUE(p.has_value());
  const std::array<std::uint8_t, 28> want = {
      0x00, 0x01,                          // htype Ethernet
      0x08, 0x00,                          // ptype IPv4
      6,    4,                             // hlen, plen
      0x00, 0x01,                          // op request (RFC 5227 §3: request form)
      0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  // sender MAC
      192,  0,    2,    10,                // sender IP = VIP
      0,    0,    0,    0,    0,    0,     // target MAC zero
      192,  0,    2,    10,                // target IP = VIP
  };
  EXPECT_EQ(EncodeArp(*p), want);
  auto reply = GratuitousArpReply(Mac("02:00:00:00:00:01"), Ip("192.0.2.10"));
  ASSERT_TRUE(reply.has_value());
  auto rb = EncodeArp(*reply);
  EXPECT_EQ(rb[7], 2);
  EXPECT_EQ(rb[18], 0x02);  // target MAC = sender MAC
  EXPECT_EQ(rb[23], 0x01);
  EXPECT_FALSE(GratuitousArpRequest(Mac("02:00:00:00:00:01"), Ip("2001:db8::1")).has_value());
}

TEST(Arp, ProbeLayoutAndRoundTrip) {
  auto p = ArpProbe(Mac("02:00:00:00:00:02"), Ip("192.0.2.77"));
  ASSERT_TRUE(p.has_value());
  auto b = EncodeArp(*p);
  EXPECT_EQ(b[7], 1);
  for (int i = 14; i < 18; ++i) EXPECT_EQ(b[i], 0) << "sender IP 0.0.0.0, byte " << i;
  for (int i = 18; i < 24; ++i) EXPECT_EQ(b[i], 0) << "target MAC zero, byte " << i;
  EXPECT_EQ(b[24], 192);
  EXPECT_EQ(b[27], 77);
  std::vector<std::uint8_t> padded(b.begin(), b.end());
  padded.resize(46, 0);  // Ethernet minimum payload padding
  auto back = DecodeArp(padded);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, *p);
}

TEST(Arp, DecodeRejectsNonEthernetIpv4) {
  auto good = EncodeArp(*ArpProbe(Mac("02:00:00:00:00:02"), Ip("192.0.2.77")));
  struct Row {
    const char* name;
    std::size_t offset;
    std::uint8_t value;
  };
  for (const Row& r : std::vector<Row>{
           {"htype 6", 1, 6}, {"ptype 0x86dd", 2, 0x86}, {"hlen 8", 4, 8}, {"plen 16", 5, 16}}) {
    auto bad = good;
    bad[r.offset] = r.value;
    EXPECT_FALSE(DecodeArp(bad).has_value()) << r.name;
  }
  EXPECT_FALSE(DecodeArp(std::span<const std::uint8_t>(good.data(), 27)).has_value());
}

TEST(Arp, ConflictDetection) {
  const MacAddress own = Mac("02:00:00:00:00:01");
  const MacAddress other = Mac("02:00:00:00:00:99");
  const auto vip = Ip("192.0.2.10");
  struct Row {
    const char* name;
    ArpPacket packet;
    std::optional<MacAddress> want;
  };
  const std::vector<Row> rows = {
      {"reply from the owner", {kArpReply, other, vip, own, Ip("0.0.0.0")}, other},
      {"gratuitous ARP from another host", *GratuitousArpRequest(other, vip), other},
      {"another host probing the same address", *ArpProbe(other, vip), other},
      {"our own probe looped back", *ArpProbe(own, vip), std::nullopt},
      {"unrelated request",
       {kArpRequest, other, Ip("192.0.2.2"), MacAddress(), Ip("192.0.2.3")},
       std::nullopt},
      {"another host asking for the address (not a claim)",
       {kArpRequest, other, Ip("192.0.2.2"), MacAddress(), vip},
       std::nullopt},
  };
  for (const Row& r : rows) EXPECT_EQ(ArpConflict(r.packet, vip, own), r.want) << r.name;
}

TEST(Ndp, UnsolicitedNaLayoutAndChecksum) {
  auto na = UnsolicitedNa(Mac("02:00:00:00:00:01"), Ip("2001:db8::10"));
  ASSERT_TRUE(na.has_value());
  NdpMessage m = *na;
  auto b = EncodeNdp(m);
  ASSERT_EQ(b.size(), 40u + 24u + 8u);
  // IPv6 header (RFC 8200 §3).
  EXPECT_EQ(b[0], 0x60);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ((b[4] << 8) | b[5], 32);  // payload length
  EXPECT_EQ(b[6], 58);                // next header ICMPv6
  EXPECT_EQ(b[7], 255);               // hop limit
  auto src = Ip("2001:db8::10").bytes();
  auto dst = Ip("ff02::1").bytes();
  EXPECT_TRUE(std::equal(src.begin(), src.end(), b.begin() + 8));
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), b.begin() + 24));
  // ICMPv6 NA (RFC 4861 §4.4).
  EXPECT_EQ(b[40], 136);
  EXPECT_EQ(b[41], 0);
  EXPECT_EQ((b[42] << 8) | b[43], 0xf90c);  // independent vector (see file comment)
  EXPECT_EQ(b[44], 0x20);                   // R=0 S=0 O=1
  EXPECT_EQ(b[45] | b[46] | b[47], 0);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), b.begin() + 48));  // target
  const std::array<std::uint8_t, 8> option = {2, 1, 0x02, 0, 0, 0, 0, 0x01};
  EXPECT_TRUE(std::equal(option.begin(), option.end(), b.begin() + 64));
  EXPECT_EQ(ReceiverSum(b), 0xffff);
  EXPECT_EQ(DestinationMac(m), Mac("33:33:00:00:00:01"));
  EXPECT_TRUE(IsValidNdp(m));
}

TEST(Ndp, NaWithLinkLocalSource) {
  auto na = UnsolicitedNa(Mac("02:00:00:00:00:01"), Ip("2001:db8::10"), Ip("fe80::1"));
  ASSERT_TRUE(na.has_value());
  auto b = EncodeNdp(*na);
  auto ll = Ip("fe80::1").bytes();
  EXPECT_TRUE(std::equal(ll.begin(), ll.end(), b.begin() + 8));
  EXPECT_EQ(ReceiverSum(b), 0xffff);
  EXPECT_FALSE(UnsolicitedNa(Mac("02:00:00:00:00:01"), Ip("192.0.2.1")).has_value());
}

TEST(Ndp, DadSolicitationLayout) {
  auto ns = DadSolicitation(Ip("2001:db8::10"));
  ASSERT_TRUE(ns.has_value());
  NdpMessage m = *ns;
  auto b = EncodeNdp(m);
  ASSERT_EQ(b.size(), 40u + 24u);  // no source link-layer option from ::
  for (int i = 8; i < 24; ++i) EXPECT_EQ(b[i], 0) << "source :: byte " << i;
  auto dst = Ip("ff02::1:ff00:10").bytes();
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), b.begin() + 24));
  EXPECT_EQ(b[7], 255);
  EXPECT_EQ(b[40], 135);
  EXPECT_EQ((b[42] << 8) | b[43], 0x4ccf);  // independent vector
  EXPECT_EQ(b[44] | b[45] | b[46] | b[47], 0);
  auto target = Ip("2001:db8::10").bytes();
  EXPECT_TRUE(std::equal(target.begin(), target.end(), b.begin() + 48));
  EXPECT_EQ(DestinationMac(m), Mac("33:33:ff:00:00:10"));
  EXPECT_EQ(ReceiverSum(b), 0xffff);
}

TEST(Ndp, DecodeRoundTripAndRejections) {
  NdpMessage na = *UnsolicitedNa(Mac("02:00:00:00:00:01"), Ip("2001:db8::10"));
  auto bytes = EncodeNdp(na);
  auto back = DecodeNdp(bytes);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(*back, na);

  NeighborSolicitation ns;
  ns.source = Ip("2001:db8::2");
  ns.destination = Ip("ff02::1:ff00:10");
  ns.target = Ip("2001:db8::10");
  ns.source_lladdr = Mac("02:00:00:00:00:02");
  auto ns_back = DecodeNdp(EncodeNdp(NdpMessage{ns}));
  ASSERT_TRUE(ns_back.has_value());
  EXPECT_EQ(*ns_back, NdpMessage{ns});

  struct Row {
    const char* name;
    std::function<void(std::vector<std::uint8_t>&)> damage;
  };
  const std::vector<Row> rows = {
      {"bad checksum", [](auto& b) { b[43] ^= 1; }},
      {"target changed after checksum", [](auto& b) { b[63] ^= 1; }},
      {"IPv4 version", [](auto& b) { b[0] = 0x45; }},
      {"next header UDP", [](auto& b) { b[6] = 17; }},
      {"truncated", [](auto& b) { b.resize(60); }},
      {"payload length beyond packet", [](auto& b) { b[5] = 200; }},
      {"zero-length option", [](auto& b) { b[65] = 0; }},
  };
  for (const Row& r : rows) {
    auto b = bytes;
    r.damage(b);
    EXPECT_FALSE(DecodeNdp(b).has_value()) << r.name;
  }
  // Hop limit is reported and judged by IsValidNdp (the checksum does not cover it).
  auto hop = bytes;
  hop[7] = 64;
  auto decoded = DecodeNdp(hop);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_FALSE(IsValidNdp(*decoded));
  auto solicited = std::get<NeighborAdvertisement>(na);
  solicited.solicited = true;  // S=1 to a multicast destination is invalid (§7.1.2)
  EXPECT_FALSE(IsValidNdp(NdpMessage{solicited}));
}

TEST(FakeAnnouncer, RecordsAndAnswers) {
  FakeAnnouncer fa;
  Interface eth{2, Mac("02:00:00:00:00:01")};
  ASSERT_TRUE(fa.Announce(eth, Ip("192.0.2.10")));
  EXPECT_EQ(fa.sent().size(), 1u);
  fa.SetOwner(Ip("192.0.2.10"), Mac("02:00:00:00:00:99"));
  auto owner = fa.ProbeOwner(eth, Ip("192.0.2.10"), std::chrono::milliseconds(100));
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(*owner, Mac("02:00:00:00:00:99"));
  EXPECT_FALSE(fa.ProbeOwner(eth, Ip("192.0.2.11"), std::chrono::milliseconds(100))->has_value());
  fa.FailNext(Error(ErrorCode::kPermission, "no CAP_NET_RAW"));
  EXPECT_FALSE(fa.Announce(eth, Ip("192.0.2.10")).has_value());
  EXPECT_EQ(fa.sent().size(), 1u);
}

TEST(FakeAnnouncer, ProbeIgnoresKnownMacs) {
  FakeAnnouncer fa;
  Interface eth{2, Mac("02:00:00:00:00:01")};
  fa.SetOwner(Ip("192.0.2.10"), Mac("02:00:00:00:00:99"));
  ProbeOptions o;
  o.ignore = {Mac("02:00:00:00:00:99")};
  auto owner = fa.Probe(eth, Ip("192.0.2.10"), o);
  ASSERT_TRUE(owner.has_value());
  EXPECT_FALSE(owner->has_value());
  EXPECT_EQ(fa.probes().size(), 1u);
}

// --- What a received packet claims (RFC 5227 §2.1.1 / §2.4, RFC 4862 §5.4.3) -----------------

const MacAddress kOwn = Mac("02:00:00:00:00:01");
const MacAddress kMember = Mac("02:00:00:00:00:02");
const MacAddress kOther = Mac("02:00:00:00:00:99");

struct ArpClaimCase {
  std::string name;
  ArpPacket packet;
  std::optional<MacAddress> probe_answer;  // while probing 192.0.2.10, ignoring kOwn + kMember
  std::optional<std::string> claim;        // the address claimed while holding, if any
};

class ArpClaims : public ::testing::TestWithParam<ArpClaimCase> {};

TEST_P(ArpClaims, Classify) {
  const auto& c = GetParam();
  const std::vector<MacAddress> ignore = {kOwn, kMember};
  EXPECT_EQ(ProbeAnswerArp(c.packet, Ip("192.0.2.10"), ignore), c.probe_answer);
  auto claim = ClaimInArp(c.packet);
  ASSERT_EQ(claim.has_value(), c.claim.has_value());
  if (claim) {
    EXPECT_EQ(claim->address, Ip(c.claim->c_str()));
    EXPECT_EQ(claim->mac, c.packet.sender_mac);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ArpClaims,
    ::testing::Values(
        ArpClaimCase{"ReplyFromOwner",
                     {kArpReply, kOther, Ip("192.0.2.10"), kOwn, Ip("0.0.0.0")},
                     kOther,
                     "192.0.2.10"},
        ArpClaimCase{"GratuitousFromOwner", *GratuitousArpRequest(kOther, Ip("192.0.2.10")), kOther,
                     "192.0.2.10"},
        ArpClaimCase{"RequestFromOwnerForSomeoneElse",
                     {kArpRequest, kOther, Ip("192.0.2.10"), MacAddress(), Ip("192.0.2.1")},
                     kOther,
                     "192.0.2.10"},
        ArpClaimCase{"SimultaneousProbe", *ArpProbe(kOther, Ip("192.0.2.10")), kOther,
                     std::nullopt},
        ArpClaimCase{"ProbeForAnotherAddress", *ArpProbe(kOther, Ip("192.0.2.11")), std::nullopt,
                     std::nullopt},
        ArpClaimCase{"MemberAnswers",
                     {kArpReply, kMember, Ip("192.0.2.10"), kOwn, Ip("0.0.0.0")},
                     std::nullopt,
                     "192.0.2.10"},
        ArpClaimCase{"OurOwnProbe", *ArpProbe(kOwn, Ip("192.0.2.10")), std::nullopt, std::nullopt},
        ArpClaimCase{"UnrelatedRequest",
                     {kArpRequest, kOther, Ip("192.0.2.7"), MacAddress(), Ip("192.0.2.1")},
                     std::nullopt,
                     "192.0.2.7"}),
    [](const auto& p) { return p.param.name; });

TEST(NdpClaims, Classify) {
  const std::vector<MacAddress> ignore = {kOwn, kMember};
  const auto target = Ip("2001:db8::10");
  NdpMessage na_other = *UnsolicitedNa(kOther, target);
  NdpMessage na_member = *UnsolicitedNa(kMember, target);
  NdpMessage dad_other = *DadSolicitation(target);
  NeighborSolicitation ns_from_vip = std::get<NeighborSolicitation>(dad_other);
  ns_from_vip.source = target;
  ns_from_vip.destination = SolicitedNodeAddress(Ip("2001:db8::1"));
  ns_from_vip.target = Ip("2001:db8::1");
  ns_from_vip.source_lladdr = kOther;
  NdpMessage ns_used{ns_from_vip};
  NeighborAdvertisement bad_hop = std::get<NeighborAdvertisement>(na_other);
  bad_hop.hop_limit = 64;

  // While probing.
  EXPECT_EQ(ProbeAnswerNdp(na_other, kOther, target, ignore), kOther);
  EXPECT_EQ(ProbeAnswerNdp(na_member, kMember, target, ignore), std::nullopt);
  EXPECT_EQ(ProbeAnswerNdp(dad_other, kOther, target, ignore), kOther);  // simultaneous DAD
  EXPECT_EQ(ProbeAnswerNdp(dad_other, kOwn, target, ignore), std::nullopt);
  EXPECT_EQ(ProbeAnswerNdp(na_other, kOther, Ip("2001:db8::11"), ignore), std::nullopt);
  EXPECT_EQ(ProbeAnswerNdp(NdpMessage{bad_hop}, kOther, target, ignore), std::nullopt);
  // While holding.
  EXPECT_EQ(ClaimInNdp(na_other, kOther), (Claim{target, kOther}));
  EXPECT_EQ(ClaimInNdp(ns_used, kOther), (Claim{target, kOther}));
  EXPECT_EQ(ClaimInNdp(dad_other, kOther), std::nullopt);
  EXPECT_EQ(ClaimInNdp(NdpMessage{bad_hop}, kOther), std::nullopt);
}

}  // namespace
}  // namespace pylon::packet
