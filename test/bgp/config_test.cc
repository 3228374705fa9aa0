#include "bgp/config.h"

#include <gtest/gtest.h>

#include <string>

namespace pylon::bgp {
namespace {

Json Object(const char* kind, const std::string& spec_json) {
  return Json{{"apiVersion", "lace-cni.io/v1alpha1"},
              {"kind", kind},
              {"metadata", {{"name", "tor1"}, {"generation", 4}}},
              {"spec", Json::parse(spec_json)}};
}

struct PeerCase {
  const char* name;
  const char* spec;
  const char* error;  // nullptr: valid
};

// `got` is what `c` says: accepted when c.error is nullptr, else refused with a message that
// contains c.error.
template <class T>
::testing::AssertionResult AsExpected(const Result<T>& got, const PeerCase& c) {
  if (c.error == nullptr) {
    if (got) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "refused: " << got.error().message();
  }
  if (got) return ::testing::AssertionFailure() << "accepted; want \"" << c.error << "\"";
  if (got.error().message().find(c.error) == std::string::npos) {
    return ::testing::AssertionFailure() << "no \"" << c.error << "\" in " << got.error().message();
  }
  return ::testing::AssertionSuccess();
}

TEST(BgpPeerTest, Scenarios) {
  const PeerCase cases[] = {
      {"minimal", R"({"peerAddress":"192.0.2.1","peerASN":64512,"myASN":64513})", nullptr},
      {"ipv6 peer", R"({"peerAddress":"2001:db8:1::1","peerASN":64512,"myASN":64513})", nullptr},
      {"everything",
       R"({"peerAddress":"192.0.2.1","peerASN":64512,"myASN":4200000000,"peerPort":1179,
           "sourceAddress":"192.0.2.11","holdTime":"9s","keepaliveTime":"3s","connectTime":"5s",
           "passwordSecret":{"name":"bgp-auth"},"bfdProfile":"fast","ebgpMultiHop":true,
           "enableGracefulRestart":true,"routerID":"192.0.2.99",
           "nodeSelectors":[{"matchLabels":{"rack":"r1"},
             "matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},
                                 {"key":"gpu","operator":"DoesNotExist"}]}]})",
       nullptr},
      {"no address", R"({"peerASN":64512,"myASN":64513})", "spec.peerAddress: required"},
      {"bad address", R"({"peerAddress":"192.0.2.300","peerASN":1,"myASN":2})",
       "spec.peerAddress: \"192.0.2.300\" is not an IP address"},
      {"no peer asn", R"({"peerAddress":"192.0.2.1","myASN":2})", "spec.peerASN: required"},
      {"asn 0", R"({"peerAddress":"192.0.2.1","peerASN":0,"myASN":2})", "spec.peerASN: must be in"},
      {"asn too big", R"({"peerAddress":"192.0.2.1","peerASN":4294967296,"myASN":2})",
       "spec.peerASN: must be in"},
      {"asn string", R"({"peerAddress":"192.0.2.1","peerASN":"64512","myASN":2})", "spec.peerASN"},
      {"hold too short", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"holdTime":"2s"})",
       "spec.holdTime: must be 0 or in [3s, 65535s]"},
      {"hold fraction", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"holdTime":"3.5s"})",
       "spec.holdTime: must be whole seconds"},
      {"hold garbage", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"holdTime":"soon"})",
       "spec.holdTime"},
      {"keepalive >= hold",
       R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"holdTime":"9s","keepaliveTime":"9s"})",
       "spec.keepaliveTime: must be shorter than holdTime"},
      {"source family",
       R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"sourceAddress":"2001:db8::1"})",
       "spec.sourceAddress: must be of the same family"},
      {"inline password", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"password":"x"})",
       "spec.password: not supported"},
      {"secret without name",
       R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"passwordSecret":{}})",
       "spec.passwordSecret.name: required"},
      {"multihop on ibgp",
       R"({"peerAddress":"192.0.2.1","peerASN":2,"myASN":2,"ebgpMultiHop":true})",
       "spec.ebgpMultiHop: applies to eBGP only"},
      {"router id v6", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,"routerID":"::1"})",
       "spec.routerID: must be an IPv4 address"},
      {"bad operator",
       R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,
           "nodeSelectors":[{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]}]})",
       "spec.nodeSelectors[0].matchExpressions[0].operator: unknown operator \"Gt\""},
      {"In without values",
       R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,
           "nodeSelectors":[{"matchExpressions":[{"key":"a","operator":"In"}]}]})",
       "spec.nodeSelectors[0].matchExpressions[0].values: required for operator In"},
      {"label injection",
       R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,
           "nodeSelectors":[{"matchLabels":{"a":"b,c=d"}}]})",
       "spec.nodeSelectors[0].matchLabels.a: not a valid label value"},
      {"spec missing", "null", "spec: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Json obj = Object("BGPPeer", c.spec);
    if (std::string(c.spec) == "null") obj.erase("spec");
    auto p = ParsePeer(obj);
    if (c.error == nullptr) {
      ASSERT_TRUE(p) << p.error().message();
      EXPECT_EQ(p->name, "tor1");
      EXPECT_EQ(p->generation, 4);
    } else {
      ASSERT_FALSE(p);
      EXPECT_NE(p.error().message().find(c.error), std::string::npos) << p.error().message();
      EXPECT_EQ(p.error().message().rfind("BGPPeer tor1: ", 0), 0u) << p.error().message();
    }
  }
}

