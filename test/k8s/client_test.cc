// ClientImpl over a scripted transport: request shapes, pagination, error mapping, and the
// watch stream (scanner across chunk boundaries, in-stream and HTTP 410, content types).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include <gtest/gtest.h>

#include "fake_transport.h"
#include "k8s/client_impl.h"
#include "k8s/json_stream.h"

namespace pylon::k8s {
namespace {

std::string WatchFixture() {
  std::ifstream in(std::filesystem::path(PYLON_FIXTURES_DIR) / "kubernetes/watch-stream.jsonl");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- scanner ----

TEST(JsonStreamScanner, SplitsAtEveryChunkBoundary) {
  const std::string stream = WatchFixture();
  std::vector<std::string> whole;
  JsonStreamScanner one;
  ASSERT_TRUE(one.Feed(stream, &whole));
  ASSERT_EQ(whole.size(), 5u);
  // Two chunks split at every offset, then byte-by-byte: same values every time.
  for (size_t cut = 0; cut <= stream.size(); cut += 7) {
    JsonStreamScanner s;
    std::vector<std::string> got;
    ASSERT_TRUE(s.Feed(std::string_view(stream).substr(0, cut), &got));
    ASSERT_TRUE(s.Feed(std::string_view(stream).substr(cut), &got));
    EXPECT_EQ(got, whole) << "cut at " << cut;
    EXPECT_TRUE(s.Idle());
  }
  JsonStreamScanner bytes;
  std::vector<std::string> got;
  for (char c : stream) ASSERT_TRUE(bytes.Feed(std::string_view(&c, 1), &got));
  EXPECT_EQ(got, whole);
}

TEST(JsonStreamScanner, StringsWithBracesAndEscapes) {
  const std::string a = R"({"type":"ADDED","object":{"m":"a } b { c \" } \\","x":["]"]}})";
  const std::string b = R"({"k":"\\\"}{"})";
  const std::string c = "{\"multi\":\n  {\"line\": 1}\n}";
  const std::string stream = a + b + "\n\n" + c + " ";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    JsonStreamScanner s;
    std::vector<std::string> got;
    ASSERT_TRUE(s.Feed(std::string_view(stream).substr(0, cut), &got));
    ASSERT_TRUE(s.Feed(std::string_view(stream).substr(cut), &got));
    ASSERT_EQ(got.size(), 3u) << cut;
    EXPECT_EQ(got[0], a);
    EXPECT_EQ(got[1], b);
    EXPECT_EQ(got[2], c);
  }
}

TEST(JsonStreamScanner, RejectsGarbageAndOversize) {
  JsonStreamScanner s;
  std::vector<std::string> got;
  EXPECT_FALSE(s.Feed("  x{}", &got));
  EXPECT_FALSE(s.Feed("{}", &got));  // stays failed
  JsonStreamScanner small(16);
  EXPECT_FALSE(small.Feed(R"({"aaaaaaaaaaaaaaaaaaaaaaaa":1})", &got));
  JsonStreamScanner partial;
  EXPECT_TRUE(partial.Feed(R"({"a":)", &got));
  EXPECT_FALSE(partial.Idle());
}

// ---- requests and replies ----

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    auto t = std::make_unique<FakeTransport>();
    transport_ = t.get();
    client_ = std::make_unique<ClientImpl>(std::move(t));
  }
  FakeTransport* transport_;
  std::unique_ptr<ClientImpl> client_;
};

