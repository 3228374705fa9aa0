#include "apiserver/selector.h"

#include <gtest/gtest.h>

namespace pylon::apiserver {
namespace {

TEST(LabelSelector, Table) {
  std::map<std::string, std::string> labels = {
      {"app", "web"}, {"tier", "1"}, {"kubernetes.io/service-name", "svc"}};
  struct Case {
    const char* text;
    bool parses;
    bool matches;
  } cases[] = {
      {"", true, true},
      {"app=web", true, true},
      {"app==web", true, true},
      {"app = web", true, true},
      {"app!=web", true, false},
      {"missing!=x", true, true},
      {"app in (web, db)", true, true},
      {"app notin (web)", true, false},
      {"missing notin (x)", true, true},
      {"app", true, true},
      {"!app", true, false},
      {"!missing", true, true},
      {"tier>0", true, true},
      {"tier<1", true, false},
      {"kubernetes.io/service-name=svc", true, true},
      {"app=web,tier=2", true, false},
      {"app in (web,db),!missing", true, true},
      {"app=we b", false, false},
      {"app in web", false, false},
      {"=x", false, false},
      {"app=web,", false, false},
  };
  for (const auto& c : cases) {
    auto s = LabelSelector::Parse(c.text);
    EXPECT_EQ(s.has_value(), c.parses) << c.text;
    if (s) {
      EXPECT_EQ(s->Matches(labels), c.matches) << c.text;
    }
  }
}

TEST(FieldSelector, Table) {
  auto get = [](std::string_view f) -> std::optional<std::string> {
    if (f == "metadata.name") return "a,b";
    if (f == "type") return "Normal";
    return std::nullopt;
  };
  struct Case {
    const char* text;
    bool parses;
    bool matches;
  } cases[] = {
      {"", true, true},
      {"type=Normal", true, true},
      {"type==Normal", true, true},
      {"type!=Normal", true, false},
      {"metadata.name=a\\,b", true, true},
      {"metadata.name=a\\,b,type=Warning", true, false},
      {"type", false, false},
  };
  for (const auto& c : cases) {
    auto s = FieldSelector::Parse(c.text);
    EXPECT_EQ(s.has_value(), c.parses) << c.text;
    if (s) {
      EXPECT_EQ(s->Matches(get), c.matches) << c.text;
    }
  }
  auto s = FieldSelector::Parse("spec.x=1");
  ASSERT_TRUE(s);
  auto st = s->Validate([](std::string_view f) { return f == "type"; });
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(), "field label not supported: spec.x");
}

}  // namespace
}  // namespace pylon::apiserver