TEST(BgpPeerTest, ReadsEveryField) {
  auto p = ParsePeer(Object("BGPPeer", R"({"peerAddress":"192.0.2.1","peerASN":64512,
      "myASN":64513,"peerPort":1179,"sourceAddress":"192.0.2.11","holdTime":"1m30s",
      "keepaliveTime":"30s","connectTime":"5s","passwordSecret":{"name":"auth","key":"pw"},
      "bfdProfile":"fast","ebgpMultiHop":true,"enableGracefulRestart":true,
      "routerID":"192.0.2.99","nodeSelectors":[{"matchLabels":{"rack":"r1"}},
      {"matchExpressions":[{"key":"zone","operator":"NotIn","values":["a","b"]},
                           {"key":"edge","operator":"Exists"}]}]})"));
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->peer_address.ToString(), "192.0.2.1");
  EXPECT_EQ(p->peer_asn, 64512u);
  EXPECT_EQ(p->my_asn, 64513u);
  EXPECT_EQ(p->peer_port, 1179);
  EXPECT_EQ(p->source_address->ToString(), "192.0.2.11");
  EXPECT_EQ(p->hold_time_s, 90);
  EXPECT_EQ(p->keepalive_time_s, 30);
  EXPECT_EQ(p->connect_time_s, 5);
  EXPECT_EQ(p->password_secret, (SecretKeyRef{"auth", "pw"}));
  EXPECT_EQ(p->bfd_profile, "fast");
  EXPECT_TRUE(p->ebgp_multihop);
  EXPECT_TRUE(p->graceful_restart);
  EXPECT_EQ(p->router_id->ToString(), "192.0.2.99");
  ASSERT_EQ(p->node_selectors.size(), 2u);
  EXPECT_EQ(p->node_selectors[0].selector, "rack=r1");
  EXPECT_EQ(p->node_selectors[1].selector, "zone notin (a,b),edge");
}

