// What the governing LBNodeAgent changes on this node: GARP / NA bursts (garpConfig, sendgarp)
// and the lifetimes and flags of added addresses (addressConfig), walked through the reconciler
// against FakeNetlink and FakeAnnouncer.
#include "agent/node_agent_policy.h"
#include "support/packet/fake_announcer.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "agent_world.h"
#include "config/parse.h"

namespace pylon::agent::testing {
namespace {

config::NodeAgentConfig Parsed(const char* api_version, const char* spec) {
  nlohmann::json o = {{"apiVersion", api_version},
                      {"kind", "LBNodeAgent"},
                      {"metadata", {{"name", "default"}, {"namespace", "purelb-system"}}},
                      {"spec", nlohmann::json::parse(spec)}};
  auto c = config::ParseNodeAgent(o);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
  return c ? *c : config::NodeAgentConfig{};
}

// The announcements a node sends for a local address it takes, per LBNodeAgent.
TEST(NodeAgentGarp, BurstPerLbNodeAgentTable) {
  struct Row {
    const char* name;
    const char* api_version;  // nullptr: no LBNodeAgent
    const char* spec;
    int count;             // announcements in all
    Duration first_after;  // the first one is due this long after the takeover
    Duration interval;     // between the others
  };
  const GarpOptions flags{3, milliseconds(300), Duration(0)};
  const Row rows[] = {
      {"no LBNodeAgent: the flags", nullptr, "", 3, Duration(0), milliseconds(300)},
      {"v1 sendgarp true: the flags", "purelb.io/v1", R"({"local":{"sendgarp":true}})", 3,
       Duration(0), milliseconds(300)},
      {"v1 sendgarp false: one", "purelb.io/v1", R"({"local":{"sendgarp":false}})", 1, Duration(0),
       milliseconds(300)},
      {"v2 without garpConfig: none", "purelb.io/v2", R"({"local":{}})", 0, Duration(0),
       milliseconds(300)},
      {"v2 enabled false: none", "purelb.io/v2", R"({"local":{"garpConfig":{"enabled":false}}})", 0,
       Duration(0), milliseconds(300)},
      {"v2 garpConfig {}: PureLB's defaults", "purelb.io/v2", R"({"local":{"garpConfig":{}}})", 3,
       milliseconds(100), milliseconds(500)},
      {"v2 timings", "purelb.io/v2",
       R"({"local":{"garpConfig":{"initialDelay":"0s","count":5,"interval":"1s"}}})", 5,
       Duration(0), seconds(1)},
  };
  const std::string ip = "192.0.2.101";
  const std::string self = HashWinner(kNodes, Ip(ip));
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::optional<config::NodeAgentConfig> cfg;
    if (row.api_version) cfg = Parsed(row.api_version, row.spec);
    const GarpOptions g = GarpOptionsFor(flags, cfg ? &*cfg : nullptr);
    EXPECT_EQ(g.count, row.count);
    AgentWorld w(self);
    w.garp_.set_options(g);
    w.services_.push_back(Svc("web", {.ips = {ip}}));
    w.Pass();
    ASSERT_TRUE(w.KernelHas(w.eth0_, ip + "/24"));
    // Step time in 10 ms ticks, recording when each announcement goes out.
    std::vector<Duration> at;
    const SteadyTime start = w.clock_.Now();
    for (int tick = 0; tick <= 1000; ++tick) {
      w.reconciler_->SendDueAnnouncements();
      while (at.size() < w.announcer_.sent().size()) at.push_back(w.clock_.Now() - start);
      w.clock_.Advance(milliseconds(10));
    }
    ASSERT_EQ(static_cast<int>(at.size()), row.count);
    for (std::size_t i = 0; i < at.size(); ++i) {
      EXPECT_EQ(at[i], row.first_after + static_cast<int>(i) * row.interval) << i;
    }
  }
}

// Lifetimes, flags and renewals of the addresses the agent adds, per addressConfig.
TEST(NodeAgentAddresses, AddressConfigTable) {
  struct Row {
    const char* name;
    const char* spec;  // purelb.io/v2; nullptr: no LBNodeAgent
    // Local (eth0, IPv4), then virtual (kube-lb0):
    netlink::Seconds local_valid, local_preferred;
    bool local_no_prefix_route;
    netlink::Seconds virtual_valid;
    bool virtual_no_prefix_route;
  };
  AgentOptions flags;  // lease duration 10 s: the default lifetime
  flags.timing.lease_duration = seconds(10);
  const netlink::Seconds dflt = EffectiveAddressLifetime(flags);
  const Row rows[] = {
      {"no LBNodeAgent: the defaults", nullptr, dflt, dflt, true, dflt, false},
      {"v2 without addressConfig: the defaults", R"({"local":{}})", dflt, dflt, true, dflt, false},
      {"NIC lifetimes, prefix route on; dummy permanent",
       R"({"local":{"addressConfig":{"localInterface":{"validLifetime":600,
       "preferredLifetime":120,"noPrefixRoute":false},"dummyInterface":{"validLifetime":0,
       "noPrefixRoute":true}}}})",
       seconds(600), seconds(120), false, netlink::kForever, true},
      {"preferred above valid is clamped",
       R"({"local":{"addressConfig":{"localInterface":{"validLifetime":60,
       "preferredLifetime":900}}}})",
       seconds(60), seconds(60), true, dflt, false},
  };
  const std::string local_ip = "192.0.2.101";
  const std::string virtual_ip = "192.0.2.245";  // the v2 `remote` group: always virtual
  const std::string self = HashWinner(kNodes, Ip(local_ip));
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    std::optional<config::NodeAgentConfig> cfg;
    if (row.spec) cfg = Parsed("purelb.io/v2", row.spec);
    AgentWorld w(self);
    w.sync_->SetOptions(AddressSyncOptionsFor(flags, cfg ? &*cfg : nullptr));
    w.services_.push_back(Svc("web", {.ips = {local_ip}}));
    w.services_.push_back(Svc("bgp", {.ips = {virtual_ip}}));
    w.Pass();
    auto find = [&](int ifindex, const std::string& ip) -> std::optional<netlink::AddressInfo> {
      for (const auto& a : w.KernelAddresses(ifindex)) {
        if (a.prefix.address() == Ip(ip)) return a;
      }
      return std::nullopt;
    };
    auto local = find(w.eth0_, local_ip);
    ASSERT_TRUE(local.has_value());
    EXPECT_EQ(local->lifetimes.valid, row.local_valid);
    EXPECT_EQ(local->lifetimes.preferred, row.local_preferred);
    EXPECT_EQ(local->has_flag(netlink::addr_flags::kNoPrefixRoute), row.local_no_prefix_route);
    auto virt = find(w.lb0_, virtual_ip);
    ASSERT_TRUE(virt.has_value());
    EXPECT_EQ(virt->lifetimes.valid, row.virtual_valid);
    EXPECT_EQ(virt->has_flag(netlink::addr_flags::kPermanent),
              row.virtual_valid == netlink::kForever);
    EXPECT_EQ(virt->has_flag(netlink::addr_flags::kNoPrefixRoute), row.virtual_no_prefix_route);
    // Both stay held past their lifetime, never expiring in between: finite ones are renewed,
    // permanent ones need not be.
    for (int i = 0; i < 400; ++i) {
      w.Advance(seconds(2), kNodes);
      ASSERT_TRUE(find(w.eth0_, local_ip).has_value()) << i;
      ASSERT_TRUE(find(w.lb0_, virtual_ip).has_value()) << i;
      w.Pass();
    }
  }
}

