// The soak's invariants (src/soak/checks.h) on views written by hand: what each one flags and
// what it lets pass.
#include "soak/checks.h"

#include <gtest/gtest.h>

namespace pylon::soak {
namespace {

ObservedService Svc(const std::string& name, std::vector<std::string> ips,
                    const std::string& key = "", const std::string& from = "sa",
                    const std::string& uid = "") {
  ObservedService s;
  s.name = name;
  s.uid = uid.empty() ? "uid-" + name : uid;
  s.ips = std::move(ips);
  s.share_key = key;
  s.allocated_from = from;
  return s;
}

TEST(UnsharedDuplicatesTest, Table) {
  struct Case {
    const char* name;
    std::vector<ObservedService> services;
    std::size_t flagged;
  };
  const Case cases[] = {
      {"distinct", {Svc("a", {"192.0.2.64"}), Svc("b", {"192.0.2.65"})}, 0},
      {"same key shares", {Svc("a", {"192.0.2.64"}, "k1"), Svc("b", {"192.0.2.64"}, "k1")}, 0},
      {"no key", {Svc("a", {"192.0.2.64"}), Svc("b", {"192.0.2.64"})}, 1},
      {"one key missing", {Svc("a", {"192.0.2.64"}, "k1"), Svc("b", {"192.0.2.64"})}, 1},
      {"different keys", {Svc("a", {"192.0.2.64"}, "k1"), Svc("b", {"192.0.2.64"}, "k2")}, 1},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(UnsharedDuplicates(c.services).size(), c.flagged) << c.name;
  }
}

TEST(StatusMismatchesTest, CountsSharedAddressesOnceAndSkipsInvalidOrStale) {
  ApiView v;
  v.services = {Svc("a", {"192.0.2.64", "2001:db8:1::a:1"}, "k1"),
                Svc("b", {"192.0.2.64", "2001:db8:1::a:1"}, "k1"), Svc("c", {"192.0.2.65"})};
  ObservedConfig sa{"ServiceGroup", "sa", true, true, 2, 1};
  v.configs = {sa};
  EXPECT_TRUE(StatusMismatches(v).empty());
  v.configs[0].v4_in_use = 3;
  EXPECT_EQ(StatusMismatches(v).size(), 1u);
  v.configs[0].valid = false;  // an invalid object shows its last valid figures
  EXPECT_TRUE(StatusMismatches(v).empty());
  v.configs[0].valid = true;
  v.configs[0].status_current = false;  // not yet written for this generation
  EXPECT_TRUE(StatusMismatches(v).empty());
  // A class of the same name is another object.
  v.configs = {ObservedConfig{"LoadBalancerClass", "sa", true, true, 0, 0}, sa};
  EXPECT_TRUE(StatusMismatches(v).empty());
}

// Seed 11's false violation: the quiet phase re-created the deleted group sv that s3 had asked
// for; the phase was judged settled before the allocator read sv, the asks were cleared, and s3's
// move to sv then counted as unasked. Settled now waits for both.
TEST(PendingRequestsTest, ANewGenerationOrAnUnmadeGroupChangeIsPending) {
  ObservedService s3 = Svc("s3", {"192.0.2.100"}, "", "sa");
  s3.group = "sv";
  ApiView v;
  v.services = {s3};
  v.configs = {ObservedConfig{"ServiceGroup", "sa", true, true, 1, 0},
               ObservedConfig{"ServiceGroup", "sv", false, std::nullopt, {}, {}}};
  EXPECT_EQ(PendingRequests(v),
            std::vector<std::string>{"ServiceGroup/sv status not yet written for its generation"});
  v.configs[1] = ObservedConfig{"ServiceGroup", "sv", true, true, 0, 0};
  EXPECT_EQ(PendingRequests(v),
            std::vector<std::string>{"Service s3 asks for group sv, holds addresses of sa"});
  v.services[0].allocated = false;  // the allocator says why it cannot (sv is full)
  EXPECT_TRUE(PendingRequests(v).empty());
  v.services[0].allocated = true;
  v.services[0].allocated_from = "sv";  // moved
  EXPECT_TRUE(PendingRequests(v).empty());
  // A group that is invalid or missing keeps the Service where it is: nothing pending.
  v.services[0].allocated_from = "sa";
  v.configs[1].valid = false;
  EXPECT_TRUE(PendingRequests(v).empty());
  v.configs.pop_back();
  EXPECT_TRUE(PendingRequests(v).empty());
  // Lace classes and Services without the annotation are not judged by it.
  v.services[0].group = "";
  EXPECT_TRUE(PendingRequests(v).empty());
}

TEST(AddressBookTest, ChangesOnlyWhenAsked) {
  AddressBook book;
  EXPECT_TRUE(book.Observe({Svc("a", {})}).empty());
  // Allocation from nothing, then a second family: never a loss.
  EXPECT_TRUE(book.Observe({Svc("a", {"192.0.2.64"})}).empty());
  EXPECT_TRUE(book.Observe({Svc("a", {"192.0.2.64", "2001:db8:1::a:1"})}).empty());
  // Losing one unasked: the defect the soak found first.
  EXPECT_EQ(book.Observe({Svc("a", {"192.0.2.64"})}).size(), 1u);
  // Asked: a move is fine until the asks are cleared.
  book.Ask("a");
  EXPECT_TRUE(book.Observe({Svc("a", {"192.0.2.70"})}).empty());
  EXPECT_TRUE(book.Observe({Svc("a", {})}).empty());
  EXPECT_TRUE(book.Observe({Svc("a", {"192.0.2.71"})}).empty());
  book.ClearAsks();
  EXPECT_EQ(book.Observe({Svc("a", {"192.0.2.72"})}).size(), 1u);
  // A new uid (deleted and created again) starts over.
  EXPECT_TRUE(book.Observe({Svc("a", {"192.0.2.90"}, "", "sa", "uid-2")}).empty());
  // Gone from the view: forgotten.
  EXPECT_TRUE(book.Observe({}).empty());
  EXPECT_TRUE(book.Observe({Svc("a", {"192.0.2.91"}, "", "sa", "uid-2")}).empty());
}

TEST(ParseTest, ServicesConfigsAndAdvertisements) {
  auto services = ParseServices(nlohmann::json::parse(R"({"items":[
    {"metadata":{"name":"web","uid":"u1","annotations":{
       "purelb.io/allow-shared-ip":"k1","purelb.io/allocated-from":"sa",
       "purelb.io/announcing-IPv4":"node2,eth0"}},
     "spec":{"type":"LoadBalancer","ipFamilies":["IPv4","IPv6"],"ports":[{"port":8001}],
             "externalTrafficPolicy":"Local"},
     "status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.64"},{"ip":"2001:db8:1::a:1"}]},
               "conditions":[{"type":"purelb.io/AddressAllocated","status":"True",
                              "reason":"Allocated"}]}},
    {"metadata":{"name":"kubernetes"},"spec":{"type":"ClusterIP"}}]})"));
  ASSERT_EQ(services.size(), 1u);
  const auto& s = services[0];
  EXPECT_EQ(s.ips.size(), 2u);
  EXPECT_EQ(s.share_key, "k1");
  EXPECT_EQ(s.announcer_v4, "node2");
  EXPECT_EQ(s.announcer_v6, "");
  EXPECT_EQ(s.allocated, true);
  EXPECT_EQ(s.port, 8001);
  EXPECT_EQ(s.etp, "Local");
  EXPECT_EQ(s.families, 2u);

  auto configs = ParseConfigs(nlohmann::json::parse(R"({"items":[
    {"metadata":{"name":"sa","generation":3},
     "status":{"observedGeneration":3,"valid":true,"ipv4":{"size":"8","inUse":"2"},
               "ipv6":{"size":"8","inUse":"1"}}},
    {"metadata":{"name":"sb","generation":4},"status":{"observedGeneration":3,"valid":false}}]})"),
                              "ServiceGroup");
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_TRUE(configs[0].status_current);
  EXPECT_EQ(configs[0].v4_in_use, 2u);
  EXPECT_EQ(configs[0].v6_in_use, 1u);
  EXPECT_FALSE(configs[1].status_current);

  auto l2 = ParseL2Advertisements(nlohmann::json::parse(
      R"({"items":[{"spec":{"address":"192.0.2.200","node":"node1","service":{}}}]})"));
  EXPECT_EQ(l2["192.0.2.200"], "node1");
}

TEST(StrayAddressesTest, OnANodeButHeldByNoService) {
  NodeAddresses on;
  on.eth0["192.0.2.64"] = {"node1"};
  on.eth0["192.0.2.70"] = {"node1", "node2"};
  on.lb["203.0.113.1"] = {"node3"};
  on.lb["203.0.113.2"] = {"node1"};
  const std::vector<ObservedService> services = {Svc("a", {"192.0.2.64", "203.0.113.2"})};
  EXPECT_EQ(StrayAddresses(on, services),
            (std::vector<std::string>{"192.0.2.70 on node1 node2 but no Service holds it",
                                      "203.0.113.1 on node3 but no Service holds it"}));
  EXPECT_TRUE(StrayAddresses(NodeAddresses{}, services).empty());
}

}  // namespace
}  // namespace pylon::soak
