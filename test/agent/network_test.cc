// Node network discovery (default route / localint / interfaces[]) over FakeNetlink, and the
// agent's flag parsing.
#include "agent/network.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/options.h"
#include "agent/ownership.h"
#include "agent/ownership_file.h"
#include "netlink/message.h"
#include "netlink/select.h"
#include "support/net.h"
#include "support/netlink/fake_netlink.h"
#include "support/scoped_env.h"

namespace pylon::agent {
namespace {

using test_support::Ip;
using test_support::Pfx;

struct Hop {
  std::string dev;
  std::string gateway;
};
struct DefaultRouteSpec {
  net::Family family;
  std::uint32_t metric;
  std::vector<Hop> hops;
};

struct NetCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> addresses;  // dev, prefix
  std::vector<DefaultRouteSpec> defaults;
  std::vector<std::pair<std::string, std::string>> onlink;  // dev, proto-ra prefix
  std::optional<std::string> localint;
  std::vector<std::string> extra;
  // Expected: interface -> subnets (in discovery order).
  std::vector<std::pair<std::string, std::vector<std::string>>> want;
};

class DiscoverNetworkTest : public ::testing::TestWithParam<NetCase> {};

TEST_P(DiscoverNetworkTest, FindsInterfacesAndSubnets) {
  const NetCase& c = GetParam();
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  std::map<std::string, int> idx;
  for (const char* dev : {"eth0", "eth1", "bond0", "kube-lb0"}) idx[dev] = nl.AddTestLink(dev);
  for (const auto& [dev, prefix] : c.addresses) {
    netlink::AddressSpec s;
    s.ifindex = idx[dev];
    s.address = Pfx(prefix);
    if (s.address.family() == net::Family::kV6) s.dad = netlink::Dad::kSkip;
    ASSERT_TRUE(nl.AddAddress(s)) << prefix;
  }
  for (const auto& d : c.defaults) {
    netlink::RouteInfo r;
    r.family = d.family;
    r.dst = Pfx(d.family == net::Family::kV4 ? "0.0.0.0/0" : "::/0");
    r.table = netlink::kMainTable;
    r.type = 1;
    r.priority = d.metric;
    for (const auto& h : d.hops) r.nexthops.push_back({idx[h.dev], Ip(h.gateway), 0, 1});
    nl.AddTestRoute(r);
  }
  for (const auto& [dev, prefix] : c.onlink) {
    netlink::RouteInfo r;
    r.family = net::Family::kV6;
    r.dst = Pfx(prefix);
    r.table = netlink::kMainTable;
    r.type = 1;
    r.protocol = netlink::kProtoRa;
    r.nexthops.push_back({idx[dev], std::nullopt, 0, 1});
    nl.AddTestRoute(r);
  }
  config::NodeAgentConfig cfg;
  if (c.localint) cfg.local_interface = *config::InterfacePattern::Compile(*c.localint);
  for (const auto& e : c.extra) cfg.interfaces.push_back(*config::InterfacePattern::Compile(e));
  auto net = DiscoverNetwork(nl, &cfg);
  ASSERT_TRUE(net) << net.error().message();
  std::vector<std::pair<std::string, std::vector<std::string>>> got;
  for (const auto& i : net->interfaces) {
    std::vector<std::string> subnets;
    for (const auto& s : i.subnets) subnets.push_back(s.ToString());
    got.emplace_back(i.name, subnets);
  }
  EXPECT_EQ(got, c.want);
  EXPECT_EQ(net->virtual_ifindex, idx["kube-lb0"]);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DiscoverNetworkTest,
    ::testing::Values(
        NetCase{"default_route_both_families",
                {{"eth0", "192.0.2.11/24"},
                 {"eth0", "2001:db8:f00d::11/64"},
                 {"eth1", "198.51.100.5/24"}},
                {{net::Family::kV4, 100, {{"eth0", "192.0.2.1"}}},
                 {net::Family::kV6, 100, {{"eth0", "2001:db8:f00d::1"}}}},
                {},
                std::nullopt,
                {},
                {{"eth0", {"192.0.2.0/24", "2001:db8:f00d::/64"}}}},
        NetCase{"lowest_metric_wins",
                {{"eth0", "192.0.2.11/24"}, {"eth1", "198.51.100.5/24"}},
                {{net::Family::kV4, 200, {{"eth0", "192.0.2.1"}}},
                 {net::Family::kV4, 50, {{"eth1", "198.51.100.1"}}}},
                {},
                std::nullopt,
                {},
                {{"eth1", {"198.51.100.0/24"}}}},
        NetCase{"multipath_gives_every_interface",
                {{"eth0", "192.0.2.11/24"}, {"eth1", "198.51.100.5/24"}},
                {{net::Family::kV4, 100, {{"eth0", "192.0.2.1"}, {"eth1", "198.51.100.1"}}}},
                {},
                std::nullopt,
                {},
                {{"eth0", {"192.0.2.0/24"}}, {"eth1", {"198.51.100.0/24"}}}},
        NetCase{"ipv6_host_address_maps_to_its_ra_64",
                {{"eth0", "2001:db8:1::11/128"}},
                {{net::Family::kV6, 1024, {{"eth0", "fe80::1"}}}},
                {{"eth0", "2001:db8:1::/64"}},
                std::nullopt,
                {},
                {{"eth0", {"2001:db8:1::/64"}}}},
        NetCase{"localint_pattern_overrides_the_default_route",
                {{"eth0", "192.0.2.11/24"}, {"bond0", "198.51.100.5/24"}},
                {{net::Family::kV4, 100, {{"eth0", "192.0.2.1"}}}},
                {},
                std::string("^bond"),
                {},
                {{"bond0", {"198.51.100.0/24"}}}},
        NetCase{"extra_interfaces_append",
                {{"eth0", "192.0.2.11/24"}, {"eth1", "198.51.100.5/24"}},
                {{net::Family::kV4, 100, {{"eth0", "192.0.2.1"}}}},
                {},
                std::nullopt,
                {"^eth1$"},
                {{"eth0", {"192.0.2.0/24"}}, {"eth1", {"198.51.100.0/24"}}}},
        NetCase{"no_default_route_no_interface",
                {{"eth0", "192.0.2.11/24"}},
                {},
                {},
                std::nullopt,
                {},
                {}}),
    [](const auto& p) { return p.param.name; });

TEST(DiscoverNetworkTest, OurOwnAddressesNeverCountAsSubnets) {
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  int eth0 = nl.AddTestLink("eth0");
  ASSERT_TRUE(nl.AddAddress(netlink::VipAddressSpec(
      eth0, Pfx("203.0.113.5/24"), netlink::Seconds{30}, netlink::kPylonAddressProto)));
  netlink::RouteInfo r;
  r.family = net::Family::kV4;
  r.dst = Pfx("0.0.0.0/0");
  r.table = netlink::kMainTable;
  r.type = 1;
  r.nexthops.push_back({eth0, Ip("192.0.2.1"), 0, 1});
  nl.AddTestRoute(r);
  auto net = DiscoverNetwork(nl, nullptr);
  ASSERT_TRUE(net);
  EXPECT_TRUE(net->interfaces.empty());
}

// --- flags ------------------------------------------------------------------------------------

TEST(AgentOptionsTest, Table) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    bool ok;
    std::string error_mentions;
  };
  const std::vector<Case> cases = {
      {{"--node-name", "n1"}, {}, true, ""},
      {{}, {{"NODE_NAME", "n2"}}, true, ""},
      {{}, {}, false, "--node-name"},
      {{"--node-name=n1", "--etp-local=elect"}, {}, true, ""},
      {{"--node-name", "n1", "--etp-local", "maybe"}, {}, false, "--etp-local"},
      {{"--node-name", "n1", "--metrics-addr", "[::1]:9000"}, {}, true, ""},
      {{"--node-name", "n1", "--metrics-addr", "nowhere"}, {}, false, "--metrics-addr"},
      {{"--node-name", "n1", "--garp-count", "0"}, {}, false, "--garp-count"},
      {{"--node-name", "n1", "--garp-interval", "fast"}, {}, false, "--garp-interval"},
      {{"--node-name", "n1", "--bogus"}, {}, false, "--bogus"},
      {{"--node-name", "n1", "--probe-interval", "5ms"}, {}, false, "--probe-interval"},
      {{"--node-name", "n1", "--help"}, {}, false, "help"},
      {{"--node-name", "n1"}, {{"PURELB_RETRY_PERIOD", "2 seconds"}}, false, "PURELB_RETRY_PERIOD"},
      {{"--node-name"}, {}, false, "--node-name"},
      // A bad variable is reported under its name; the flag, when given, wins over it.
      {{"--node-name", "n1"}, {{"PYLON_HEARTBEAT_PORT", "0"}}, false, "PYLON_HEARTBEAT_PORT"},
      {{"--node-name", "n1", "--heartbeat-port=9000"}, {{"PYLON_HEARTBEAT_PORT", "0"}}, true, ""},
  };
  for (const auto& c : cases) {
    const test_support::ScopedEnv env(c.env);
    auto o = ParseAgentOptions(c.args);
    ASSERT_EQ(o.has_value(), c.ok)
        << (c.args.empty() ? "" : c.args[0]) << (o ? "" : ": " + o.error().message());
    if (!c.ok) {
      EXPECT_NE(o.error().message().find(c.error_mentions), std::string::npos)
          << o.error().message();
    }
  }
  auto o = ParseAgentOptions({"--node-name=n1", "--etp-local=elect", "--metrics-addr=[::1]:9000",
                              "--garp-count", "5", "--address-lifetime", "1m"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->etp_mode, EtpLocalMode::kElect);
  EXPECT_EQ(o->metrics_host, "::1");
  EXPECT_EQ(o->metrics_port, 9000);
  EXPECT_EQ(o->garp.count, 5);
  EXPECT_EQ(EffectiveAddressLifetime(*o), std::chrono::seconds(60));
  o->address_lifetime.reset();
  EXPECT_EQ(EffectiveAddressLifetime(*o), std::chrono::seconds(10));  // the lease duration

  // ":port" means every IPv4 address, as on the allocator (it used to mean 127.0.0.1 here).
  auto any = ParseAgentOptions({"--node-name=n1", "--metrics-addr=:9100"});
  ASSERT_TRUE(any);
  EXPECT_EQ(any->metrics_host, "0.0.0.0");
  EXPECT_EQ(any->metrics_port, 9100);
  EXPECT_TRUE(any->metrics_enabled);
  auto off = ParseAgentOptions({"--node-name=n1", "--metrics-addr", ""});
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->metrics_enabled);
}

