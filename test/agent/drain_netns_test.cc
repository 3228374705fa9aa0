// The drain's ruleset in the real kernel (LABELS root): three hosts on a bridge in network
// namespaces -- a client, the previous holder L and the new holder N of 192.0.2.200 and
// 2001:db8:1::200. A TCP connection opened through L keeps working after the address moved to N
// (N's table, written by RenderDrainRuleset and applied through nftables::OpenNftables in N's
// namespace, sends its packets on to L), while a new connection is served by N. Without the
// table the old connection is reset by N: the test can fail.
//
// L keeps the address on its loopback here, standing for what its kube-proxy does in a cluster
// (DNAT of the flow it already tracks, whether or not the address is on its NIC); the servers
// are socat, answering with the name of the host that serves.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "../netlink/netns_helper.h"
#include "agent/drain.h"
#include "common/fd.h"
#include "nftables/nftables.h"
#include "support/net.h"
#include "support/shell.h"

namespace pylon::agent {
namespace {

using pylon::testing::InNetns;
using pylon::testing::Netns;

using test_support::Ip;

// A TCP client connection, opened and used from a thread inside the client's namespace.
class Conn {
 public:
  bool Open(const Netns& ns, const std::string& ip) {
    InNetns(ns, [&] {
      const bool v6 = ip.find(':') != std::string::npos;
      fd_ = UniqueFd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      timeval tv{3, 0};
      ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      sockaddr_storage ss{};
      socklen_t len = 0;
      if (v6) {
        auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(8080);
        ::inet_pton(AF_INET6, ip.c_str(), &s6->sin6_addr);
        len = sizeof *s6;
      } else {
        auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
        s4->sin_family = AF_INET;
        s4->sin_port = htons(8080);
        ::inet_pton(AF_INET, ip.c_str(), &s4->sin_addr);
        len = sizeof *s4;
      }
      ok_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0;
    });
    return ok_;
  }
  // Sends `line` and returns the answer ("L=line" / "N=line"); "" on a reset or timeout.
  std::string Ask(const std::string& line) {
    const std::string out = line + "\n";
    if (::send(fd_.get(), out.data(), out.size(), MSG_NOSIGNAL) < 0) return "";
    char buf[128];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf - 1, 0);
    if (n <= 0) return "";
    std::string s(buf, static_cast<std::size_t>(n));
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }

 private:
  UniqueFd fd_;
  bool ok_ = false;
};

class DrainNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pylon::testing::CanUseNetns() || pylon::testing::Sh("command -v socat") != 0) {
      GTEST_SKIP() << "needs root, iproute2 and socat";
    }
    ASSERT_TRUE(br_.ok() && c_.ok() && l_.ok() && n_.ok());
    ASSERT_EQ(br_.Ip("link add name br0 type bridge"), 0);
    ASSERT_EQ(br_.Ip("link set br0 up"), 0);
    int i = 0;
    for (Netns* h : {&c_, &l_, &n_}) {
      const std::string port = "p" + std::to_string(i);
      ASSERT_EQ(br_.Ip("link add name " + port + " type veth peer name eth0 netns " + h->name()),
                0);
      ASSERT_EQ(br_.Ip("link set " + port + " master br0 up"), 0);
      ASSERT_EQ(h->Ip("link set eth0 up"), 0);
      const std::string host = std::to_string(10 + i);
      ASSERT_EQ(h->Ip("addr add 192.0.2." + host + "/24 dev eth0"), 0);
      ASSERT_EQ(h->Ip("addr add 2001:db8:1::" + host + "/64 dev eth0 nodad"), 0);
      ++i;
    }
    // L (.11) holds the addresses; both L and N serve port 8080, naming themselves.
    ASSERT_EQ(l_.Ip("addr add 192.0.2.200/32 dev eth0"), 0);
    ASSERT_EQ(l_.Ip("addr add 2001:db8:1::200/128 dev eth0 nodad"), 0);
    for (auto [ns, name] : {std::pair{&l_, "L"}, std::pair{&n_, "N"}}) {
      // (socat ends an address at ':', so the answer is "L=line".)
      ASSERT_EQ(pylon::testing::Sh("ip netns exec " + ns->name() +
                                   " socat TCP6-LISTEN:8080,ipv6only=0,reuseaddr,fork "
                                   "SYSTEM:'sed -u s/^/" +
                                   name + "=/' >/dev/null 2>&1 &"),
                0);
    }
    ASSERT_TRUE(pylon::testing::Eventually([&] {
      return l_.Exec("ss -Hltn sport = :8080 | grep -q .") == 0 &&
             n_.Exec("ss -Hltn sport = :8080 | grep -q .") == 0;
    }));
  }
  void TearDown() override {
    for (Netns* ns : {&l_, &n_})
      pylon::testing::Sh("ip netns pids " + ns->name() + " | xargs -r kill");
  }

  // The move: L stops answering for the address on eth0 (its kube-proxy would still carry the
  // flow: here, the address on its loopback), N takes it and the client's neighbour entry points
  // at N (what N's gratuitous ARP / unsolicited NA does).
  void Move(const std::string& ip, int len) {
    ASSERT_EQ(l_.Ip("addr del " + ip + "/" + std::to_string(len) + " dev eth0"), 0);
    ASSERT_EQ(l_.Ip("addr add " + ip + "/" + std::to_string(len) + " dev lo"), 0);
    ASSERT_EQ(n_.Ip("addr add " + ip + "/" + std::to_string(len) + " dev eth0 nodad"), 0);
    const std::string n_mac =
        test_support::Shell("ip -n " + n_.name() + " -br link show eth0 | awk '{print $3}'", false)
            .out;
    ASSERT_EQ(
        c_.Ip("neigh replace " + ip + " lladdr " + n_mac.substr(0, 17) + " dev eth0 nud reachable"),
        0);
  }
  Status ApplyInN(const std::vector<DrainForward>& forwards) {
    Status out = Ok();
    InNetns(n_, [&] {
      auto nft = nftables::OpenNftables();
      if (!nft) {
        out = Fail(nft.error());
        return;
      }
      out = (*nft)->Run(RenderDrainRuleset(forwards));
    });
    return out;
  }

  Netns br_{"pylon-dr-br"}, c_{"pylon-dr-c"}, l_{"pylon-dr-l"}, n_{"pylon-dr-n"};
};

