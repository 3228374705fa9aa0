// The agent's pure readers of cached API objects (src/agent/agent_inputs.h): a Node's InternalIPs,
// a peer's kube-proxy URL, the allocator's probe-ahead candidates.
#include "agent/agent_inputs.h"

#include <gtest/gtest.h>

namespace pylon::agent {
namespace {

Json NodeWith(Json addresses) { return Json{{"status", {{"addresses", std::move(addresses)}}}}; }

std::vector<std::string> Strings(const std::vector<net::IpAddress>& ips) {
  std::vector<std::string> out;
  for (const auto& ip : ips) out.push_back(ip.ToString());
  return out;
}

TEST(NodeInternalIpsTest, InternalIpsInOrderOthersAndGarbageSkipped) {
  const Json node = NodeWith(Json::array({
      {{"type", "Hostname"}, {"address", "node1"}},
      {{"type", "InternalIP"}, {"address", "2001:db8:1::11"}},
      {{"type", "ExternalIP"}, {"address", "198.51.100.1"}},
      {{"type", "InternalIP"}, {"address", "not-an-ip"}},
      "not an object",
      {{"type", "InternalIP"}, {"address", "192.0.2.11"}},
  }));
  EXPECT_EQ(Strings(NodeInternalIps(node)),
            (std::vector<std::string>{"2001:db8:1::11", "192.0.2.11"}));
  EXPECT_TRUE(NodeInternalIps(Json::object()).empty());
  EXPECT_TRUE(NodeInternalIps(Json{{"status", {{"addresses", "x"}}}}).empty());
}

TEST(KubeProxyUrlAtTest, Table) {
  const Json dual = NodeWith(Json::array({{{"type", "InternalIP"}, {"address", "2001:db8:1::11"}},
                                          {{"type", "InternalIP"}, {"address", "192.0.2.11"}}}));
  const Json v6 = NodeWith(Json::array({{{"type", "InternalIP"}, {"address", "2001:db8:1::11"}}}));
  const Json none = NodeWith(Json::array());
  struct Case {
    const char* name;
    std::string own;
    const Json* node;
    std::string want;
  };
  const Case cases[] = {
      {"IPv4 first", "http://127.0.0.1:10256/healthz", &dual, "http://192.0.2.11:10256/healthz"},
      {"IPv6 in brackets", "http://127.0.0.1:10256/healthz", &v6,
       "http://[2001:db8:1::11]:10256/healthz"},
      {"scheme and no path", "https://127.0.0.1:9000", &dual, "https://192.0.2.11:9000"},
      {"own IPv6 host", "http://[::1]:10256/healthz", &dual, "http://192.0.2.11:10256/healthz"},
      {"no address", "http://127.0.0.1:10256/healthz", &none, ""},
      {"no scheme", "127.0.0.1:10256/healthz", &dual, ""},
      {"no port", "http://localhost/healthz", &dual, ""},
      {"bracketed host, no port", "http://[::1]/healthz", &dual, ""},
  };
  for (const auto& c : cases) EXPECT_EQ(KubeProxyUrlAt(c.own, *c.node), c.want) << c.name;
}

TEST(ProbeAheadCandidatesTest, BothFamiliesOfEveryGroupInOrder) {
  const std::vector<Json> groups = {
      Json{{"status",
            {{"probeAhead",
              {{"ipv4", {"192.0.2.64", 7, "bad", "192.0.2.65"}}, {"ipv6", {"2001:db8::a"}}}}}}},
      Json{{"status", {{"probeAhead", {{"ipv4", "not a list"}}}}}},
      Json::object(),
      Json{{"status", {{"probeAhead", {{"ipv6", {"2001:db8::b"}}}}}}},
  };
  EXPECT_EQ(Strings(ProbeAheadCandidates(groups)),
            (std::vector<std::string>{"192.0.2.64", "192.0.2.65", "2001:db8::a", "2001:db8::b"}));
}

}  // namespace
}  // namespace pylon::agent
