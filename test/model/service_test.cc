#include "model/service.h"

#include <fstream>
#include <sstream>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pylon::model {
namespace {

using nlohmann::json;

json Fixture(const std::string& rel) {
  std::ifstream in(std::string(PYLON_FIXTURES_DIR) + "/kubernetes/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

TEST(ParseService, WatchStreamFixture) {
  std::ifstream in(std::string(PYLON_FIXTURES_DIR) + "/kubernetes/watch-stream.jsonl");
  std::string line;
  std::getline(in, line);  // ADDED
  std::getline(in, line);  // MODIFIED with ingress
  auto ev = json::parse(line);
  auto s = ParseService(ev["object"]);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->Key(), "demo/web");
  EXPECT_EQ(s->type, "LoadBalancer");
  EXPECT_EQ(s->ip_family_policy, "SingleStack");
  ASSERT_EQ(s->ip_families.size(), 1u);
  EXPECT_EQ(s->ip_families[0], net::Family::kV4);
  ASSERT_EQ(s->ingress.size(), 1u);
  EXPECT_EQ(s->ingress[0].ToString(), "192.0.2.200");
  ASSERT_EQ(s->ports.size(), 1u);
  EXPECT_EQ(s->ports[0], (ServicePort{"TCP", 80}));
  EXPECT_FALSE(s->deleting);
}

TEST(ParseService, GeneratedFixtureWithPlaceholdersIsAnErrorNotACrash) {
  // Every field is filled with placeholder text: ipFamilies holds "ipFamiliesValue".
  auto s = ParseService(Fixture("core.v1.Service.json"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("spec.ipFamilies"), std::string::npos) << s.error().message();
}

TEST(ParseService, RecordedOldServerReply) {
  auto s = ParseService(Fixture("recorded/service-get.json"));
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->name, "svc1");
  EXPECT_TRUE(s->ingress.empty());
  EXPECT_TRUE(s->ip_families.empty());
}

TEST(ParseService, BadShapesAreErrors) {
  // A Service's JSON and a fragment of the error it gets.
  const std::pair<const char*, const char*> rows[] = {
      {R"([])", "not a JSON object"},
      {R"({"spec":{}})", "metadata missing"},
      {R"({"metadata":{"name":3}})", "metadata.name: expected a string"},
      {R"({"metadata":{"name":"a","annotations":[]}})", "annotations: expected an object"},
      {R"({"metadata":{"name":"a","annotations":{"x":1}}})", "annotations.x: expected a string"},
      {R"({"metadata":{"name":"a"},"spec":{"type":1}})", "spec.type: expected a string"},
      {R"({"metadata":{"name":"a"},"spec":{"ports":[{"port":"80"}]}})", "ports[0].port"},
      {R"({"metadata":{"name":"a"},"spec":{"ipFamilies":"IPv4"}})", "ipFamilies: expected a list"},
      {R"({"metadata":{"name":"a"},"spec":{"ipFamilies":["IPv5"]}})", "unknown IP family"},
  };
  for (const auto& [text, want] : rows) {
    auto s = ParseService(json::parse(text));
    ASSERT_FALSE(s) << text;
    EXPECT_NE(s.error().message().find(want), std::string::npos)
        << text << " -> " << s.error().message();
  }
}

TEST(ParseService, BadIngressIsReportedNotFatal) {
  auto s = ParseService(json::parse(
      R"({"metadata":{"name":"a","namespace":"n","deletionTimestamp":"2026-01-01T00:00:00Z"},
          "spec":{"type":"LoadBalancer"},
          "status":{"loadBalancer":{"ingress":[{"ip":"300.1.1.1"},{"hostname":"x"},{"ip":"2001:db8::1"}]}}})"));
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->deleting);
  ASSERT_EQ(s->ingress.size(), 1u);
  EXPECT_EQ(s->ingress[0].ToString(), "2001:db8::1");
  EXPECT_EQ(s->ingress_problems.size(), 2u);
}

TEST(SelectOwner, Table) {
  struct Row {
    const char* type;
    const char* cls;  // nullptr = no class
    const char* group_annotation;
    Owner owner;
    const char* name;
  };
  const Row rows[] = {
      {"LoadBalancer", nullptr, nullptr, Owner::kServiceGroup, "default"},
      {"LoadBalancer", nullptr, "localdual", Owner::kServiceGroup, "localdual"},
      {"LoadBalancer", "purelb.io/purelb", "localdual", Owner::kServiceGroup, "localdual"},
      {"LoadBalancer", "purelb.io/purelbv2", nullptr, Owner::kServiceGroup, "default"},
      {"LoadBalancer", "purelb.io/purelbv2", "v2group", Owner::kServiceGroup, "v2group"},
      {"LoadBalancer", "purelb.io/purelb-v2", nullptr, Owner::kNone, ""},
      {"LoadBalancer", "purelb.io/purelbv3", nullptr, Owner::kNone, ""},
      {"LoadBalancer", "lace-cni.io/public", nullptr, Owner::kLaceClass, "public"},
      {"LoadBalancer", "lace-cni.io/public", "localdual", Owner::kLaceClass, "public"},
      {"LoadBalancer", "example.com/other", nullptr, Owner::kNone, ""},
      {"LoadBalancer", "metallb.io/x", "localdual", Owner::kNone, ""},
      {"ClusterIP", nullptr, "localdual", Owner::kNone, ""},
      {"NodePort", nullptr, nullptr, Owner::kNone, ""},
  };
  for (const auto& r : rows) {
    Service s;
    s.type = r.type;
    if (r.cls) s.load_balancer_class = r.cls;
    if (r.group_annotation) s.annotations[kAnnServiceGroup] = r.group_annotation;
    auto sel = SelectOwner(s);
    EXPECT_EQ(sel.owner, r.owner) << r.type << " " << (r.cls ? r.cls : "-");
    EXPECT_EQ(sel.name, r.name) << r.type << " " << (r.cls ? r.cls : "-");
  }
}

}  // namespace
}  // namespace pylon::model
