// Every file under test/fixtures/kubernetes (copied from the design share, provenance in its
// README.md) is read by the parser that fits it: objects,
// lists, Status replies (turned into the right Error), watch frames, discovery documents.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/time.h"
#include "k8s/api_status.h"
#include "k8s/client_impl.h"
#include "k8s/json_stream.h"
#include "k8s/lease.h"
#include "k8s/object.h"
#include "k8s/watch_event.h"

namespace pylon::k8s {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(PYLON_FIXTURES_DIR) / "kubernetes";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

enum class Shape { kObject, kList, kStatus, kWatchFrame, kWatchStream, kDocument };

struct Expect {
  Shape shape;
  ErrorCode code = ErrorCode::kInternal;  // kStatus: the error the reply maps to
  std::string name;                       // kObject: metadata.name; kStatus: message fragment
};

// Every fixture file and what it must parse into. A file missing from this table fails the
// coverage test, so new fixtures cannot be skipped silently.
const std::map<std::string, Expect>& Table() {
  using enum ErrorCode;
  constexpr ErrorCode kAny = kInternal;  // only kStatus rows check the code
  // clang-format off
  static const std::map<std::string, Expect> t = {
      {"apiextensions.k8s.io.v1.CustomResourceDefinition.json", {Shape::kObject, kAny, "nameValue"}},
      {"coordination.k8s.io.v1.Lease.json", {Shape::kObject, kAny, "nameValue"}},
      {"core.v1.APIGroup.json", {Shape::kDocument, kAny, ""}},
      {"core.v1.APIVersions.json", {Shape::kDocument, kAny, ""}},
      {"core.v1.DeleteOptions.json", {Shape::kDocument, kAny, ""}},
      {"core.v1.Event.json", {Shape::kObject, kAny, "nameValue"}},
      {"core.v1.Namespace.json", {Shape::kObject, kAny, "nameValue"}},
      {"core.v1.Node.json", {Shape::kObject, kAny, "nameValue"}},
      {"core.v1.Service.json", {Shape::kObject, kAny, "nameValue"}},
      {"core.v1.Status.json", {Shape::kStatus, kUnavailable, "messageValue"}},
      {"core.v1.WatchEvent.json", {Shape::kWatchFrame, kAny, ""}},
      {"discovery.k8s.io.v1.EndpointSlice.json", {Shape::kObject, kAny, "nameValue"}},
      {"events.k8s.io.v1.Event.json", {Shape::kObject, kAny, "nameValue"}},
      {"status-404-notfound.json", {Shape::kStatus, kNotFound, "services \"x\" not found"}},
      {"status-409-conflict.json", {Shape::kStatus, kConflict, "has been modified"}},
      {"status-422-invalid.json", {Shape::kStatus, kInvalidArgument, "may not change once set"}},
      {"watch-stream.jsonl", {Shape::kWatchStream, kAny, ""}},
      {"discovery/master-sorted-apis-coordination.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/master-sorted-apis-discovery.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/master-sorted-apis-events.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-api-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-api.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-apis-apiextensions.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-apis-coordination.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-apis-coordination.k8s.io.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-apis-discovery.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-apis-events.k8s.io-v1.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-apis.json", {Shape::kDocument, kAny, ""}},
      {"discovery/v1.21-version.json", {Shape::kDocument, kAny, ""}},
      {"docs/status-404-pod-notfound-api-conventions.json", {Shape::kStatus, kNotFound, "pods \"grafana\" not found"}},
      {"docs/watch-bookmark-event-api-concepts.json", {Shape::kWatchFrame, kAny, ""}},
      {"recorded/configmaplist-empty.json", {Shape::kList, kAny, ""}},
      {"recorded/custom-resource-get.json", {Shape::kObject, kAny, "test"}},
      {"recorded/service-after-patch.json", {Shape::kObject, kAny, "svc1"}},
      {"recorded/service-get.json", {Shape::kObject, kAny, "svc1"}},
      {"recorded/servicelist.json", {Shape::kList, kAny, ""}},
      {"recorded/status-404-notfound.json", {Shape::kStatus, kNotFound, "services \"missing\" not found"}},
      {"recorded/status-404-unknown-path-v1.10.json", {Shape::kStatus, kNotFound, "could not find the requested resource"}},
      {"recorded/status-422-invalid-notsupported.json", {Shape::kStatus, kInvalidArgument, "Unsupported value"}},
      {"recorded/status-422-invalid-two-causes.json", {Shape::kStatus, kInvalidArgument, "field is immutable"}},
      {"recorded/status-503-service-unavailable-v1.9.json", {Shape::kStatus, kUnavailable, "no endpoints available"}},
  };
  // clang-format on
  return t;
}

std::vector<std::string> AllFixtureFiles() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kDir)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), kDir).string();
    if (rel == "README.md") continue;
    out.push_back(rel);
  }
  return out;
}

TEST(Fixtures, EveryFileIsInTheTable) {
  auto files = AllFixtureFiles();
  ASSERT_GE(files.size(), Table().size());
  for (const auto& f : files) EXPECT_TRUE(Table().count(f)) << "fixture not covered: " << f;
  for (const auto& [f, e] : Table()) EXPECT_TRUE(fs::exists(kDir / f)) << "missing: " << f;
}

