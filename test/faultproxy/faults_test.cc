// The fault decisions of `pylon-dev fault-proxy`, alone: settings parsing, which requests faults
// may touch, the Status bodies (byte for byte what kube-apiserver writes), and the rates.
#include "faultproxy/faults.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace pylon::faultproxy {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(PYLON_FIXTURES_DIR) + "/kubernetes/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FaultSettings, ParsesAndValidates) {
  auto s = FaultSettings::FromJson(Json::parse(
      R"({"error_rate":0.2,"error_code":429,"conflict_rate":0.1,"latency_ms":50,"paths":"services"})"));
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_DOUBLE_EQ(s->error_rate, 0.2);
  EXPECT_EQ(s->error_code, 429);
  EXPECT_DOUBLE_EQ(s->conflict_rate, 0.1);
  EXPECT_EQ(s->latency_ms, 50);
  EXPECT_EQ(s->paths, "services");
  auto round = FaultSettings::FromJson(s->ToJson());
  ASSERT_TRUE(round);
  EXPECT_EQ(round->ToJson(), s->ToJson());

  auto empty = FaultSettings::FromJson(Json::object());
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->error_rate, 0);
  EXPECT_EQ(empty->error_code, 500);

  for (const char* bad :
       {R"([])", R"({"error_rate":1.5})", R"({"error_rate":"x"})", R"({"conflict_rate":-0.1})",
        R"({"error_code":200})", R"({"error_code":42.5})", R"({"latency_ms":-1})",
        R"({"latency_ms":600000})", R"({"paths":3})"}) {
    auto r = FaultSettings::FromJson(Json::parse(bad));
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    }
  }
  Faults f;
  FaultSettings bad_re;
  bad_re.paths = "(unclosed";
  EXPECT_FALSE(f.Set(bad_re));
}

TEST(ClassifyRequest, ResourcesAndExemptPaths) {
  for (const char* p : {"/pylon/faults", "/api", "/api/v1", "/apis", "/apis/coordination.k8s.io",
                        "/apis/coordination.k8s.io/v1", "/version", "/healthz", "/readyz", "/livez",
                        "/openapi/v3", "/metrics", "/.well-known/openid-configuration"}) {
    EXPECT_TRUE(ClassifyRequest("GET", p, "").exempt) << p;
  }
  RequestInfo svc = ClassifyRequest("PUT", "/api/v1/namespaces/ns1/services/web/status", "");
  EXPECT_FALSE(svc.exempt);
  EXPECT_TRUE(svc.is_write);
  EXPECT_FALSE(svc.is_watch);
  EXPECT_EQ(svc.group, "");
  EXPECT_EQ(svc.ns, "ns1");
  EXPECT_EQ(svc.resource, "services");
  EXPECT_EQ(svc.name, "web");
  EXPECT_EQ(svc.sub, "status");

  RequestInfo lease =
      ClassifyRequest("GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases", "true");
  EXPECT_TRUE(lease.is_watch);
  EXPECT_FALSE(lease.is_write);
  EXPECT_EQ(lease.group, "coordination.k8s.io");
  EXPECT_EQ(lease.resource, "leases");
  EXPECT_EQ(lease.name, "");

  RequestInfo old_watch = ClassifyRequest("GET", "/api/v1/watch/namespaces/a/services", "");
  EXPECT_TRUE(old_watch.is_watch);
  EXPECT_EQ(old_watch.resource, "services");
  EXPECT_EQ(old_watch.ns, "a");

  RequestInfo ns = ClassifyRequest("PUT", "/api/v1/namespaces/a/finalize", "");
  EXPECT_EQ(ns.resource, "namespaces");
  EXPECT_EQ(ns.name, "a");
  EXPECT_EQ(ns.sub, "finalize");
  EXPECT_TRUE(ClassifyRequest("POST", "/api/v1/namespaces", "").is_write);
  EXPECT_TRUE(ClassifyRequest("DELETE", "/api/v1/nodes/n1", "").is_write);
  EXPECT_FALSE(ClassifyRequest("GET", "/api/v1/nodes/n1", "0").is_watch);
}

