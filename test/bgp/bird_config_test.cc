#include "bgp/bird_config.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include "support/shell.h"

namespace pylon::bgp {
namespace {

Peer MakePeer(const std::string& name, const char* address, std::uint32_t peer_asn = 64512) {
  Peer p;
  p.name = name;
  p.peer_address = *net::IpAddress::Parse(address);
  p.peer_asn = peer_asn;
  p.my_asn = 64513;
  return p;
}

RenderInput Input() {
  RenderInput in;
  in.node_name = "node1";
  in.node = Json{{"metadata", {{"name", "node1"}, {"labels", {{"rack", "r1"}}}}}};
  in.node_ipv4 = *net::IpAddress::Parse("192.0.2.11");
  return in;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// BIRD itself parses the rendered text (bird -p): what we render is what the daemon accepts.
void ExpectBirdAccepts(const std::string& text) {
  char path[] = "/tmp/pylon-bird-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  const auto [rc, out] = test_support::Shell(std::string("bird -p -c ") + path);
  std::remove(path);
  EXPECT_EQ(rc, 0) << out << "\n--- config ---\n" << text;
}

TEST(BirdConfigTest, NoPeersStillReadsTheVirtualInterface) {
  auto r = RenderBirdConfig(Input());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(Contains(r->text, "router id 192.0.2.11;"));
  EXPECT_TRUE(Contains(r->text, "protocol direct pylon_vips"));
  EXPECT_TRUE(Contains(r->text, "interface \"kube-lb0\";"));
  EXPECT_FALSE(Contains(r->text, "protocol bgp"));
  EXPECT_TRUE(r->peers.empty());
  ExpectBirdAccepts(r->text);
}

struct Case {
  const char* name;
  std::function<void(RenderInput&)> setup;
  std::vector<std::string> want;  // substrings of the text
  std::vector<std::string> unwanted;
  std::vector<std::string> peers;    // protocols rendered
  std::vector<std::string> skipped;  // peers skipped
};

TEST(BirdConfigTest, Scenarios) {
  const Case cases[] = {
      {"one eBGP peer exports only the virtual interface",
       [](RenderInput& in) { in.peers.push_back(MakePeer("tor1", "192.0.2.1")); },
       {"protocol bgp peer_tor1 {", "local as 64513;", "neighbor 192.0.2.1 as 64512;",
        "if proto != \"pylon_vips\" then reject;",
        "ipv4 { import none; export filter "
        "export_peer_tor1; };",
        "graceful restart off;", "error wait time 5, 30;"},
       {"bfd", "password", "multihop"},
       {"peer_tor1"},
       {}},
      {"ipv6 peer gets an ipv6 channel",
       [](RenderInput& in) { in.peers.push_back(MakePeer("tor1-v6", "2001:db8:1::1")); },
       {"neighbor 2001:db8:1::1 as 64512;", "ipv6 { import none;"},
       {"ipv4 { import"},
       {ProtocolName("tor1-v6")},
       {}},
      {"every option",
       [](RenderInput& in) {
         Peer p = MakePeer("tor1", "192.0.2.1");
         p.peer_port = 1179;
         p.source_address = *net::IpAddress::Parse("192.0.2.11");
         p.hold_time_s = 9;
         p.keepalive_time_s = 3;
         p.connect_time_s = 5;
         p.password_secret = SecretKeyRef{"auth", "password"};
         p.bfd_profile = "fast";
         p.ebgp_multihop = true;
         p.graceful_restart = true;
         in.peers.push_back(p);
         in.profiles["fast"] = BfdProfile{"fast", 100, 100, 3, true};
         in.passwords["tor1"] = "s3cret pass";
       },
       {"local 192.0.2.11 as 64513;", "neighbor 192.0.2.1 port 1179 as 64512;", "multihop;",
        "hold time 9;", "keepalive time 3;", "connect retry time 5;", "password \"s3cret pass\";",
        "protocol bfd pylon_bfd { }",
        "bfd { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; passive on; };",
        "graceful restart on;"},
       {},
       {"peer_tor1"},
       {}},
      {"node selector not matching: no session",
       [](RenderInput& in) {
         Peer p = MakePeer("tor2", "192.0.2.1");
         p.node_selectors.push_back({"rack=r2"});
         in.peers.push_back(p);
         in.peers.push_back(MakePeer("tor1", "192.0.2.1"));
       },
       {"peer_tor1"},
       {"peer_tor2"},
       {"peer_tor1"},
       {}},
      {"missing BFD profile skips that peer only",
       [](RenderInput& in) {
         Peer p = MakePeer("tor2", "192.0.2.2");
         p.bfd_profile = "nope";
         in.peers.push_back(p);
         in.peers.push_back(MakePeer("tor1", "192.0.2.1"));
       },
       {"peer_tor1"},
       {"peer_tor2", "pylon_bfd"},
       {"peer_tor1"},
       {"tor2"}},
      {"missing or unsafe password skips the peer",
       [](RenderInput& in) {
         Peer p = MakePeer("tor2", "192.0.2.2");
         p.password_secret = SecretKeyRef{"auth", "password"};
         in.peers.push_back(p);
         Peer q = MakePeer("tor3", "192.0.2.3");
         q.password_secret = SecretKeyRef{"auth", "password"};
         in.passwords["tor3"] = "bad\"quote";
         in.peers.push_back(q);
       },
       {},
       {"peer_tor2", "peer_tor3", "bad"},
       {},
       {"tor2", "tor3"}},
      {"advertisements add communities; local pref on iBGP only",
       [](RenderInput& in) {
         in.peers.push_back(MakePeer("ebgp", "192.0.2.1"));
         in.peers.push_back(MakePeer("ibgp", "192.0.2.2", 64513));
         Advertisement a;
         a.name = "a";
         a.communities = {{64512, 100}};
         a.large_communities = {{64512, 1, 2}};
         a.local_pref = 150;
         in.advertisements.push_back(a);
       },
       {"bgp_community.add((64512, 100));", "bgp_large_community.add((64512, 1, 2));",
        "filter export_peer_ibgp {\n  if proto != \"pylon_vips\" then reject;\n  "
        "bgp_community.add((64512, 100));\n  bgp_large_community.add((64512, 1, 2));\n  "
        "bgp_local_pref = 150;",
        "filter export_peer_ebgp {\n  if proto != \"pylon_vips\" then reject;\n  "
        "bgp_community.add((64512, 100));\n  bgp_large_community.add((64512, 1, 2));\n  "
        "accept;"},
       {},
       {"peer_ebgp", "peer_ibgp"},
       {}},
      {"advertisements that select neither node nor peer export nothing",
       [](RenderInput& in) {
         in.peers.push_back(MakePeer("tor1", "192.0.2.1"));
         in.peers.push_back(MakePeer("tor2", "192.0.2.2"));
         Advertisement a;
         a.name = "a";
         a.peers = {"tor2"};
         in.advertisements.push_back(a);
         Advertisement b;
         b.name = "b";
         b.node_selectors = {{"rack=r9"}};
         in.advertisements.push_back(b);
       },
       {"filter export_peer_tor1 {\n  reject;\n}",
        "filter export_peer_tor2 {\n  if proto != \"pylon_vips\" then reject;\n  accept;"},
       {},
       {"peer_tor1", "peer_tor2"},
       {}},
      {"withdraw_all keeps the sessions and exports nothing",
       [](RenderInput& in) {
         in.peers.push_back(MakePeer("tor1", "192.0.2.1"));
         in.withdraw_all = true;
       },
       {"protocol bgp peer_tor1", "filter export_peer_tor1 {\n  reject;\n}"},
       {"accept;"},
       {"peer_tor1"},
       {}},
      {"routerID of a peer wins over the node address",
       [](RenderInput& in) {
         Peer p = MakePeer("tor1", "192.0.2.1");
         p.router_id = *net::IpAddress::Parse("198.51.100.7");
         in.peers.push_back(p);
       },
       {"router id 198.51.100.7;"},
       {"router id 192.0.2.11;"},
       {"peer_tor1"},
       {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RenderInput in = Input();
    c.setup(in);
    auto r = RenderBirdConfig(in);
    ASSERT_TRUE(r) << r.error().message();
    for (const auto& w : c.want) EXPECT_TRUE(Contains(r->text, w)) << w << "\n" << r->text;
    for (const auto& u : c.unwanted) EXPECT_FALSE(Contains(r->text, u)) << u << "\n" << r->text;
    std::vector<std::string> protocols;
    for (const auto& p : r->peers) protocols.push_back(p.protocol);
    EXPECT_EQ(protocols, c.peers);
    std::vector<std::string> skipped;
    for (const auto& [peer, reason] : r->skipped) {
      skipped.push_back(peer);
      EXPECT_TRUE(Contains(reason, "BGPPeer " + peer + ": spec.")) << reason;
    }
    EXPECT_EQ(skipped, c.skipped);
    ExpectBirdAccepts(r->text);
  }
}

TEST(BirdConfigTest, RouterIdProblemsAreErrors) {
  RenderInput in = Input();
  in.node_ipv4.reset();
  in.peers.push_back(MakePeer("tor1", "2001:db8:1::1"));
  auto r = RenderBirdConfig(in);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Contains(r.error().message(), "no IPv4 address for the BGP router id"));

  in = Input();
  Peer a = MakePeer("a", "192.0.2.1");
  a.router_id = *net::IpAddress::Parse("192.0.2.50");
  Peer b = MakePeer("b", "192.0.2.2");
  b.router_id = *net::IpAddress::Parse("192.0.2.51");
  in.peers = {a, b};
  r = RenderBirdConfig(in);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Contains(r.error().message(), "differs from"));
}

TEST(BirdConfigTest, ProtocolNamesAreValidAndDistinct) {
  EXPECT_EQ(ProtocolName("tor1"), "peer_tor1");
  EXPECT_NE(ProtocolName("a-b"), ProtocolName("a.b"));
  EXPECT_NE(ProtocolName("a-b"), ProtocolName("a_b"));
  std::string longname(200, 'x');
  EXPECT_LE(ProtocolName(longname).size(), 60u);
  EXPECT_NE(ProtocolName(longname), ProtocolName(longname + "y"));
  for (const auto& n : {ProtocolName("a-b.c"), ProtocolName(longname)}) {
    for (char c : n) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << n;
  }
}

}  // namespace
}  // namespace pylon::bgp
