// Patch application: strategic merge (merge keys, directives), merge patch, JSON patch.
#include "apiserver/patch.h"

#include <gtest/gtest.h>

namespace pylon::apiserver {
namespace {

Json J(const char* t) { return Json::parse(t); }

TEST(StrategicMerge, Table) {
  struct Case {
    const char* name;
    const char* original;
    const char* patch;
    const char* want;
  } cases[] = {
      {"ports merge on port+protocol",
       R"({"spec":{"ports":[{"port":80,"protocol":"TCP","nodePort":30000},{"port":53,"protocol":"UDP"}]}})",
       R"({"spec":{"ports":[{"port":80,"targetPort":8080}]}})",
       R"({"spec":{"ports":[{"port":80,"protocol":"TCP","nodePort":30000,"targetPort":8080},{"port":53,"protocol":"UDP"}]}})"},
      {"same port other protocol is a new entry",
       R"({"spec":{"ports":[{"port":53,"protocol":"TCP"}]}})",
       R"({"spec":{"ports":[{"port":53,"protocol":"UDP"}]}})",
       R"({"spec":{"ports":[{"port":53,"protocol":"TCP"},{"port":53,"protocol":"UDP"}]}})"},
      {"conditions merge on type",
       R"({"status":{"conditions":[{"type":"A","status":"False"},{"type":"B","status":"True"}]}})",
       R"({"status":{"conditions":[{"type":"A","status":"True"}]}})",
       R"({"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"}]}})"},
      {"ingress replaced whole",
       R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"},{"ip":"192.0.2.2"}]}}})",
       R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.3"}]}}})",
       R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.3"}]}}})"},
      {"null deletes", R"({"metadata":{"labels":{"a":"1","b":"2"}}})",
       R"({"metadata":{"labels":{"a":null}}})", R"({"metadata":{"labels":{"b":"2"}}})"},
      {"finalizers are a set", R"({"metadata":{"finalizers":["a"]}})",
       R"({"metadata":{"finalizers":["a","b"]}})", R"({"metadata":{"finalizers":["a","b"]}})"},
      {"deleteFromPrimitiveList", R"({"metadata":{"finalizers":["a","b"]}})",
       R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})",
       R"({"metadata":{"finalizers":["b"]}})"},
      {"$patch delete in list", R"({"spec":{"ports":[{"port":80},{"port":81}]}})",
       R"({"spec":{"ports":[{"port":80,"$patch":"delete"}]}})",
       R"({"spec":{"ports":[{"port":81}]}})"},
      {"$patch replace on map", R"({"spec":{"selector":{"a":"1","b":"2"}}})",
       R"({"spec":{"selector":{"c":"3","$patch":"replace"}}})",
       R"({"spec":{"selector":{"c":"3"}}})"},
      {"$retainKeys", R"({"spec":{"a":1,"b":2}})", R"({"spec":{"$retainKeys":["b","c"],"c":3}})",
       R"({"spec":{"b":2,"c":3}})"},
      {"$setElementOrder", R"({"spec":{"ports":[{"port":80},{"port":81}]}})",
       R"({"spec":{"$setElementOrder/ports":[{"port":81},{"port":80}],"ports":[{"port":81,"name":"b"}]}})",
       R"({"spec":{"ports":[{"port":81,"name":"b"},{"port":80}]}})"},
      {"other lists replaced", R"({"spec":{"clusterIPs":["a","b"]}})",
       R"({"spec":{"clusterIPs":["c"]}})", R"({"spec":{"clusterIPs":["c"]}})"},
      {"pod template: containers by name, env by name, mounts by mountPath",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x",
           "env":[{"name":"E1","value":"1"},{"name":"E2","value":"2"}],
           "volumeMounts":[{"name":"v","mountPath":"/v"}]},{"name":"b","image":"y"}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a",
           "env":[{"name":"E2","value":"3"}],"volumeMounts":[{"name":"w","mountPath":"/w"}]}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x",
           "env":[{"name":"E1","value":"1"},{"name":"E2","value":"3"}],
           "volumeMounts":[{"name":"v","mountPath":"/v"},{"name":"w","mountPath":"/w"}]},
           {"name":"b","image":"y"}]}}}})"},
      {"pod template: volumes by name, container ports by containerPort+protocol",
       R"({"spec":{"template":{"spec":{"volumes":[{"name":"a","emptyDir":{}}],
           "containers":[{"name":"c","ports":[{"containerPort":53,"protocol":"UDP"}]}]}}}})",
       R"({"spec":{"template":{"spec":{"volumes":[{"name":"b","secret":{"secretName":"s"}}],
           "containers":[{"name":"c","ports":[{"containerPort":53,"name":"dns-tcp"}]}]}}}})",
       R"({"spec":{"template":{"spec":{"volumes":[{"name":"a","emptyDir":{}},
           {"name":"b","secret":{"secretName":"s"}}],
           "containers":[{"name":"c","ports":[{"containerPort":53,"protocol":"UDP"},
           {"containerPort":53,"name":"dns-tcp"}]}]}}}})"},
      {"pod template: tolerations replaced",
       R"({"spec":{"template":{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}}})",
       R"({"spec":{"template":{"spec":{"tolerations":[{"operator":"Exists"}]}}}})",
       R"({"spec":{"template":{"spec":{"tolerations":[{"operator":"Exists"}]}}}})"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(StrategicMerge(J(c.original), J(c.patch)), J(c.want)) << c.name;
}

TEST(ApplyPatch, MergeAndJsonPatch) {
  Json orig = J(R"({"spec":{"a":[1,2],"b":{"c":1}}})");
  auto m = ApplyPatch(PatchType::kMergePatch, orig, R"({"spec":{"a":[3],"b":null}})");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, J(R"({"spec":{"a":[3]}})"));
  auto jp =
      ApplyPatch(PatchType::kJsonPatch, orig,
                 R"([{"op":"add","path":"/spec/a/-","value":9},{"op":"remove","path":"/spec/b"}])");
  ASSERT_TRUE(jp);
  EXPECT_EQ(*jp, J(R"({"spec":{"a":[1,2,9]}})"));
  auto bad = ApplyPatch(PatchType::kJsonPatch, orig, R"([{"op":"remove","path":"/nope"}])");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, 422);
  auto garbage = ApplyPatch(PatchType::kMergePatch, orig, "{");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, 400);
}

TEST(ApplyPatch, ContentTypes) {
  EXPECT_EQ(PatchTypeFromContentType("application/json-patch+json"), PatchType::kJsonPatch);
  EXPECT_EQ(PatchTypeFromContentType("application/merge-patch+json; charset=utf-8"),
            PatchType::kMergePatch);
  EXPECT_EQ(PatchTypeFromContentType("application/strategic-merge-patch+json"),
            PatchType::kStrategicMerge);
  EXPECT_EQ(PatchTypeFromContentType("application/apply-patch+yaml"), PatchType::kApply);
  EXPECT_FALSE(PatchTypeFromContentType("application/json"));
  EXPECT_FALSE(PatchTypeFromContentType(""));
}

}  // namespace
}  // namespace pylon::apiserver
