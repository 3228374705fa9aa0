#include "heartbeat/split_brain.h"
#include "support/net.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::heartbeat {
namespace {

using test_support::Ip;

std::vector<net::IpAddress> Ips(std::initializer_list<const char*> l) {
  std::vector<net::IpAddress> out;
  for (auto s : l) out.push_back(Ip(s));
  return out;
}

// Which of two nodes ranks first for `address` by the election hash.
std::string First(const std::string& x, const std::string& y, const std::string& address) {
  auto dx = *election::ElectionDigest(x, address);
  auto dy = *election::ElectionDigest(y, address);
  return dx < dy ? x : y;
}

// An address that `winner` wins against `loser` (searching 192.0.2.1..).
std::string AddressWonBy(const std::string& winner, const std::string& loser, int start = 1) {
  for (int i = start; i < 255; ++i) {
    std::string a = "192.0.2." + std::to_string(i);
    if (First(winner, loser, a) == winner) return a;
  }
  return "";
}

TEST(SplitBrain, Table) {
  auto hasher = *election::Sha256Hasher::Create();
  const std::string a_wins = AddressWonBy("a", "b");
  const std::string b_wins = AddressWonBy("b", "a");
  const std::string b_wins2 = AddressWonBy("b", "a", std::stoi(b_wins.substr(8)) + 1);
  ASSERT_FALSE(a_wins.empty());
  ASSERT_FALSE(b_wins.empty());
  struct Row {
    const char* what;
    Claim mine;
    std::vector<Claim> peers;
    std::vector<std::string> want;
  };
  auto C = [](const char* n, std::vector<std::string> addrs, bool deaf = false) {
    Claim c{election::NodeName(n), deaf, {}};
    for (auto& s : addrs) c.addresses.push_back(Ip(s));
    return c;
  };
  const Row rows[] = {
      {"no overlap", C("a", {a_wins}), {C("b", {"198.51.100.1"})}, {}},
      {"overlap, I rank first: keep", C("a", {a_wins}), {C("b", {a_wins})}, {}},
      {"overlap, the peer ranks first: yield", C("a", {b_wins}), {C("b", {b_wins})}, {b_wins}},
      {"the peer's view of the same pair agrees (it keeps)",
       C("b", {b_wins}),
       {C("a", {b_wins})},
       {}},
      {"several addresses: only the lost ones",
       C("a", {a_wins, b_wins, b_wins2}),
       {C("b", {b_wins2, a_wins, b_wins})},
       {b_wins, b_wins2}},
      {"deaf peer: yield even where I rank first (it cannot yield)",
       C("a", {a_wins}),
       {C("b", {a_wins}, true)},
       {a_wins}},
      {"I am deaf: keep (the others yield to me)", C("a", {b_wins}, true), {C("b", {b_wins})}, {}},
      {"both deaf: the hash decides", C("a", {b_wins}, true), {C("b", {b_wins}, true)}, {b_wins}},
      {"no peers", C("a", {a_wins}), {}, {}},
      {"nothing announced", C("a", {}), {C("b", {a_wins})}, {}},
      {"duplicates in lists are harmless",
       C("a", {b_wins, b_wins}),
       {C("b", {b_wins, b_wins})},
       {b_wins}},
      {"my own name among peers is ignored", C("a", {b_wins}), {C("a", {b_wins})}, {}},
      {"IPv4 and IPv6 independent", C("a", {"2001:db8::5"}), {C("b", {"192.0.2.5"})}, {}},
  };
  for (const auto& r : rows) {
    auto got = AddressesToYield(r.mine, r.peers, *hasher);
    std::vector<net::IpAddress> want;
    for (const auto& s : r.want) want.push_back(Ip(s));
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << r.what;
  }
}

TEST(SplitBrain, ThreeWayExactlyOneKeeps) {
  auto hasher = *election::Sha256Hasher::Create();
  const std::vector<std::string> nodes = {"n1", "n2", "n3"};
  for (int i = 1; i < 60; ++i) {
    const auto addrs = Ips({("192.0.2." + std::to_string(i)).c_str()});
    int keepers = 0;
    for (const auto& me : nodes) {
      std::vector<Claim> peers;
      for (const auto& p : nodes) {
        if (p != me) peers.push_back(Claim{election::NodeName(p), false, addrs});
      }
      if (AddressesToYield(Claim{election::NodeName(me), false, addrs}, peers, *hasher).empty()) {
        ++keepers;
      }
    }
    EXPECT_EQ(keepers, 1) << i;
  }
}

}  // namespace
}  // namespace pylon::heartbeat