TEST(NodeSelectorTest, MatchesNodeLabels) {
  auto p = ParsePeer(Object("BGPPeer", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2,
      "nodeSelectors":[{"matchLabels":{"rack":"r1"}},{"matchExpressions":[
        {"key":"zone","operator":"In","values":["a"]},{"key":"gpu","operator":"DoesNotExist"}]}]})"));
  ASSERT_TRUE(p) << p.error().message();
  auto node = [](Json labels) { return Json{{"metadata", {{"name", "n"}, {"labels", labels}}}}; };
  EXPECT_TRUE(NodeMatches(p->node_selectors, node({{"rack", "r1"}})));
  EXPECT_TRUE(NodeMatches(p->node_selectors, node({{"zone", "a"}})));
  EXPECT_FALSE(NodeMatches(p->node_selectors, node({{"zone", "a"}, {"gpu", "yes"}})));
  EXPECT_FALSE(NodeMatches(p->node_selectors, node({{"rack", "r2"}})));
  EXPECT_FALSE(NodeMatches(p->node_selectors, Json{{"metadata", {{"name", "n"}}}}));
  EXPECT_TRUE(NodeMatches({}, Json::object()));
}

TEST(BfdProfileTest, Scenarios) {
  const PeerCase cases[] = {
      {"defaults", "{}", nullptr},
      {"fast", R"({"receiveInterval":100,"transmitInterval":100,"detectMultiplier":3})", nullptr},
      {"rx too small", R"({"receiveInterval":5})", "spec.receiveInterval: must be in [10, 60000]"},
      {"mult 1", R"({"detectMultiplier":1})", "spec.detectMultiplier: must be in [2, 255]"},
      {"echo", R"({"echoMode":true})", "spec.echoMode: not supported"},
      {"ttl", R"({"minimumTtl":254})", "spec.minimumTtl: not supported"},
      {"passive string", R"({"passiveMode":"yes"})", "spec.passiveMode: must be a boolean"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(AsExpected(ParseBfdProfile(Object("BFDProfile", c.spec)), c));
  }
  auto d = ParseBfdProfile(Object("BFDProfile", "{}"));
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, (BfdProfile{"tor1", 300, 300, 3, false}));
}

TEST(BgpAdvertisementTest, Scenarios) {
  const PeerCase cases[] = {
      {"empty", "{}", nullptr},
      {"full", R"({"communities":["64512:100","large:64512:1:2","no-export"],"localPref":200,
                   "peers":["tor1"],"nodeSelectors":[{"matchLabels":{"a":"b"}}]})",
       nullptr},
      {"community too big", R"({"communities":["65536:1"]})",
       "spec.communities[0]: \"65536:1\" is not a community"},
      {"community words", R"({"communities":["one:two"]})", "spec.communities[0]"},
      {"large short", R"({"communities":["large:1:2"]})", "spec.communities[0]"},
      {"peer empty", R"({"peers":[""]})", "spec.peers[0]: must be the name of a BGPPeer"},
      {"peer not a string", R"({"peers":["tor1",7]})",
       "spec.peers[1]: must be a string, got a number"},
      {"aggregation", R"({"aggregationLength":24})", "spec.aggregationLength: not supported"},
      {"localPref negative", R"({"localPref":-1})", "spec.localPref"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(AsExpected(ParseAdvertisement(Object("BGPAdvertisement", c.spec)), c));
  }
  auto a = ParseAdvertisement(
      Object("BGPAdvertisement", R"({"communities":["64512:100","large:64512:1:2","no-export"]})"));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->communities.size(), 2u);
  EXPECT_EQ(a->communities[0], (std::array<std::uint32_t, 2>{64512, 100}));
  EXPECT_EQ(a->communities[1], (std::array<std::uint32_t, 2>{65535, 65281}));
  ASSERT_EQ(a->large_communities.size(), 1u);
  EXPECT_EQ(a->large_communities[0], (std::array<std::uint32_t, 3>{64512, 1, 2}));
}

TEST(BgpObjectsTest, WrongKindOrVersionIsNamed) {
  Json obj = Object("BGPPeer", R"({"peerAddress":"192.0.2.1","peerASN":1,"myASN":2})");
  obj["apiVersion"] = "metallb.io/v1beta2";
  auto p = ParsePeer(obj);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("apiVersion"), std::string::npos);
  EXPECT_FALSE(ParsePeer(Json::array()));
  EXPECT_FALSE(ParseBfdProfile(Json("x")));
}

}  // namespace
}  // namespace pylon::bgp
