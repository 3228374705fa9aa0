#include "bgp/bird_control.h"

#include <gtest/gtest.h>

#include <string>

namespace pylon::bgp {
namespace {

// Replies as BIRD 2.0.12 wrote them on this machine (`show protocols all`, `show bfd sessions`).
constexpr const char* kProtocolsAll =
    "2002-Name       Proto      Table      State  Since         Info\n"
    "1002-device1    Device     ---        up     05:49:58.645  \n"
    "1006-\n"
    "1002-pylon_vips Direct     ---        up     05:49:58.645  \n"
    "1006-  Channel ipv4\n"
    "     State:          UP\n"
    "     Routes:         1 imported, 0 exported, 1 preferred\n"
    " \n"
    "1002-peer_a     BGP        ---        up     05:50:01.100  Established   \n"
    "1006-  BGP state:          Established\n"
    "     Neighbor address: 192.0.2.1\n"
    "   Channel ipv4\n"
    "     State:          UP\n"
    "     Routes:         0 imported, 2 exported, 0 preferred\n"
    " \n"
    "1002-peer_b     BGP        ---        start  05:50:02.000  Active        Socket: Connection "
    "refused\n"
    "1006-  BGP state:          Active\n"
    "     Neighbor address: 192.0.2.2\n"
    "     Last error:       Socket: Connection refused\n"
    " \n"
    "0000 \n";

TEST(BirdReplyTest, ParsesCodesAndContinuations) {
  std::string raw = std::string("0001 BIRD 2.0.12 ready.\n") + kProtocolsAll;
  std::size_t used = 0;
  auto greet = ParseBirdReply(raw, &used);
  ASSERT_TRUE(greet);
  EXPECT_EQ(greet->code, 1);
  EXPECT_EQ(greet->Text(), "BIRD 2.0.12 ready.");
  raw.erase(0, used);
  auto reply = ParseBirdReply(raw, &used);
  ASSERT_TRUE(reply);
  EXPECT_EQ(used, raw.size());
  EXPECT_EQ(reply->code, 0);
  auto protos = ParseProtocols(*reply);
  ASSERT_EQ(protos.size(), 4u);
  EXPECT_EQ(protos[1].name, "pylon_vips");
  EXPECT_EQ(protos[1].exported, 0);
  EXPECT_EQ(protos[2].name, "peer_a");
  EXPECT_EQ(protos[2].proto, "BGP");
  EXPECT_EQ(protos[2].state, "up");
  EXPECT_TRUE(protos[2].Established());
  EXPECT_EQ(protos[2].exported, 2);
  EXPECT_EQ(protos[2].last_error, "");
  EXPECT_FALSE(protos[3].Established());
  EXPECT_EQ(protos[3].bgp_state, "Active");
  EXPECT_EQ(protos[3].info, "Active Socket: Connection refused");
  EXPECT_EQ(protos[3].last_error, "Socket: Connection refused");
  EXPECT_EQ(protos[3].exported, -1);
}

TEST(BirdReplyTest, IncompleteAndErrorReplies) {
  std::size_t used = 0;
  EXPECT_FALSE(ParseBirdReply("0002-Reading configuration from x\n", &used));
  EXPECT_FALSE(ParseBirdReply("0003 Reconfigured", &used));  // no newline yet
  auto err = ParseBirdReply("9001 syntax error, unexpected CF_SYM_UNDEFINED\n", &used);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 9001);
  auto async = ParseBirdReply("+0000 async\n0003 Reconfigured\n", &used);
  ASSERT_TRUE(async);
  EXPECT_EQ(async->code, 3);
  ASSERT_EQ(async->lines.size(), 1u);
  // Garbage never crashes: it is kept as text until a final line arrives.
  EXPECT_FALSE(ParseBirdReply("\x01\x02\n\n-\n", &used));
}

TEST(BirdReplyTest, BfdSessions) {
  std::string raw =
      "1020-pylon_bfd:\n"
      " IP address                Interface  State      Since         Interval  Timeout\n"
      " 192.0.2.1                 eth0       Up         05:50:19.898    0.100    0.300\n"
      " 2001:db8:1::1             eth0       Down       05:50:19.898    1.000    0.000\n"
      "0000 \n";
  std::size_t used = 0;
  auto r = ParseBirdReply(raw, &used);
  ASSERT_TRUE(r);
  auto s = ParseBfdSessions(*r);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].address, "192.0.2.1");
  EXPECT_EQ(s[0].interface, "eth0");
  EXPECT_EQ(s[0].state, "Up");
  EXPECT_EQ(s[1].state, "Down");
}

TEST(BirdControlTest, ConnectToNothingIsUnavailable) {
  auto c = BirdControl::Connect("/tmp/pylon-no-such-bird.ctl", std::chrono::milliseconds(200));
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace pylon::bgp
