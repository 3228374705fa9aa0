// The soak's world as data (src/soak/scenario.h): the addresses it requests, which addresses are
// its own, and what the YAML it applies says for the choices a seed can draw.
#include "soak/scenario.h"

#include <gtest/gtest.h>

namespace pylon::soak {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ScenarioTest, RequestedAddressesAreInTheRequestedRange) {
  EXPECT_EQ(RequestedAddress(kConfigs[0], 0, false), "192.0.2.97");
  EXPECT_EQ(RequestedAddress(kConfigs[0], 9, false), "192.0.2.106");
  EXPECT_EQ(RequestedAddress(kConfigs[2], 2, true), "2001:db8:beef::1:3");
  for (int c = 0; c < kConfigCount; ++c) {
    for (int i = 0; i < kServices; ++i) {
      EXPECT_TRUE(InSoakPools(RequestedAddress(kConfigs[c], i, false))) << c << " " << i;
      EXPECT_TRUE(InSoakPools(RequestedAddress(kConfigs[c], i, true))) << c << " " << i;
    }
  }
}

TEST(ScenarioTest, PoolsAndVirtualSubnets) {
  struct Case {
    const char* ip;
    bool in_pools, is_virtual;
  };
  const Case cases[] = {
      {"192.0.2.64", true, false},        {"192.0.2.95", true, false},  // sa dynamic at its largest
      {"192.0.2.10", false, false},                                     // a node's address
      {"203.0.113.5", true, true},        {"203.0.113.200", false, true},
      {"2001:db8:beef::1:1", true, true}, {"2001:db8:1::e:7", true, false},
      {"2001:db8:1::11", false, false},   {"not-an-ip", false, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(InSoakPools(c.ip), c.in_pools) << c.ip;
    EXPECT_EQ(IsVirtual(c.ip), c.is_virtual) << c.ip;
  }
}

TEST(ScenarioTest, ServiceYamlFollowsTheState) {
  // ServiceGroup sa, RequireDualStack, sharing key k1.
  const std::string y = ServiceYaml(3, ServiceState{.exists = true,
                                                    .config = 0,
                                                    .policy = 2,
                                                    .requested = true,
                                                    .share = 1,
                                                    .local_etp = true});
  EXPECT_TRUE(Has(y, "name: s3\n"));
  EXPECT_TRUE(Has(y, "purelb.io/service-group: sa\n"));
  EXPECT_TRUE(Has(y, "purelb.io/allow-shared-ip: k1\n"));
  EXPECT_TRUE(Has(y, "purelb.io/addresses: \"192.0.2.100,2001:db8:1::b:4\"\n"));
  EXPECT_TRUE(Has(y, "externalTrafficPolicy: Local\n"));
  EXPECT_TRUE(Has(y, "ipFamilyPolicy: RequireDualStack\n  ipFamilies:\n  - IPv4\n  - IPv6\n"));
  EXPECT_TRUE(Has(y, "port: 8003\n"));
  EXPECT_FALSE(Has(y, "loadBalancerClass"));

  // The Lace class c1.
  const std::string lace =
      ServiceYaml(0, {.exists = true, .config = 3, .v6_primary = true, .requested = true});
  EXPECT_TRUE(Has(lace, "loadBalancerClass: lace-cni.io/c1\n"));
  EXPECT_TRUE(Has(lace, "loadbalancer.lace-cni.io/loadBalancerIPs: \"2001:db8:1::f:1\"\n"));
  EXPECT_TRUE(Has(lace, "ipFamilyPolicy: SingleStack\n  ipFamilies:\n  - IPv6\n  selector"));
  EXPECT_FALSE(Has(lace, "purelb.io/"));
}

TEST(ScenarioTest, ConfigYamlSizesAndInvalidForms) {
  ConfigState st;
  st.size = 2;
  const std::string sa = ConfigYaml(kConfigs[0], st, true);
  EXPECT_TRUE(Has(sa, "kind: ServiceGroup\n"));
  EXPECT_TRUE(Has(sa, "pool: 192.0.2.64/27\n      subnet: 192.0.2.0/24\n"));
  EXPECT_TRUE(Has(sa, "pool: 2001:db8:1::a:0/123\n"));
  EXPECT_TRUE(Has(ConfigYaml(kConfigs[0], st, false), "subnet: 10.255.255.0/24\n"));

  const std::string sv = ConfigYaml(kConfigs[2], ConfigState{}, true);
  EXPECT_TRUE(Has(sv, "subnet: 203.0.113.0/24\n      aggregation: /32\n"));

  const std::string c1 = ConfigYaml(kConfigs[3], ConfigState{}, false);
  EXPECT_TRUE(Has(c1, "kind: LoadBalancerClass\n"));
  EXPECT_TRUE(Has(c1, "- cidr: 192.0.2.192/28\n    start: 192.0.2.250\n"));
  EXPECT_FALSE(Has(ConfigYaml(kConfigs[3], ConfigState{}, true), "start:"));
}

}  // namespace
}  // namespace pylon::soak