TEST_F(ClientTest, GetCreateUpdatePatchDeleteRequests) {
  transport_->Push(
      Reply(200, R"({"kind":"Service","metadata":{"name":"web","namespace":"demo"}})"));
  auto got = client_->Get(resources::Services(), "demo", "web");
  ASSERT_TRUE(got);
  EXPECT_EQ(Name(*got), "web");

  Json svc = {{"metadata", {{"name", "web"}, {"namespace", "demo"}, {"resourceVersion", "5"}}}};
  transport_->Push(Reply(201, svc.dump()));
  ASSERT_TRUE(client_->Create(resources::Services(), svc));
  transport_->Push(Reply(200, svc.dump()));
  ASSERT_TRUE(client_->Update(resources::Services(), svc));
  transport_->Push(Reply(200, svc.dump()));
  ASSERT_TRUE(client_->UpdateStatus(resources::Services(), svc));
  transport_->Push(Reply(200, svc.dump()));
  ASSERT_TRUE(client_->Patch(resources::Services(), "demo", "web", PatchType::kStrategicMerge,
                             Json{{"metadata", {{"labels", {{"a", "b"}}}}}}, ""));
  transport_->Push(Reply(200, svc.dump()));
  ASSERT_TRUE(client_->Patch(resources::Services(), "demo", "web", PatchType::kJson, Json::array(),
                             "status"));
  transport_->Push(Reply(200, R"({"kind":"Status","status":"Success"})"));
  DeleteOptions del;
  del.precondition_uid = "u1";
  del.precondition_resource_version = "5";
  ASSERT_TRUE(client_->Delete(resources::Services(), "demo", "web", del));

  auto reqs = transport_->requests();
  // Each request's method, path and content type; nullptr: not checked.
  const char* const want[][3] = {
      {"GET", "/api/v1/namespaces/demo/services/web", nullptr},
      {"POST", "/api/v1/namespaces/demo/services", "application/json"},
      {"PUT", "/api/v1/namespaces/demo/services/web", nullptr},
      {nullptr, "/api/v1/namespaces/demo/services/web/status", nullptr},
      {"PATCH", nullptr, "application/strategic-merge-patch+json"},
      {nullptr, "/api/v1/namespaces/demo/services/web/status", "application/json-patch+json"},
      {"DELETE", nullptr, nullptr},
  };
  ASSERT_EQ(reqs.size(), std::size(want));
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto& [method, path, content_type] = want[i];
    if (method != nullptr) {
      EXPECT_EQ(reqs[i].method, method) << i;
    }
    if (path != nullptr) {
      EXPECT_EQ(reqs[i].path, path) << i;
    }
    if (content_type != nullptr) {
      EXPECT_EQ(reqs[i].content_type, content_type) << i;
    }
  }
  auto body = ParseJson(reqs[6].body);
  ASSERT_TRUE(body);
  EXPECT_EQ((*body)["preconditions"]["uid"], "u1");
  EXPECT_EQ((*body)["preconditions"]["resourceVersion"], "5");
}

TEST_F(ClientTest, ErrorRepliesMapToCodes) {
  // A metav1.Status reply of `code` (the message left out when empty).
  auto status = [](int64_t code, const char* reason, const char* message = "") {
    Json s = {{"kind", "Status"}, {"code", code}, {"reason", reason}};
    if (*message != 0) s["message"] = message;
    return Reply(code, s.dump());
  };
  const std::pair<ScriptedReply, ErrorCode> rows[] = {
      {status(404, "NotFound", "services \"web\" not found"), ErrorCode::kNotFound},
      {status(409, "Conflict", "modified"), ErrorCode::kConflict},
      {status(409, "AlreadyExists", "exists"), ErrorCode::kAlreadyExists},
      {status(410, "Gone"), ErrorCode::kGone},
      {status(422, "Invalid"), ErrorCode::kInvalidArgument},
      {Reply(429, ""), ErrorCode::kUnavailable},
      {Reply(500, "oops"), ErrorCode::kUnavailable},
      {Reply(401, ""), ErrorCode::kPermission},
      {status(403, "Forbidden"), ErrorCode::kPermission},
  };
  for (const auto& [reply, want] : rows) {
    transport_->Push(reply);
    auto got = client_->Get(resources::Services(), "demo", "web");
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), want) << reply.status << " " << got.error().message();
  }
  ScriptedReply busy = Reply(429, "");
  busy.retry_after = std::chrono::seconds(3);
  transport_->Push(busy);
  auto got = client_->Get(resources::Services(), "demo", "web");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().retry_after(), std::chrono::seconds(3));
  ScriptedReply down;
  down.transport_error = Error(ErrorCode::kUnavailable, "connection refused");
  transport_->Push(down);
  EXPECT_EQ(client_->Get(resources::Services(), "demo", "web").error().code(),
            ErrorCode::kUnavailable);
}

TEST_F(ClientTest, MalformedRepliesAreErrors) {
  const char* bodies[] = {"", "{", "[]", "\"str\"", "<html>"};
  for (const char* b : bodies) {
    transport_->Push(Reply(200, b));
    auto got = client_->Get(resources::Services(), "demo", "web");
    EXPECT_FALSE(got) << b;
  }
  const char* lists[] = {R"({"items":{}})", R"({"items":[1]})", R"({"items":[{"metadata":{}}]})",
                         R"({"metadata":{"resourceVersion":5},"items":[]})"};
  for (const char* b : lists) {
    transport_->Push(Reply(200, b));
    EXPECT_FALSE(client_->List(resources::Services(), "", {})) << b;
  }
}

