// The informer cache in both representations (JSON trees and compact CBOR), PackedJson round
// trips, and FieldMask (the transform that trims cached objects).
#include <gtest/gtest.h>

#include "k8s/field_mask.h"
#include "k8s/store.h"

namespace pylon::k8s {
namespace {

Json Obj(const std::string& ns, const std::string& name, const std::string& rv,
         const std::string& value = "v") {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"resourceVersion", rv}}},
          {"spec", {{"value", value}, {"n", 7}, {"f", 1.5}, {"ok", true}, {"none", nullptr}}}};
}

TEST(PackedJson, RoundTripsEveryKindOfValue) {
  const std::vector<Json> values = {
      Json(),
      Json::object(),
      Json::array(),
      Json("text with \"quotes\" and unicode \u00e9"),
      Json(-42),
      Json(18446744073709551615ull),
      Json(0.25),
      Json(false),
      Obj("ns", "a", "1"),
      Json::parse(R"({"a":[1,2,{"b":[]}],"c":{"d":null,"e":"x"},"big":9007199254740993})"),
  };
  for (const auto& v : values) {
    PackedJson p = PackedJson::Pack(v);
    Json back = p.Unpack();
    EXPECT_EQ(back, v) << v.dump();
    EXPECT_EQ(back.type(), v.type()) << v.dump();
  }
  EXPECT_TRUE(PackedJson().Unpack().is_null());
}

TEST(PackedJson, IsSmallerThanTheText) {
  Json o = Obj("default", "a-service-name", "123456");
  EXPECT_LT(PackedJson::Pack(o).bytes(), o.dump().size());
}

class StoreModes : public ::testing::TestWithParam<bool> {};

TEST_P(StoreModes, UpsertGetListRemoveReplace) {
  Store s(StoreOptions{GetParam()});
  EXPECT_FALSE(s.Upsert(Obj("ns", "a", "1")));
  EXPECT_FALSE(s.Upsert(Obj("ns", "b", "2")));
  EXPECT_FALSE(s.Upsert(Json{{"metadata", {{"name", "cluster"}, {"resourceVersion", "3"}}}}));
  EXPECT_EQ(s.Size(), 3u);
  EXPECT_EQ(s.Keys(), (std::vector<std::string>{"cluster", "ns/a", "ns/b"}));
  ASSERT_TRUE(s.Get("ns", "a"));
  EXPECT_EQ(*s.Get("ns", "a"), Obj("ns", "a", "1"));
  EXPECT_EQ(*s.Get("cluster"),
            (Json{{"metadata", {{"name", "cluster"}, {"resourceVersion", "3"}}}}));
  EXPECT_FALSE(s.Get("ns", "zzz"));

  auto old = s.Upsert(Obj("ns", "a", "4", "changed"));
  ASSERT_TRUE(old);
  EXPECT_EQ(*old, Obj("ns", "a", "1"));
  EXPECT_EQ(s.Get("ns/a")->at("spec").at("value"), "changed");

  auto gone = s.Remove("ns/b");
  ASSERT_TRUE(gone);
  EXPECT_EQ(*gone, Obj("ns", "b", "2"));
  EXPECT_FALSE(s.Remove("ns/b"));
  EXPECT_EQ(s.List().size(), 2u);

  std::map<std::string, Json> next = {{"ns/c", Obj("ns", "c", "5")}};
  auto prev = s.ReplaceAll(next);
  ASSERT_EQ(prev.size(), 2u);
  EXPECT_EQ(prev.at("ns/a"), Obj("ns", "a", "4", "changed"));
  EXPECT_EQ(s.List(), (std::vector<Json>{Obj("ns", "c", "5")}));
  if (GetParam()) {
    EXPECT_EQ(s.PackedBytes(), PackedJson::Pack(Obj("ns", "c", "5")).bytes());
    s.Remove("ns/c");
    EXPECT_EQ(s.PackedBytes(), 0u);
  } else {
    EXPECT_EQ(s.PackedBytes(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(TreesAndCompact, StoreModes, ::testing::Bool());

struct MaskCase {
  const char* name;
  std::initializer_list<std::string_view> paths;
  const char* in;
  const char* want;
};

TEST(FieldMask, KeepsOnlyThePathsGiven) {
  const MaskCase cases[] = {
      {"whole subtree",
       {"metadata"},
       R"({"metadata":{"name":"a","x":{"y":1}},"spec":{}})",
       R"({"metadata":{"name":"a","x":{"y":1}}})"},
      {"nested leaf",
       {"spec.type"},
       R"({"spec":{"type":"LoadBalancer","selector":{"a":"b"}},"status":{}})",
       R"({"spec":{"type":"LoadBalancer"}})"},
      {"through a list",
       {"spec.ports.port", "spec.ports.protocol"},
       R"({"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080},{"port":53,"nodePort":30000}]}})",
       R"({"spec":{"ports":[{"port":80,"protocol":"TCP"},{"port":53}]}})"},
      {"absent paths add nothing", {"spec.type", "status"}, R"({"kind":"Service"})", R"({})"},
      {"malformed value kept as is",
       {"spec.ports.port"},
       R"({"spec":{"ports":"eighty"}})",
       R"({"spec":{"ports":"eighty"}})"},
      {"a shorter path wins over a longer one",
       {"spec", "spec.type"},
       R"({"spec":{"type":"x","other":1}})",
       R"({"spec":{"type":"x","other":1}})"},
      {"scalar root untouched", {"spec"}, R"(5)", R"(5)"},
  };
  for (const auto& c : cases) {
    Json v = Json::parse(c.in);
    FieldMask::Of(c.paths).Apply(v);
    EXPECT_EQ(v, Json::parse(c.want)) << c.name << ": " << v.dump();
  }
}

}  // namespace
}  // namespace pylon::k8s