class FixtureFile : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureFile, Parses) {
  const std::string rel = GetParam();
  const Expect& want = Table().at(rel);
  const std::string text = Slurp(kDir / rel);
  ASSERT_FALSE(text.empty());
  if (want.shape == Shape::kWatchStream) {
    // Line-split here only to count frames; the scanner below must find the same values.
    JsonStreamScanner scanner;
    std::vector<std::string> values;
    ASSERT_TRUE(scanner.Feed(text, &values));
    ASSERT_EQ(values.size(), 5u);
    std::vector<EventType> types;
    for (const auto& v : values) {
      auto ev = ParseWatchEventText(v);
      ASSERT_TRUE(ev) << ev.error().message();
      types.push_back(ev->type);
    }
    EXPECT_EQ(types,
              (std::vector<EventType>{EventType::kAdded, EventType::kModified, EventType::kBookmark,
                                      EventType::kDeleted, EventType::kError}));
    auto bookmark = ParseWatchEventText(values[2]);
    EXPECT_EQ(bookmark->resource_version, "150");
    auto deleted = ParseWatchEventText(values[3]);
    EXPECT_EQ(deleted->resource_version, "151");
    auto err = ParseWatchEventText(values[4]);
    auto st = ParseApiStatus(err->object);
    ASSERT_TRUE(st);
    EXPECT_EQ(ErrorFromStatus(*st, "watch").code(), ErrorCode::kGone);
    EXPECT_EQ(st->reason, "Expired");
    return;
  }
  auto json = ParseJson(text, rel);
  ASSERT_TRUE(json) << json.error().message();
  switch (want.shape) {
    case Shape::kObject: {
      auto meta = ParseMeta(*json);
      ASSERT_TRUE(meta) << meta.error().message();
      EXPECT_EQ(meta->name, want.name);
      EXPECT_EQ(KeyOf(*json).name, want.name);
      if (FindString(*json, {"kind"}) == "Lease") {
        auto spec = ParseLeaseSpec(*json);
        ASSERT_TRUE(spec) << spec.error().message();
        EXPECT_EQ(spec->holder_identity, "holderIdentityValue");
        EXPECT_EQ(spec->lease_duration_seconds, 2);
        EXPECT_EQ(spec->lease_transitions, 5);
        ASSERT_TRUE(spec->renew_time);
        EXPECT_EQ(FormatMicroTime(*spec->renew_time), "2004-01-01T01:01:01.000004Z");
        EXPECT_EQ(FormatMicroTime(*spec->acquire_time), "2003-01-01T01:01:01.000003Z");
      }
      if (meta->deletion_timestamp) {
        EXPECT_TRUE(ParseTime(*meta->deletion_timestamp)) << *meta->deletion_timestamp;
        EXPECT_TRUE(IsBeingDeleted(*json));
      }
      if (!meta->creation_timestamp.empty()) {
        EXPECT_TRUE(ParseTime(meta->creation_timestamp));
      }
      break;
    }
    case Shape::kList: {
      std::string cont;
      auto list = ParseList(*json, &cont);
      ASSERT_TRUE(list) << list.error().message();
      EXPECT_FALSE(list->resource_version.empty());
      for (const auto& item : list->items) {
        EXPECT_EQ(FindString(item, {"apiVersion"}), "v1");
        EXPECT_TRUE(FindString(item, {"kind"}).has_value());
      }
      break;
    }
    case Shape::kStatus: {
      auto st = ParseApiStatus(*json);
      ASSERT_TRUE(st) << st.error().message();
      Error e = ErrorFromHttp(st->code, text, std::nullopt, "op");
      EXPECT_EQ(e.code(), want.code) << rel << ": " << e.message();
      EXPECT_NE(e.message().find(want.name), std::string::npos) << e.message();
      if (rel == "core.v1.Status.json") {
        EXPECT_EQ(st->retry_after_seconds, 5);
        ASSERT_EQ(st->causes.size(), 1u);
        EXPECT_EQ(st->causes[0].field, "fieldValue");
        EXPECT_EQ(e.retry_after(), std::chrono::seconds(5));
      }
      break;
    }
    case Shape::kWatchFrame: {
      auto ev = ParseWatchEvent(*json);
      if (rel == "core.v1.WatchEvent.json") {
        // The frame is well-formed but its type is a placeholder: rejected with a clear error.
        ASSERT_FALSE(ev);
        EXPECT_NE(ev.error().message().find("unknown type \"typeValue\""), std::string::npos);
        EXPECT_EQ(FindString(*json, {"object", "kind"}), "CustomType");
      } else {
        ASSERT_TRUE(ev) << ev.error().message();
        EXPECT_EQ(ev->type, EventType::kBookmark);
        EXPECT_EQ(ev->resource_version, "12746");
      }
      break;
    }
    case Shape::kDocument:
      EXPECT_TRUE(json->is_object());
      // Discovery documents, version info and DeleteOptions are not objects: no metadata.name.
      EXPECT_TRUE(Name(*json).empty());
      break;
    case Shape::kWatchStream:
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(All, FixtureFile, ::testing::ValuesIn(AllFixtureFiles()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pylon::k8s