// A paginated list at an RV other than "0" asks for "not older than" explicitly: with `limit`
// and no match, kube-apiserver serves exactly that RV (an old snapshot).
TEST_F(ClientTest, PaginatedListAtAnRvAsksForNotOlderThan) {
  transport_->Push(Reply(200, R"({"metadata":{"resourceVersion":"20"},"items":[]})"));
  transport_->Push(Reply(200, R"({"metadata":{"resourceVersion":"20"},"items":[]})"));
  ListOptions lo;
  lo.page_size = 5;
  lo.resource_version = "12";
  ASSERT_TRUE(client_->List(resources::Services(), "demo", lo));
  lo.page_size = 0;
  ASSERT_TRUE(client_->List(resources::Services(), "demo", lo));
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].path,
            "/api/v1/namespaces/demo/services?limit=5&resourceVersion=12&"
            "resourceVersionMatch=NotOlderThan");
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/demo/services?resourceVersion=12");
}

TEST_F(ClientTest, ListMergesPagesAndFallsBackOnExpiredContinue) {
  transport_->Push(Reply(200, R"({"kind":"ServiceList","apiVersion":"v1",
    "metadata":{"resourceVersion":"10","continue":"t1"},"items":[{"metadata":{"name":"a"}}]})"));
  transport_->Push(Reply(200, R"({"kind":"ServiceList","apiVersion":"v1",
    "metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"b"}}]})"));
  ListOptions lo;
  lo.page_size = 1;
  lo.label_selector = "app=web";
  lo.resource_version = "0";
  auto list = client_->List(resources::Services(), "demo", lo);
  ASSERT_TRUE(list) << list.error().message();
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->resource_version, "10");
  EXPECT_EQ(list->items[1]["kind"], "Service");
  EXPECT_EQ(list->items[1]["apiVersion"], "v1");
  auto reqs = transport_->requests();
  EXPECT_EQ(reqs[0].path,
            "/api/v1/namespaces/demo/services?labelSelector=app%3Dweb&limit=1&resourceVersion=0");
  EXPECT_EQ(reqs[1].path,
            "/api/v1/namespaces/demo/services?labelSelector=app%3Dweb&limit=1&continue=t1");

  // Page 2 expired: one full list without limit at the requested RV.
  transport_->Push(
      Reply(200, R"({"metadata":{"resourceVersion":"10","continue":"t1"},"items":[]})"));
  transport_->Push(Reply(410, R"({"kind":"Status","code":410,"reason":"Expired"})"));
  transport_->Push(Reply(
      200,
      R"({"metadata":{"resourceVersion":"12"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})"));
  list = client_->List(resources::Services(), "", lo);
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->resource_version, "12");
  reqs = transport_->requests();
  EXPECT_EQ(reqs.back().path, "/api/v1/services?labelSelector=app%3Dweb&resourceVersion=0");
}

TEST_F(ClientTest, ListTransformsEachItemAsItsPageArrives) {
  transport_->Push(Reply(200, R"({"kind":"ServiceList","apiVersion":"v1",
    "metadata":{"resourceVersion":"10","continue":"t1"},
    "items":[{"metadata":{"name":"a","managedFields":[{}]},"spec":{"x":1}}]})"));
  transport_->Push(Reply(200, R"({"kind":"ServiceList","apiVersion":"v1",
    "metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"b"},"spec":{"x":2}}]})"));
  ListOptions lo;
  lo.page_size = 1;
  std::vector<std::size_t> requests_seen;  // requests sent when each item was transformed
  lo.item_transform = [&](Json& item) {
    requests_seen.push_back(transport_->requests().size());
    item.erase("spec");
    item["metadata"].erase("managedFields");
  };
  auto list = client_->List(resources::Services(), "demo", lo);
  ASSERT_TRUE(list) << list.error().message();
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0],
            (Json{{"metadata", {{"name", "a"}}}, {"kind", "Service"}, {"apiVersion", "v1"}}));
  EXPECT_FALSE(list->items[1].contains("spec"));
  EXPECT_EQ(requests_seen, (std::vector<std::size_t>{1, 2})) << "page 1 transformed before page 2";
}

