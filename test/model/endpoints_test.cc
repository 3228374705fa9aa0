#include "model/endpoints.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pylon::model {
namespace {

using nlohmann::json;

TEST(ParseEndpointSlice, GeneratedFixture) {
  std::ifstream in(std::string(PYLON_FIXTURES_DIR) +
                   "/kubernetes/discovery.k8s.io.v1.EndpointSlice.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto es = ParseEndpointSlice(json::parse(ss.str()));
  ASSERT_TRUE(es) << es.error().message();
  ASSERT_FALSE(es->endpoints.empty());
  EXPECT_EQ(es->endpoints[0].node_name, "nodeNameValue");
  EXPECT_EQ(es->address_type, "addressTypeValue");
}

TEST(ParseEndpointSlice, NilConditionsFollowKubeProxy) {
  auto es = ParseEndpointSlice(json::parse(R"({
    "metadata":{"name":"web-abc","namespace":"demo","labels":{"kubernetes.io/service-name":"web"}},
    "endpoints":[{"addresses":["10.0.0.1"],"nodeName":"node1"},
                 {"addresses":["10.0.0.2"],"nodeName":"node2","conditions":{"ready":false}},
                 {"addresses":["10.0.0.3"],"nodeName":"node3",
                  "conditions":{"ready":false,"serving":true,"terminating":true}}]})"));
  ASSERT_TRUE(es);
  EXPECT_EQ(es->service_name, "web");
  ASSERT_EQ(es->endpoints.size(), 3u);
  EXPECT_TRUE(es->endpoints[0].ready);
  EXPECT_TRUE(es->endpoints[0].serving);
  EXPECT_FALSE(es->endpoints[0].terminating);
  std::vector<const EndpointSlice*> slices = {&*es};
  EXPECT_TRUE(HasLocalEndpoint(slices, "node1"));
  EXPECT_FALSE(HasLocalEndpoint(slices, "node2"));  // not ready, not serving-terminating
  EXPECT_TRUE(HasLocalEndpoint(slices, "node3"));   // serving + terminating fallback
  EXPECT_FALSE(HasLocalEndpoint(slices, "node4"));
}

TEST(ParseEndpointSlice, BadShapes) {
  EXPECT_FALSE(ParseEndpointSlice(json::parse("3")));
  EXPECT_FALSE(ParseEndpointSlice(json::parse(R"({"metadata":{},"endpoints":{}})")));
  auto bad = ParseEndpointSlice(
      json::parse(R"({"metadata":{},"endpoints":[{"conditions":{"ready":"yes"}}]})"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("conditions.ready"), std::string::npos);
}

}  // namespace
}  // namespace pylon::model