TEST(StatusBodies, AreWhatKubeApiserverWrites) {
  InjectedError c = ConflictStatus("", "services", "foo");
  EXPECT_EQ(c.code, 409);
  std::string want = Fixture("status-409-conflict.json");
  while (!want.empty() && (want.back() == '\n' || want.back() == ' ')) want.pop_back();
  EXPECT_EQ(c.body, want);

  InjectedError grouped = ConflictStatus("coordination.k8s.io", "leases", "l1");
  EXPECT_NE(grouped.body.find(R"(on leases.coordination.k8s.io \"l1\")"), std::string::npos)
      << grouped.body;
  EXPECT_NE(grouped.body.find(R"("details":{"name":"l1","group":"coordination.k8s.io")"),
            std::string::npos);

  InjectedError tmr = TooManyRequestsStatus(1);
  EXPECT_EQ(tmr.code, 429);
  EXPECT_EQ(tmr.retry_after_seconds, 1);
  EXPECT_EQ(tmr.body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"Too many requests, please try again later.","reason":"TooManyRequests",)"
            R"("details":{"retryAfterSeconds":1},"code":429})");

  InjectedError ie = InternalErrorStatus("injected fault");
  EXPECT_EQ(ie.body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"Internal error occurred: injected fault","reason":"InternalError",)"
            R"("details":{"causes":[{"message":"injected fault"}]},"code":500})");

  // The watch ERROR event for a compacted resourceVersion: the recorded stream's line.
  std::string stream = Fixture("watch-stream.jsonl");
  std::string line = ExpiredWatchEvent(5, 100);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_NE(stream.find(line), std::string::npos) << line;
}

TEST(Faults, DecisionsFollowTheSettings) {
  Faults f(42);
  RequestInfo get = ClassifyRequest("GET", "/api/v1/namespaces/a/services/web", "");
  RequestInfo put = ClassifyRequest("PUT", "/api/v1/namespaces/a/services/web", "");
  RequestInfo discovery = ClassifyRequest("GET", "/apis", "");
  EXPECT_FALSE(f.Decide(get).error);  // nothing set: nothing injected

  FaultSettings all500;
  all500.error_rate = 1;
  all500.latency_ms = 7;
  ASSERT_TRUE(f.Set(all500));
  FaultDecision d = f.Decide(get);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, 500);
  EXPECT_EQ(d.latency_ms, 7);
  FaultDecision exempt = f.Decide(discovery);
  EXPECT_FALSE(exempt.error);
  EXPECT_EQ(exempt.latency_ms, 0);

  FaultSettings all429 = all500;
  all429.error_code = 429;
  ASSERT_TRUE(f.Set(all429));
  d = f.Decide(put);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, 429);
  EXPECT_EQ(d.error->retry_after_seconds, 1);

  FaultSettings conflicts;
  conflicts.conflict_rate = 1;
  ASSERT_TRUE(f.Set(conflicts));
  EXPECT_FALSE(f.Decide(get).error) << "conflicts only on writes";
  d = f.Decide(put);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, 409);
  EXPECT_NE(d.error->body.find(R"(services \"web\")"), std::string::npos);

  FaultSettings only_leases = all500;
  only_leases.paths = "/leases";
  ASSERT_TRUE(f.Set(only_leases));
  EXPECT_FALSE(f.Decide(get).error);
  EXPECT_TRUE(f.Decide(ClassifyRequest("GET", "/apis/coordination.k8s.io/v1/leases", "")).error);

  // A rate is a rate: 30% of 4000 requests, give or take.
  FaultSettings some;
  some.error_rate = 0.3;
  ASSERT_TRUE(f.Set(some));
  int errors = 0;
  for (int i = 0; i < 4000; ++i) errors += f.Decide(get).error ? 1 : 0;
  EXPECT_GT(errors, 1000);
  EXPECT_LT(errors, 1400);
  EXPECT_EQ(f.Get().ToJson(), some.ToJson());
}

}  // namespace
}  // namespace pylon::faultproxy
