// The API server over HTTP (in-process server on a free port, libcurl client): discovery, list
// shapes, Status bodies, watch streams (frames, bookmarks, in-stream 410, 422 for
// sendInitialEvents), Tables, fault injection, audit log and TLS.
#include <thread>

#include <gtest/gtest.h>

#include "http/tls.h"
#include "test_client.h"

namespace pylon::apiserver {
namespace {

using testing::Call;
using testing::CallOptions;
using testing::Frames;
using testing::InProcessServer;
using testing::WaitFor;

Json J(const std::string& t) { return Json::parse(t); }

CallOptions Post(std::string body, std::string method = "POST",
                 std::string ct = "application/json") {
  CallOptions o;
  o.method = std::move(method);
  o.body = std::move(body);
  o.content_type = std::move(ct);
  return o;
}

const char* kSvc =
    R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}})";

class HttpTest : public ::testing::Test {
 protected:
  static HandlerOptions Fast() {
    HandlerOptions o;
    o.bookmark_interval = std::chrono::milliseconds(200);
    return o;
  }
  InProcessServer server_{Fast()};
  std::string base_ = server_.Url();
  std::string svcs_ = base_ + "/api/v1/namespaces/default/services";
};

TEST_F(HttpTest, Discovery) {
  struct Case {
    const char* path;
    const char* kind;
  } cases[] = {{"/api", "APIVersions"},
               {"/api/v1", "APIResourceList"},
               {"/apis", "APIGroupList"},
               {"/apis/coordination.k8s.io", "APIGroup"},
               {"/apis/coordination.k8s.io/v1", "APIResourceList"},
               {"/apis/discovery.k8s.io/v1", "APIResourceList"},
               {"/apis/apiextensions.k8s.io/v1", "APIResourceList"}};
  for (const auto& c : cases) {
    CallOptions o;
    o.headers = {
        "Accept: "
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"};
    auto r = Call(base_ + c.path, o);
    EXPECT_EQ(r.status, 200) << c.path;
    EXPECT_EQ(r.content_type, "application/json") << c.path;
    EXPECT_EQ(J(r.body)["kind"], c.kind) << c.path;
  }
  auto v = J(Call(base_ + "/version").body);
  EXPECT_EQ(v["major"], "1");
  EXPECT_FALSE(v.contains("kind"));
  auto core = J(Call(base_ + "/api/v1").body);
  bool has_status = false;
  for (const auto& r : core["resources"]) has_status = has_status || r["name"] == "services/status";
  EXPECT_TRUE(has_status);
  EXPECT_EQ(Call(base_ + "/openapi/v2").status, 404);
  EXPECT_EQ(Call(base_ + "/apis/example.com/v1").status, 404);
  EXPECT_EQ(
      Call(base_ + "/apis/nope.io").body,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404})");
}

TEST_F(HttpTest, ListShapes) {
  auto empty = Call(svcs_);
  EXPECT_EQ(empty.status, 200);
  Json e = J(empty.body);
  EXPECT_EQ(e["kind"], "ServiceList");
  EXPECT_EQ(e["apiVersion"], "v1");
  EXPECT_TRUE(e["items"].is_array());
  EXPECT_TRUE(e["metadata"]["resourceVersion"].is_string());
  auto created = Call(svcs_, Post(kSvc));
  ASSERT_EQ(created.status, 201) << created.body;
  Json l = J(Call(svcs_).body);
  ASSERT_EQ(l["items"].size(), 1u);
  EXPECT_FALSE(l["items"][0].contains("kind"));
  EXPECT_FALSE(l["items"][0].contains("apiVersion"));
  EXPECT_EQ(l["metadata"]["resourceVersion"], J(created.body)["metadata"]["resourceVersion"]);
  // All-namespaces list and pagination through HTTP.
  Json all = J(Call(base_ + "/api/v1/services?limit=1").body);
  EXPECT_EQ(all["items"].size(), 1u);
  EXPECT_FALSE(all["metadata"].contains("continue"));
  EXPECT_EQ(Call(svcs_, Post(kSvc)).status, 409);
}

