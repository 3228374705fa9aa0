// Pure parsers and formatters: base64, Status → Error mapping, metadata, selectors,
// resource paths, lease JSON, watch frames (malformed ones never crash).
#include <gtest/gtest.h>

#include "common/time.h"
#include "k8s/api_status.h"
#include "k8s/base64.h"
#include "k8s/lease.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "k8s/selector.h"
#include "k8s/watch_event.h"

namespace pylon::k8s {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

TEST(Base64, RoundTripAndErrors) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "-----BEGIN CERTIFICATE-----\n\x01\xff"}) {
    auto enc = Base64Encode(s);
    auto dec = Base64Decode(enc);
    ASSERT_TRUE(dec) << enc;
    EXPECT_EQ(*dec, s);
  }
  EXPECT_EQ(*Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVsbG8"), "hello");  // padding optional
  EXPECT_FALSE(Base64Decode("aGV*bG8="));
  EXPECT_FALSE(Base64Decode("aGVsbG8=x"));
  EXPECT_FALSE(Base64Decode("a"));
}

TEST(ApiStatus, HttpCodeMapping) {
  struct Row {
    int64_t http;
    const char* reason;
    ErrorCode want;
  };
  const Row rows[] = {
      {404, "NotFound", ErrorCode::kNotFound},
      {409, "Conflict", ErrorCode::kConflict},
      {409, "AlreadyExists", ErrorCode::kAlreadyExists},
      {410, "Expired", ErrorCode::kGone},
      {410, "Gone", ErrorCode::kGone},
      {422, "Invalid", ErrorCode::kInvalidArgument},
      {400, "BadRequest", ErrorCode::kInvalidArgument},
      {429, "TooManyRequests", ErrorCode::kUnavailable},
      {500, "InternalError", ErrorCode::kUnavailable},
      {503, "ServiceUnavailable", ErrorCode::kUnavailable},
      {504, "Timeout", ErrorCode::kUnavailable},
      {401, "Unauthorized", ErrorCode::kPermission},
      {403, "Forbidden", ErrorCode::kPermission},
      {415, "UnsupportedMediaType", ErrorCode::kUnsupported},
      {0, "Expired", ErrorCode::kGone},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(ErrorCodeFor(r.http, r.reason), r.want) << r.http << " " << r.reason;
  }
}

TEST(ApiStatus, NonStatusBodiesAndRetryAfter) {
  Error e = ErrorFromHttp(502, "<html>bad gateway</html>\n", std::chrono::seconds(7), "get x");
  EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(e.message(), "get x: HTTP 502: <html>bad gateway</html>");
  EXPECT_EQ(e.retry_after(), std::chrono::seconds(7));
  Error empty = ErrorFromHttp(429, "", std::nullopt, "list");
  EXPECT_EQ(empty.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(empty.retry_after(), std::chrono::milliseconds(0));
  // A Status of the wrong shape is not trusted; the HTTP code still decides.
  Error odd = ErrorFromHttp(409, R"({"kind":"Status","code":"409"})", std::nullopt, "put");
  EXPECT_EQ(odd.code(), ErrorCode::kConflict);
  // Wrap keeps the retry-after.
  EXPECT_EQ(e.Wrap("ctx").retry_after(), std::chrono::seconds(7));
}

TEST(ApiStatus, MalformedStatusFieldsAreErrors) {
  const char* bad[] = {
      R"([])",
      R"({"kind":"Service"})",
      R"({"kind":"Status","message":5})",
      R"({"kind":"Status","code":"x"})",
      R"({"kind":"Status","details":[]})",
      R"({"kind":"Status","details":{"causes":{}}})",
      R"({"kind":"Status","details":{"causes":[1]}})",
      R"({"kind":"Status","details":{"retryAfterSeconds":"5"}})",
  };
  for (const char* text : bad) {
    auto j = ParseJson(text);
    ASSERT_TRUE(j);
    EXPECT_FALSE(ParseApiStatus(*j)) << text;
  }
}

TEST(Object, MetaAndAccessors) {
  auto j = ParseJson(R"({"metadata":{"name":"web","namespace":"demo","uid":"u1",
    "resourceVersion":"7","generation":3,"labels":{"a":"b"},"annotations":{"purelb.io/x":"y"},
    "finalizers":["f"],"deletionTimestamp":"2025-01-01T00:00:00Z","creationTimestamp":null}})");
  ASSERT_TRUE(j);
  auto m = ParseMeta(*j);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "web");
  EXPECT_EQ(m->ns, "demo");
  EXPECT_EQ(m->generation, 3);
  EXPECT_EQ(m->labels.at("a"), "b");
  EXPECT_EQ(m->finalizers, std::vector<std::string>{"f"});
  EXPECT_TRUE(m->deletion_timestamp);
  EXPECT_EQ(Annotation(*j, "purelb.io/x"), "y");
  EXPECT_EQ(Label(*j, "missing"), "");
  EXPECT_EQ(KeyOf(*j).String(), "demo/web");
}

TEST(Object, MalformedMetadataIsAnErrorNotACrash) {
  const char* bad[] = {
      R"(5)",
      R"({})",
      R"({"metadata":[]})",
      R"({"metadata":{"name":5}})",
      R"({"metadata":{"labels":[]}})",
      R"({"metadata":{"labels":{"a":1}}})",
      R"({"metadata":{"generation":"1"}})",
      R"({"metadata":{"finalizers":"f"}})",
  };
  for (const char* text : bad) {
    auto j = ParseJson(text);
    ASSERT_TRUE(j);
    EXPECT_FALSE(ParseMeta(*j)) << text;
    EXPECT_EQ(Name(*j), "");  // accessors never throw
  }
  EXPECT_FALSE(ParseJson("{\"a\":"));
  EXPECT_FALSE(ParseJson(""));
}