// --quiet-lease on|off and PYLON_QUIET_LEASE (the flag wins); on by default.
TEST(AgentOptionsTest, QuietLease) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::optional<bool> enabled;  // nullopt: an error naming `mentions`
    const char* mentions;
  };
  const Case cases[] = {
      {{}, {}, true, ""},
      {{"--quiet-lease=off"}, {}, false, ""},
      {{}, {{"PYLON_QUIET_LEASE", "off"}}, false, ""},
      {{"--quiet-lease", "on"}, {{"PYLON_QUIET_LEASE", "off"}}, true, ""},
      {{"--quiet-lease=maybe"}, {}, std::nullopt, "--quiet-lease"},
      {{}, {{"PYLON_QUIET_LEASE", "no"}}, std::nullopt, "PYLON_QUIET_LEASE"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--node-name=n1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const test_support::ScopedEnv env(c.env);
    auto o = ParseAgentOptions(args);
    SCOPED_TRACE(::testing::PrintToString(args));
    ASSERT_EQ(o.has_value(), c.enabled.has_value()) << (o ? "" : o.error().message());
    if (!o) {
      EXPECT_NE(o.error().message().find(c.mentions), std::string::npos) << o.error().message();
      continue;
    }
    EXPECT_EQ(o->quiet_lease.enabled, *c.enabled);
  }
}

// --- ownership record ---------------------------------------------------------------------

TEST(OwnershipTest, FileRoundTripAndBadLines) {
  auto dir =
      std::filesystem::temp_directory_path() / ("pylon-ownership-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  FileOwnershipStore store(dir / "sub" / "addresses");
  auto empty = store.Load();
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  std::set<OwnedAddress> owned = {{"eth0", Pfx("192.0.2.100/24")},
                                  {"kube-lb0", Pfx("2001:db8:beef::5/120")}};
  ASSERT_TRUE(store.Save(owned));
  auto back = store.Load();
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, owned);
  std::vector<std::string> issues;
  auto parsed = ParseOwned("eth0 192.0.2.1/24\nnonsense\neth0 999.1.1.1/24\n# comment\n", &issues);
  EXPECT_EQ(parsed.size(), 1u);
  EXPECT_EQ(issues.size(), 2u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pylon::agent