TEST_F(HttpTest, ErrorBodies) {
  Call(svcs_, Post(kSvc));
  auto r =
      Call(svcs_ + "/web", Post(R"({"spec":{"type":"ClusterIP"}})", "PATCH", "application/json"));
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(
      r.body,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json","reason":"UnsupportedMediaType","code":415})");
  auto apply = Call(svcs_ + "/web", Post("x: y", "PATCH", "application/apply-patch+yaml"));
  EXPECT_EQ(apply.status, 415);
  auto nf = Call(svcs_ + "/x");
  EXPECT_EQ(nf.status, 404);
  auto bad = Call(svcs_, Post("{not json"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(J(bad.body)["reason"], "BadRequest");
  auto lease = Call(base_ + "/apis/coordination.k8s.io/v1/namespaces/default/leases/x",
                    Post(R"({"metadata":{"name":"x"}})", "PUT"));
  EXPECT_EQ(lease.status, 404);
  EXPECT_EQ(J(lease.body)["message"], "leases.coordination.k8s.io \"x\" not found");
  EXPECT_EQ(J(lease.body)["details"]["group"], "coordination.k8s.io");
}

TEST_F(HttpTest, WatchFramesAndModes) {
  auto created = J(Call(svcs_, Post(kSvc)).body);
  std::string rv = created["metadata"]["resourceVersion"];
  testing::HttpResult streamed;
  std::thread t(
      [&] { streamed = Call(svcs_ + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=2"); });
  ASSERT_TRUE(WaitFor([&] { return server_.store().WatcherCount() == 1; }));
  auto p = Call(svcs_ + "/web", Post(R"({"metadata":{"labels":{"x":"1"}}})", "PATCH",
                                     "application/merge-patch+json"));
  ASSERT_EQ(p.status, 200);
  ASSERT_EQ(Call(svcs_ + "/web", Post("", "DELETE")).status, 200);
  t.join();
  EXPECT_EQ(streamed.status, 200);
  auto frames = Frames(streamed.body);
  ASSERT_EQ(frames.size(), 2u) << streamed.body;
  EXPECT_EQ(frames[0]["type"], "MODIFIED");
  EXPECT_EQ(frames[0]["object"]["kind"], "Service");
  EXPECT_EQ(frames[0]["object"]["apiVersion"], "v1");
  EXPECT_EQ(frames[1]["type"], "DELETED");
  EXPECT_NE(frames[1]["object"]["metadata"]["resourceVersion"],
            frames[0]["object"]["metadata"]["resourceVersion"]);

  // RV=0: synthetic ADDED for current objects; a selector filters.
  Call(svcs_, Post(kSvc));
  auto r0 = Call(svcs_ + "?watch=true&resourceVersion=0&timeoutSeconds=1&labelSelector=app%3Dweb");
  auto f0 = Frames(r0.body);
  ASSERT_EQ(f0.size(), 1u);
  EXPECT_EQ(f0[0]["type"], "ADDED");
  auto none = Call(svcs_ + "?watch=true&timeoutSeconds=1&labelSelector=app%3Dother");
  EXPECT_TRUE(Frames(none.body).empty());
  // Single-object watch path form.
  auto one = Call(base_ + "/api/v1/watch/namespaces/default/services/web?timeoutSeconds=1");
  EXPECT_EQ(Frames(one.body).size(), 1u);
}

TEST_F(HttpTest, Bookmarks) {
  Call(svcs_, Post(kSvc));
  auto with = Call(svcs_ + "?watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1");
  auto frames = Frames(with.body);
  ASSERT_GE(frames.size(), 2u) << with.body;
  EXPECT_EQ(frames[0]["type"], "ADDED");
  int bookmarks = 0;
  for (const auto& f : frames) {
    if (f["type"] != "BOOKMARK") continue;
    ++bookmarks;
    EXPECT_EQ(f["object"]["kind"], "Service");
    EXPECT_EQ(f["object"]["apiVersion"], "v1");
    EXPECT_EQ(f["object"]["metadata"].size(), 1u);
    EXPECT_EQ(f["object"]["metadata"]["resourceVersion"],
              std::to_string(server_.store().CurrentRv()));
  }
  EXPECT_GE(bookmarks, 1);
  auto without = Call(svcs_ + "?watch=1&resourceVersion=0&timeoutSeconds=1");
  for (const auto& f : Frames(without.body)) EXPECT_NE(f["type"], "BOOKMARK");
}

TEST_F(HttpTest, ExpiredWatchIsInStream410) {
  Call(svcs_, Post(kSvc));
  Call(base_ + "/pylon/faults/compact", Post("{}"));
  auto r = Call(svcs_ + "?watch=1&resourceVersion=1");
  EXPECT_EQ(r.status, 200);
  auto frames = Frames(r.body);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0]["type"], "ERROR");
  EXPECT_EQ(frames[0]["object"]["code"], 410);
  EXPECT_EQ(frames[0]["object"]["reason"], "Expired");
  auto future = Call(svcs_ + "?watch=1&resourceVersion=999999");
  EXPECT_EQ(future.status, 504);
  auto sie = Call(
      svcs_ +
      "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true");
  EXPECT_EQ(sie.status, 422);
}

TEST_F(HttpTest, Tables) {
  Call(svcs_, Post(kSvc));
  CallOptions tbl;
  tbl.headers = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json"};
  Json t = J(Call(svcs_, tbl).body);
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["apiVersion"], "meta.k8s.io/v1");
  ASSERT_EQ(t["columnDefinitions"][3]["name"], "External-IP");
  EXPECT_EQ(t["rows"][0]["cells"][3], "<pending>");
  Call(svcs_ + "/web/status",
       Post(R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.7"},{"ip":"2001:db8::7"}]}}})",
            "PATCH", "application/merge-patch+json"));
  Json t2 = J(Call(svcs_ + "/web", tbl).body);
  EXPECT_EQ(t2["rows"][0]["cells"][3], "192.0.2.7,2001:db8::7");
  EXPECT_EQ(t2["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  Json plain = J(Call(svcs_ + "/web").body);
  EXPECT_EQ(plain["kind"], "Service");
}

TEST_F(HttpTest, FaultInjection) {
  Call(svcs_, Post(kSvc));
  auto set = Call(base_ + "/pylon/faults", Post(R"({"error_rate":1,"error_code":429})"));
  ASSERT_EQ(set.status, 200);
  EXPECT_EQ(J(Call(base_ + "/pylon/faults").body)["error_rate"], 1);
  auto r = Call(svcs_);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.retry_after, "1");
  EXPECT_EQ(J(r.body)["reason"], "TooManyRequests");
  EXPECT_EQ(Call(base_ + "/api/v1").status, 200);  // discovery is exempt
  Call(base_ + "/pylon/faults", Post(R"({"error_rate":1,"error_code":500,"paths":"/leases"})"));
  EXPECT_EQ(Call(svcs_).status, 200);
  EXPECT_EQ(Call(base_ + "/apis/coordination.k8s.io/v1/namespaces/default/leases").status, 500);
  Call(base_ + "/pylon/faults", Post(R"({"conflict_rate":1})"));
  EXPECT_EQ(Call(svcs_).status, 200);
  auto c = Call(svcs_ + "/web", Post(R"({"metadata":{"labels":{"a":"b"}}})", "PATCH",
                                     "application/merge-patch+json"));
  EXPECT_EQ(c.status, 409);
  EXPECT_EQ(J(c.body)["reason"], "Conflict");
  EXPECT_EQ(Call(base_ + "/pylon/faults", Post(R"({"error_rate":2})")).status, 400);
  Call(base_ + "/pylon/faults", Post("{}"));
  EXPECT_EQ(Call(svcs_ + "/web", Post(R"({"metadata":{"labels":{"a":"b"}}})", "PATCH",
                                      "application/merge-patch+json"))
                .status,
            200);

  // cut-watches ends a long watch at once.
  testing::HttpResult streamed;
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] { streamed = Call(svcs_ + "?watch=1&timeoutSeconds=60"); });
  ASSERT_TRUE(WaitFor([&] { return server_.store().WatcherCount() == 1; }));
  auto cut = Call(base_ + "/pylon/faults/cut-watches", Post("{}"));
  EXPECT_EQ(J(cut.body)["closed"], 1);
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(streamed.status, 200);
}

TEST(HttpTls, ServesWithGeneratedCa) {
  auto certs = http::GenerateCertificates("test", {"127.0.0.1", "localhost"});
  ASSERT_TRUE(certs) << certs.error().message();
  auto ctx = http::TlsContext::FromPem(certs->server_cert_pem, certs->server_key_pem);
  ASSERT_TRUE(ctx);
  InProcessServer s({}, {}, *ctx);
  ASSERT_EQ(s.Url().rfind("https://127.0.0.1:", 0), 0u);
  CallOptions o;
  o.ca_pem = certs->ca_cert_pem;
  auto r = Call(s.Url() + "/api/v1/namespaces", o);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(J(r.body)["items"].size(), 3u);
  auto untrusted = Call(s.Url() + "/version");
  EXPECT_FALSE(untrusted.error.empty());  // the system trust store does not know our CA
}

TEST(HttpAudit, OneLinePerRequest) {
  std::string dir = testing::MakeTempDir();
  auto audit = AuditLog::Open(dir + "/audit.log");
  ASSERT_TRUE(audit);
  {
    InProcessServer s({}, {}, nullptr, audit->get());
    CallOptions ua;
    ua.headers = {"User-Agent: pylon-test/1"};
    Call(s.Url() + "/api/v1/namespaces/default/services", ua);
    Call(s.Url() + "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", ua);
    CallOptions st = Post(R"({"status":{}})", "PATCH", "application/merge-patch+json");
    Call(s.Url() + "/api/v1/namespaces/default/services/x/status", st);
  }
  auto lines = Frames(testing::ReadFile(dir + "/audit.log"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(
      lines[0],
      J(R"({"user_agent":"pylon-test/1","verb":"list","group":"","resource":"services","subresource":"","namespace":"default","name":"","code":200})"));
  EXPECT_EQ(lines[1]["verb"], "get");
  EXPECT_EQ(lines[1]["group"], "coordination.k8s.io");
  EXPECT_EQ(lines[1]["code"], 404);
  EXPECT_EQ(lines[2]["verb"], "patch");
  EXPECT_EQ(lines[2]["subresource"], "status");
}

}  // namespace
}  // namespace pylon::apiserver
