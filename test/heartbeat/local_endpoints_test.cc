#include "heartbeat/local_endpoints.h"

#include <gtest/gtest.h>

namespace pylon::heartbeat {
namespace {

namespace af = netlink::addr_flags;

netlink::AddressInfo Addr(int ifindex, const char* prefix, std::uint32_t flags = af::kPermanent,
                          std::uint8_t scope = 0, std::optional<std::uint8_t> proto = {}) {
  netlink::AddressInfo a;
  a.ifindex = ifindex;
  a.prefix = *net::Prefix::Parse(prefix);
  a.flags = flags;
  a.scope = scope;
  a.proto = proto;
  return a;
}

std::vector<std::string> Text(const std::vector<net::IpAddress>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(a.ToString());
  return out;
}

TEST(EndpointAddresses, Table) {
  const auto vip4 = *net::IpAddress::Parse("192.0.2.200");
  struct Row {
    const char* what;
    std::vector<netlink::AddressInfo> addrs;
    std::vector<net::IpAddress> exclude;
    std::vector<std::string> want;
  };
  const Row rows[] = {
      {"primary IPv4 and the /128 IPv6 node address",
       {Addr(2, "192.0.2.11/24"), Addr(2, "192.0.2.200/24", af::kSecondary),
        Addr(2, "fe80::1/64", af::kPermanent, 253), Addr(2, "2001:db8:1::11/128")},
       {},
       {"192.0.2.11", "2001:db8:1::11"}},
      {"the lowest of each family, whatever the kernel's order",
       {Addr(2, "2001:db8:f00d::11/64"), Addr(2, "198.51.100.11/24"), Addr(2, "2001:db8:1::11/128"),
        Addr(2, "192.0.2.11/24")},
       {},
       {"192.0.2.11", "2001:db8:1::11"}},
      {"other interfaces ignored",
       {Addr(3, "198.51.100.5/24"), Addr(2, "192.0.2.11/24")},
       {},
       {"192.0.2.11"}},
      {"IPv6 VIP (deprecated) and tentative / dadfailed skipped",
       {Addr(2, "2001:db8:1::80/64", af::kDeprecated | af::kNoDad),
        Addr(2, "2001:db8:1::81/64", af::kTentative), Addr(2, "2001:db8:1::82/64", af::kDadFailed),
        Addr(2, "2001:db8:1::11/128")},
       {},
       {"2001:db8:1::11"}},
      {"our IFA_PROTO-tagged address skipped",
       {Addr(2, "192.0.2.50/24", af::kPermanent, 0, 0x99), Addr(2, "192.0.2.11/24")},
       {},
       {"192.0.2.11"}},
      {"an address we added (no IFA_PROTO) skipped, even if primary",
       {Addr(2, "192.0.2.200/24"), Addr(2, "192.0.2.11/24")},
       {vip4},
       {"192.0.2.11"}},
      {"IPv4 link-local skipped",
       {Addr(2, "169.254.3.4/16"), Addr(2, "192.0.2.11/24")},
       {},
       {"192.0.2.11"}},
      {"nothing usable", {Addr(2, "fe80::1/64", af::kPermanent, 253)}, {}, {}},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(Text(EndpointAddresses(r.addrs, 2, std::uint8_t{0x99}, r.exclude)), r.want) << r.what;
  }
}

}  // namespace
}  // namespace pylon::heartbeat