TEST_F(DrainNetnsTest, EstablishedFlowsFollowThePreviousHolderNewOnesStayHere) {
  for (const auto& [vip, via, len] :
       {std::tuple<std::string, std::string, int>{"192.0.2.200", "192.0.2.11", 32},
        {"2001:db8:1::200", "2001:db8:1::11", 128}}) {
    SCOPED_TRACE(vip);
    Conn old_conn;
    ASSERT_TRUE(old_conn.Open(c_, vip));
    EXPECT_EQ(old_conn.Ask("a"), "L=a");
    ASSERT_TRUE(ApplyInN({DrainForward{Ip(vip), Ip(via), "eth0", NodeName("l"), {}}}).has_value());
    Move(vip, len);
    EXPECT_EQ(old_conn.Ask("b"), "L=b");  // through N, on to L
    Conn new_conn;
    ASSERT_TRUE(new_conn.Open(c_, vip));
    EXPECT_EQ(new_conn.Ask("c"), "N=c");  // served by N from its SYN on
    EXPECT_EQ(old_conn.Ask("d"), "L=d");
    EXPECT_EQ(new_conn.Ask("e"), "N=e");
    // The drain ends: the old flow now reaches N, which knows nothing of it.
    ASSERT_TRUE(ApplyInN({}).has_value());
    EXPECT_EQ(old_conn.Ask("f"), "");
    EXPECT_EQ(new_conn.Ask("g"), "N=g");
  }
  // Nothing of ours is left in N's ruleset.
  EXPECT_EQ(n_.Exec("nft list tables | grep -q pylon-drain"), 1);
}

TEST_F(DrainNetnsTest, ABadCommandIsAClearErrorAndChangesNothing) {
  Status s = Ok();
  InNetns(n_, [&] {
    auto nft = nftables::OpenNftables();
    ASSERT_TRUE(nft.has_value()) << nft.error().message();
    ASSERT_TRUE((*nft)
                    ->Run(RenderDrainRuleset({DrainForward{
                        Ip("192.0.2.200"), Ip("192.0.2.11"), "eth0", NodeName("l"), {}}}))
                    .has_value());
    s = (*nft)->Run(
        "table ip pylon-drain\ndelete table ip pylon-drain\ntable ip pylon-drain {\n"
        "  chain prerouting { this is not nft }\n}\n");
  });
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("nftables: "), std::string::npos) << s.error().message();
  // The transaction failed whole: the table written before is still there.
  EXPECT_EQ(n_.Exec("nft list table ip pylon-drain | grep -q 'dup to 192.0.2.11'"), 0);
}

}  // namespace
}  // namespace pylon::agent