// An addressConfig that appears while addresses are held re-adds them with the new lifetimes.
TEST(NodeAgentAddresses, ChangedPolicyAppliesToHeldAddresses) {
  const std::string ip = "192.0.2.101";
  AgentWorld w(HashWinner(kNodes, Ip(ip)));
  AgentOptions flags;
  flags.timing.lease_duration = seconds(10);
  w.sync_->SetOptions(AddressSyncOptionsFor(flags, nullptr));
  w.services_.push_back(Svc("web", {.ips = {ip}}));
  w.Pass();
  ASSERT_TRUE(w.KernelHas(w.eth0_, ip + "/24"));
  auto cfg = Parsed("purelb.io/v2",
                    R"({"local":{"addressConfig":{"localInterface":{"validLifetime":0}}}})");
  w.sync_->SetOptions(AddressSyncOptionsFor(flags, &cfg));
  w.Pass();
  bool permanent = false;
  for (const auto& a : w.KernelAddresses(w.eth0_)) {
    if (a.prefix == Pfx(ip + "/24")) permanent = a.lifetimes.valid == netlink::kForever;
  }
  EXPECT_TRUE(permanent);
  EXPECT_FALSE(w.sync_->NextRenewal().has_value());  // nothing to renew
}

}  // namespace
}  // namespace pylon::agent::testing