// ---- watch ----

TEST_F(ClientTest, WatchDeliversEventsAcrossChunksAndEndsOnInStream410) {
  const std::string stream = WatchFixture();
  ScriptedReply r;
  for (size_t i = 0; i < stream.size(); i += 13) r.chunks.push_back(stream.substr(i, 13));
  r.content_type = "application/json";
  transport_->Push(r);
  std::vector<std::string> seen;
  WatchOptions wo;
  wo.resource_version = "100";
  wo.timeout_seconds = 300;
  Status st = client_->Watch(
      resources::Services(), "demo", wo,
      [&](WatchEvent&& ev) {
        seen.push_back(std::string(EventTypeName(ev.type)) + "@" + ev.resource_version);
        return true;
      },
      nullptr);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kGone);
  EXPECT_EQ(seen,
            (std::vector<std::string>{"ADDED@101", "MODIFIED@102", "BOOKMARK@150", "DELETED@151"}));
  auto reqs = transport_->requests();
  EXPECT_EQ(reqs[0].path,
            "/api/v1/namespaces/demo/services?watch=1&resourceVersion=100&"
            "allowWatchBookmarks=true&timeoutSeconds=300");
}

TEST_F(ClientTest, WatchStatusesAndContentTypes) {
  const std::string ev =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"3"}}})";
  struct Row {
    int64_t http;
    std::string content_type;
    std::vector<std::string> chunks;
    std::string body;
    bool ok;
    ErrorCode code;
    int events;
  };
  const Row rows[] = {
      {200, "application/json;stream=watch", {ev}, "", true, ErrorCode::kInternal, 1},
      {200, "text/plain", {ev, "\n", ev}, "", true, ErrorCode::kInternal, 2},
      {200, "application/vnd.kubernetes.protobuf", {}, "", false, ErrorCode::kUnsupported, 0},
      {410,
       "application/json",
       {},
       R"({"kind":"Status","code":410,"reason":"Gone"})",
       false,
       ErrorCode::kGone,
       0},
      {200,
       "application/json",
       {R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Gone"}})"},
       "",
       false,
       ErrorCode::kGone,
       0},
      {200,
       "application/json",
       {R"({"type":"ERROR","object":{"kind":"Status","code":500,"reason":"InternalError"}})"},
       "",
       false,
       ErrorCode::kUnavailable,
       0},
      {200,
       "application/json",
       {"{\"type\":\"ADDED\",\"object\":5}"},
       "",
       false,
       ErrorCode::kUnavailable,
       0},
      {200, "application/json", {"garbage"}, "", false, ErrorCode::kUnavailable, 0},
      {500, "application/json", {}, "boom", false, ErrorCode::kUnavailable, 0},
  };
  for (const auto& r : rows) {
    ScriptedReply s;
    s.status = r.http;
    s.content_type = r.content_type;
    s.chunks = r.chunks;
    s.body = r.body;
    transport_->Push(s);
    int events = 0;
    Status st = client_->Watch(
        resources::Services(), "", {},
        [&](WatchEvent&&) {
          ++events;
          return true;
        },
        nullptr);
    EXPECT_EQ(st.has_value(), r.ok) << r.http << " " << r.content_type;
    if (!st && !r.ok) {
      EXPECT_EQ(st.error().code(), r.code) << st.error().message();
    }
    EXPECT_EQ(events, r.events) << r.content_type;
  }
}

TEST_F(ClientTest, WatchHandlerCanStopAndTransportErrorsAreUnavailable) {
  const std::string ev =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"3"}}})";
  ScriptedReply r;
  r.chunks = {ev, ev, ev};
  transport_->Push(r);
  int events = 0;
  EXPECT_TRUE(client_->Watch(
      resources::Services(), "", {}, [&](WatchEvent&&) { return ++events < 2; }, nullptr));
  EXPECT_EQ(events, 2);
  ScriptedReply cut;
  cut.chunks = {ev};
  cut.transport_error = Error(ErrorCode::kUnavailable, "connection reset");
  transport_->Push(cut);
  Status st = client_->Watch(
      resources::Services(), "", {}, [](WatchEvent&&) { return true; }, nullptr);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace pylon::k8s
