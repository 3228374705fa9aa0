// The one Json type's non-throwing accessors, and the one "namespace/name" key.
#include "common/json.h"

#include <gtest/gtest.h>

#include "common/object_key.h"

namespace pylon {
namespace {

TEST(Json, FindWalksObjectsAndNeverThrows) {
  const Json j = *ParseJson(R"({"a":{"b":{"s":"x","i":7,"u":-1,"f":1.5,"t":true,"n":null}},
                               "list":[1,2]})");
  EXPECT_EQ(Find(j, {}), &j);
  ASSERT_NE(Find(j, {"a", "b", "n"}), nullptr);
  EXPECT_TRUE(Find(j, {"a", "b", "n"})->is_null());  // a present null is returned
  EXPECT_EQ(Find(j, {"a", "missing"}), nullptr);
  EXPECT_EQ(Find(j, {"list", "0"}), nullptr);  // arrays are not walked
  EXPECT_EQ(Find(j, {"a", "b", "s", "deeper"}), nullptr);
  EXPECT_EQ(FindString(j, {"a", "b", "s"}), "x");
  EXPECT_EQ(FindString(j, {"a", "b", "i"}), std::nullopt);  // wrong type: nullopt, no throw
  EXPECT_EQ(FindInt(j, {"a", "b", "i"}), 7);
  EXPECT_EQ(FindInt(j, {"a", "b", "u"}), -1);
  EXPECT_EQ(FindInt(j, {"a", "b", "f"}), std::nullopt);
  EXPECT_EQ(FindBool(j, {"a", "b", "t"}), true);
  EXPECT_EQ(FindBool(j, {"a", "b", "s"}), std::nullopt);
  const Json scalar = 3;
  EXPECT_EQ(Find(scalar, {"a"}), nullptr);
}

TEST(Json, ParseJsonReportsMalformedText) {
  EXPECT_TRUE(ParseJson("{}"));
  auto bad = ParseJson("{\"a\":", "the body");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("the body: malformed JSON"), std::string::npos);
  EXPECT_FALSE(ParseJson(""));
}

TEST(ObjectKey, OneSpelling) {
  EXPECT_EQ((ObjectKey{"demo", "web"}).String(), "demo/web");
  EXPECT_EQ((ObjectKey{"", "node1"}).String(), "node1");
  EXPECT_EQ(ObjectKey::FromString("demo/web"), (ObjectKey{"demo", "web"}));
  EXPECT_EQ(ObjectKey::FromString("node1"), (ObjectKey{"", "node1"}));
  EXPECT_LT((ObjectKey{"a", "z"}), (ObjectKey{"b", "a"}));
}

}  // namespace
}  // namespace pylon