TEST(Resource, Paths) {
  EXPECT_EQ(resources::Services().CollectionPath("demo"), "/api/v1/namespaces/demo/services");
  EXPECT_EQ(resources::Services().CollectionPath(""), "/api/v1/services");
  EXPECT_EQ(resources::Services().ObjectPath("demo", "web", "status"),
            "/api/v1/namespaces/demo/services/web/status");
  EXPECT_EQ(resources::Leases().ObjectPath("kube-system", "pylon"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/pylon");
  EXPECT_EQ(resources::Nodes().ObjectPath("ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(resources::Leases().ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(Query().Add("labelSelector", "a=b,c!=d").Add("limit", "500").String(),
            "?labelSelector=a%3Db%2Cc%21%3Dd&limit=500");
  EXPECT_EQ(Query().String(), "");
}

TEST(Selector, LabelTable) {
  auto obj = *ParseJson(R"({"metadata":{"labels":{"app":"web","tier":"front"}}})");
  struct Row {
    const char* sel;
    bool want;
  };
  const Row rows[] = {
      {"", true},
      {"app=web", true},
      {"app==web", true},
      {"app=db", false},
      {"app!=db", true},
      {"app!=web", false},
      {"app", true},
      {"!app", false},
      {"!missing", true},
      {"missing!=x", true},
      {"app=web,tier=front", true},
      {"app=web,tier=back", false},
      {"app in (db, web)", true},
      {"app notin (db,web)", false},
      {"app in (db)", false},
  };
  for (const auto& r : rows) {
    auto m = MatchesLabelSelector(obj, r.sel);
    ASSERT_TRUE(m) << r.sel;
    EXPECT_EQ(*m, r.want) << r.sel;
  }
}

TEST(Selector, FieldTable) {
  auto obj = *ParseJson(
      R"({"metadata":{"name":"web","namespace":"demo"},"involvedObject":{"kind":"Service"}})");
  EXPECT_TRUE(*MatchesFieldSelector(obj, "metadata.name=web"));
  EXPECT_TRUE(*MatchesFieldSelector(obj, "metadata.name=web,metadata.namespace=demo"));
  EXPECT_FALSE(*MatchesFieldSelector(obj, "metadata.name!=web"));
  EXPECT_TRUE(*MatchesFieldSelector(obj, "involvedObject.kind==Service"));
  EXPECT_FALSE(*MatchesFieldSelector(obj, "involvedObject.name=x"));
  EXPECT_FALSE(MatchesFieldSelector(obj, "metadata.name"));
}

TEST(Lease, RoundTripKeepsSixDigits) {
  LeaseSpec spec;
  spec.holder_identity = "pod-a";
  spec.lease_duration_seconds = 15;
  spec.acquire_time = *ParseTime("2025-01-02T03:04:05.000001Z");
  spec.renew_time = *ParseTime("2025-01-02T03:04:06.5Z");
  spec.lease_transitions = 3;
  Json lease = MakeLease("kube-system", "pylon", spec);
  EXPECT_EQ(lease["spec"]["renewTime"], "2025-01-02T03:04:06.500000Z");
  EXPECT_EQ(lease["spec"]["acquireTime"], "2025-01-02T03:04:05.000001Z");
  auto back = ParseLeaseSpec(lease);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, spec);
  lease["metadata"]["resourceVersion"] = "9";
  lease["metadata"]["labels"]["x"] = "y";
  LeaseSpec other = spec;
  other.holder_identity = "pod-b";
  Json replaced = WithLeaseSpec(lease, other);
  EXPECT_EQ(ResourceVersion(replaced), "9");
  EXPECT_EQ(Label(replaced, "x"), "y");
  EXPECT_EQ(replaced["spec"]["holderIdentity"], "pod-b");
}

TEST(Lease, MalformedSpecs) {
  EXPECT_TRUE(ParseLeaseSpec(*ParseJson(R"({"metadata":{}})")));  // no spec: defaults
  const char* bad[] = {
      R"({"spec":[]})",
      R"({"spec":{"holderIdentity":1}})",
      R"({"spec":{"leaseDurationSeconds":"15"}})",
      R"({"spec":{"renewTime":"yesterday"}})",
      R"({"spec":{"acquireTime":5}})",
  };
  for (const char* text : bad) EXPECT_FALSE(ParseLeaseSpec(*ParseJson(text))) << text;
}

TEST(WatchEvent, MalformedFrames) {
  const char* bad[] = {
      R"([])",
      R"({"object":{}})",
      R"({"type":"ADDED"})",
      R"({"type":"ADDED","object":[]})",
      R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})",
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{}}})",
      R"({"type":"SOMETHING","object":{}})",
      R"({"type":5,"object":{}})",
  };
  for (const char* text : bad) EXPECT_FALSE(ParseWatchEventText(text)) << text;
  EXPECT_FALSE(ParseWatchEventText("{not json"));
  auto err = ParseWatchEventText(R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->type, EventType::kError);
}

}  // namespace
}  // namespace pylon::k8s
