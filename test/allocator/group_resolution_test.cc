// Group resolution (group_resolution.h): PureLB 0.17's namespace rules and the group a
// requested address picks, walked through the reconcile core.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/group_resolution.h"
#include "reconcile_world.h"
#include "test_objects.h"

namespace pylon::allocator::testing {
namespace {

// PureLB 0.17's namespace rules (docs/purelb-v2.md), walked through one pool state.
TEST(GroupResolutionTest, V2NamespacesScenario) {
  World w({
      testing::SmallDefaultGroup(),                                           // .10-.12
      testing::V2LocalGroup("team-a", "192.0.2.20-192.0.2.22", {"team-a"}),   // only team-a
      testing::V2LocalGroup("shared1", "192.0.2.30-192.0.2.32", {"shared"}),  // two groups
      testing::V2LocalGroup("shared2", "192.0.2.40-192.0.2.42", {"shared"}, false, true),
      testing::V2LocalGroup("locked", "192.0.2.50-192.0.2.52", {"locked"}, true),  // enforced
      testing::V2LocalGroup("amb1", "192.0.2.60-192.0.2.62", {"amb"}, true),
      testing::V2LocalGroup("amb2", "192.0.2.70-192.0.2.72", {"amb"}),
      testing::V2LocalGroup("nd1", "192.0.2.80-192.0.2.81", {"shared-nodefault"}),
      testing::V2LocalGroup("nd2", "192.0.2.90-192.0.2.91", {"shared-nodefault"}),
  });
  auto svc = [](std::string name, std::string ns, std::string group = "") {
    SvcSpec s;
    s.name = std::move(name);
    s.ns = std::move(ns);
    if (!group.empty()) s.annotations = {{"purelb.io/service-group", group}};
    return s;
  };
  Walk(w, {
              R("namespace listed by no group: default", svc("s1", "other"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.10"}),
              R("namespace listed by one group: that group", svc("s2", "team-a"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.20"}),
              R("listed by two: the namespaceDefault one", svc("s3", "shared"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.40"}),
              R("annotation wins over the namespace default", svc("s4", "shared", "shared1"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.30"}),
              R("not enforced: an annotation may pick any group", svc("s5", "team-a", "default"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.11"}),
              R("not enforced: another namespace may use team-a's group",
                svc("s6", "other", "team-a"), Outcome::kAllocated, Reason::kNone, {"192.0.2.21"}),
              R("enforced namespace: its own group", svc("s7", "locked"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.50"}),
              R("enforced namespace may not use a group that does not list it",
                svc("s8", "locked", "default"), Outcome::kRefused, Reason::kNamespaceDenied),
              R("a confined group refuses other namespaces", svc("s9", "other", "locked"),
                Outcome::kRefused, Reason::kNamespaceDenied),
              R("enforced, two groups, no default: ambiguous", svc("s10", "amb"), Outcome::kRefused,
                Reason::kAmbiguousNamespaceDefault),
              R("ambiguous is settled by an annotation", svc("s11", "amb", "amb2"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.70"}),
          });
  Decision d = w.Run(svc("s8", "locked", "default"));
  EXPECT_EQ(d.message,
            "namespace locked is enforced (enforceNamespaces) by ServiceGroups locked and may use "
            "only ServiceGroups that list it; ServiceGroup default does not");
  d = w.Run(svc("s9", "other", "locked"));
  EXPECT_EQ(d.message,
            "ServiceGroup locked serves only namespaces locked (namespace locked is enforced by "
            "ServiceGroup locked), not other");
  // Not enforced, two groups, no default: "default", with a Warning when assigned.
  d = w.Run(svc("s12", "shared-nodefault"));
  EXPECT_EQ(d.outcome, Outcome::kAllocated);
  EXPECT_EQ(d.allocated_from, "default");
  EXPECT_EQ(EventReasons(d), (std::vector<std::string>{"ConfigurationWarning", "AddressAssigned"}));
  ASSERT_FALSE(d.events.empty());
  EXPECT_EQ(d.events[0].message,
            "ServiceGroups nd1, nd2 list namespace shared-nodefault and none of them sets "
            "namespaceDefault; used ServiceGroup default");
  EXPECT_TRUE(d.events[0].warning);
  d = w.Run(svc("s12", "shared-nodefault"));  // unchanged: no event again
  EXPECT_TRUE(d.events.empty());
  d = w.Run(svc("s10", "amb"));
  EXPECT_EQ(d.message,
            "ambiguous namespace default: ServiceGroups amb1, amb2 list namespace amb and none of "
            "them sets namespaceDefault; set it on one, or annotate the Service with "
            "purelb.io/service-group");
}

// Never retroactive: a new group listing a namespace does not move the addresses its unannotated
// Services already hold, and a boundary added later does not revoke them.
TEST(GroupResolutionTest, V2NamespacesAreNeverRetroactive) {
  World w({testing::SmallDefaultGroup()});
  SvcSpec s;
  s.name = "held";
  s.ns = "team-a";
  Decision d = w.Run(s);
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  w.SetConfig({testing::SmallDefaultGroup(),
               testing::V2LocalGroup("team-a", "192.0.2.20-192.0.2.22", {"team-a"}, true)});
  d = w.Run(s);
  EXPECT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  EXPECT_EQ(d.allocated_from, "default");
  // A new Service of the namespace gets the namespace's group.
  SvcSpec fresh = s;
  fresh.name = "fresh";
  d = w.Run(fresh);
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.20"});
  EXPECT_EQ(d.pool_type, std::optional<std::string>("local"));
  // Once released, the held one re-resolves to the namespace's group too.
  w.Delete("team-a", "held");
  d = w.Run(s);
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.21"});
}

// A requested address picks the purelb.io/v2 group containing it (PureLB v2); an address of a v1
// group does not (v1 behaviour: the group is the annotation's, else "default"); the namespace
// boundary still applies.
TEST(GroupResolutionTest, V2RequestedAddressPicksItsGroup) {
  World w(
      {testing::SmallDefaultGroup(),  // v1, .10-.12
       testing::ServiceGroupJson(
           "old", {{"v4pools", {{{"pool", "192.0.2.80-192.0.2.89"}, {"subnet", "192.0.2.0/24"}}}}}),
       testing::V2LocalGroup("v2", "192.0.2.20-192.0.2.29"),
       testing::V2LocalGroup("locked", "192.0.2.50-192.0.2.52", {"locked"}, true)});
  auto svc = [](std::string name, std::string addr, std::string ns = "default") {
    SvcSpec s;
    s.name = std::move(name);
    s.ns = std::move(ns);
    s.annotations = {{"purelb.io/addresses", addr}};
    return s;
  };
  Walk(w, {
              R("an address of a v2 group: that group", svc("a", "192.0.2.25"), Outcome::kAllocated,
                Reason::kNone, {"192.0.2.25"}),
              R("an address of a v1 group: still default's pools", svc("b", "192.0.2.85"),
                Outcome::kRefused, Reason::kOutsidePools),
              R("spec.loadBalancerIP too",
                [] {
                  SvcSpec s;
                  s.name = "c";
                  s.load_balancer_ip = "192.0.2.26";
                  return s;
                }(),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.26"}),
              R("a confined group's address from another namespace: denied", svc("d", "192.0.2.51"),
                Outcome::kRefused, Reason::kNamespaceDenied),
              R("from its own namespace: allowed", svc("e", "192.0.2.51", "locked"),
                Outcome::kAllocated, Reason::kNone, {"192.0.2.51"}),
          });
  EXPECT_EQ(w.Run(svc("a", "192.0.2.25")).allocated_from, "v2");
}

}  // namespace
}  // namespace pylon::allocator::testing
