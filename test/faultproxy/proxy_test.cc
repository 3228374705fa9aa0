// `pylon-dev fault-proxy` in front of the real kube-apiserver (etcd + kube-apiserver from
// lab::ControlPlane): requests pass through with the caller's own token (RBAC applies), faults
// come back as real Status bodies, watches stream as they arrive and can be cut, compaction
// makes a resuming watch fail with 410, and the `pylon-dev fault-proxy` command works end to end.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "lab/process.h"
#include "support/binaries.h"
#include "support/eventually.h"
#include "support/k8s/real_apiserver_test.h"

namespace pylon::k8s {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr test_support::Poll Eventually{.timeout = seconds(30), .every = milliseconds(10)};

Json Service(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"ports", Json::array({{{"name", "http"}, {"port", 80}}})}}}};
}

class FaultProxyTest : public RealApiServerTest {
 protected:
  FaultProxyTest() : RealApiServerTest("fault-proxy-test/0.1.0", "fp") {}
  // A raw request through the proxy with `token` ("" = none).
  Result<HttpResponse> Raw(const std::string& method, const std::string& path,
                           const std::string& token, const std::string& body = "",
                           const std::string& content_type = "application/json") {
    RestConfig rc = server_->config();
    rc.token = token;
    auto t = CurlTransport::Create(rc);
    if (!t) return Fail(t.error());
    HttpRequest req;
    req.method = method;
    req.path = path;
    req.body = body;
    if (!body.empty()) req.content_type = content_type;
    return (*t)->Do(req);
  }
  const std::string& admin() const { return server_->plane().admin_token(); }
};

TEST_F(FaultProxyTest, ForwardsWithTheCallersTokenSoRbacApplies) {
  auto ok = Raw("GET", "/api/v1/namespaces/" + ns_, admin());
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(ok->content_type, "application/json");
  EXPECT_EQ(Json::parse(ok->body)["metadata"]["name"], ns_);

  auto anonymous = Raw("GET", "/api/v1/namespaces/" + ns_ + "/services", "");
  ASSERT_TRUE(anonymous);
  EXPECT_TRUE(anonymous->status == 401 || anonymous->status == 403) << anonymous->status;
  auto bogus = Raw("GET", "/api/v1/namespaces", "not-a-token");
  ASSERT_TRUE(bogus);
  EXPECT_EQ(bogus->status, 401);

  // A ServiceAccount with no RoleBinding is forbidden: the proxy did not lend it the admin's
  // rights.
  ASSERT_TRUE(server_->plane().Kubectl({"create", "serviceaccount", "nobody", "-n", ns_}));
  auto token = server_->plane().ServiceAccountToken(ns_, "nobody", "1h");
  ASSERT_TRUE(token) << token.error().message();
  auto forbidden = Raw("GET", "/api/v1/namespaces/" + ns_ + "/services", *token);
  ASSERT_TRUE(forbidden);
  EXPECT_EQ(forbidden->status, 403) << forbidden->body;
  EXPECT_NE(forbidden->body.find("system:serviceaccount:" + ns_ + ":nobody"), std::string::npos)
      << forbidden->body;
  RestConfig sa = server_->config();
  sa.token = *token;
  auto sa_client = NewClient(sa);
  ASSERT_TRUE(sa_client);
  auto denied = (*sa_client)->List(resources::Services(), ns_, {});
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code(), ErrorCode::kPermission);

  // Bodies, content types and methods pass through: a create and a merge patch.
  auto created = Raw("POST", "/api/v1/namespaces/" + ns_ + "/configmaps", admin(),
                     R"({"metadata":{"name":"cm"},"data":{"a":"1"}})");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201) << created->body;
  auto patched = Raw("PATCH", "/api/v1/namespaces/" + ns_ + "/configmaps/cm", admin(),
                     R"({"data":{"b":"2"}})", "application/merge-patch+json");
  ASSERT_TRUE(patched);
  EXPECT_EQ(patched->status, 200) << patched->body;
  EXPECT_EQ(Json::parse(patched->body)["data"]["b"], "2");
}

TEST_F(FaultProxyTest, InjectsRealStatusErrors) {
  const std::string path = "/api/v1/namespaces/" + ns_ + "/services";
  ASSERT_TRUE(server_->SetFaults(R"({"error_rate":1,"error_code":500,"latency_ms":1})"));
  auto e500 = Raw("GET", path, admin());
  ASSERT_TRUE(e500);
  EXPECT_EQ(e500->status, 500);
  Json st = Json::parse(e500->body);
  EXPECT_EQ(st["kind"], "Status");
  EXPECT_EQ(st["reason"], "InternalError");
  EXPECT_EQ(st["code"], 500);
  auto via_client = client_->List(resources::Services(), ns_, {});
  ASSERT_FALSE(via_client);
  EXPECT_EQ(via_client.error().code(), ErrorCode::kUnavailable);
  // Never faulted: discovery, /version, health, the control API.
  for (const char* p : {"/api", "/apis", "/api/v1", "/version", "/readyz", "/pylon/faults"}) {
    auto r = Raw("GET", p, admin());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << p << ": " << r->body;
  }
  auto settings = Raw("GET", "/pylon/faults", "");
  ASSERT_TRUE(settings);
  EXPECT_EQ(Json::parse(settings->body)["error_rate"], 1);

  ASSERT_TRUE(server_->SetFaults(R"({"error_rate":1,"error_code":429})"));
  auto e429 = Raw("GET", path, admin());
  ASSERT_TRUE(e429);
  EXPECT_EQ(e429->status, 429);
  ASSERT_TRUE(e429->retry_after.has_value());
  EXPECT_EQ(e429->retry_after->count(), 1);
  EXPECT_EQ(Json::parse(e429->body)["details"]["retryAfterSeconds"], 1);

  // Conflicts hit writes only, with the stale-update 409 kube-apiserver sends.
  ASSERT_TRUE(server_->SetFaults(R"({"conflict_rate":1,"paths":"/services"})"));
  auto read = client_->List(resources::Services(), ns_, {});
  EXPECT_TRUE(read) << read.error().message();
  auto write = client_->Create(resources::Services(), Service(ns_, "c"));
  ASSERT_FALSE(write);
  EXPECT_EQ(write.error().code(), ErrorCode::kConflict) << write.error().message();
  // `paths` limits where faults apply.
  EXPECT_TRUE(client_->Create(resources::ConfigMaps(),
                              Json{{"metadata", {{"name", "x"}, {"namespace", ns_}}}}));
  // Bad settings are refused with 400 and leave the old ones.
  auto bad = Raw("POST", "/pylon/faults", "", R"({"error_rate":2})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(server_->proxy().faults().Get().conflict_rate, 1);
  ASSERT_TRUE(server_->SetFaults("{}"));
  EXPECT_TRUE(client_->Create(resources::Services(), Service(ns_, "c")));
}

TEST_F(FaultProxyTest, StreamsWatchEventsAndCutsWatches) {
  auto list = client_->List(resources::Services(), ns_, {});
  ASSERT_TRUE(list);
  std::atomic<int> events{0};
  std::atomic<bool> done{false};
  Status result;
  std::thread watcher([&] {
    WatchOptions wo;
    wo.resource_version = list->resource_version;
    result = client_->Watch(
        resources::Services(), ns_, wo,
        [&](WatchEvent&& ev) {
          if (ev.type != EventType::kBookmark) ++events;
          return true;
        },
        nullptr);
    done = true;
  });
  ASSERT_TRUE(Eventually([&] { return server_->proxy().OpenWatches() == 1; }));
  ASSERT_TRUE(client_->Create(resources::Services(), Service(ns_, "w1")));
  ASSERT_TRUE(Eventually([&] { return events.load() == 1; })) << "event not streamed";
  ASSERT_TRUE(client_->Create(resources::Services(), Service(ns_, "w2")));
  ASSERT_TRUE(Eventually([&] { return events.load() == 2; }));
  EXPECT_FALSE(done.load()) << "the watch is still open";
  EXPECT_EQ(server_->proxy().CutWatches(), 1u);
  ASSERT_TRUE(Eventually([&] { return done.load(); }, seconds(5)));
  watcher.join();
  EXPECT_TRUE(result) << result.error().message();  // a cut is a clean end of stream
  EXPECT_TRUE(Eventually([&] { return server_->proxy().OpenWatches() == 0; }));
}

TEST_F(FaultProxyTest, CompactionMakesAResumingWatchGetGone) {
  auto list = client_->List(resources::Services(), ns_, {});
  ASSERT_TRUE(list);
  const std::string old_rv = list->resource_version;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client_->Create(resources::Services(), Service(ns_, "c" + std::to_string(i))));
  }
  ASSERT_TRUE(server_->Compact());
  WatchOptions wo;
  wo.resource_version = old_rv;
  wo.timeout_seconds = 2;
  auto watch_from_old = [&](Client& c) {
    return c.Watch(
        resources::Services(), ns_, wo, [](WatchEvent&&) { return true; }, nullptr);
  };
  Status through_proxy = watch_from_old(*client_);
  ASSERT_FALSE(through_proxy);
  EXPECT_EQ(through_proxy.error().code(), ErrorCode::kGone) << through_proxy.error().message();
  EXPECT_NE(through_proxy.error().message().find("too old resource version"), std::string::npos)
      << through_proxy.error().message();
  // What kube-apiserver itself does (recorded, not required; see docs/fault-proxy.md): its
  // watch cache still holds these events, so it usually serves them instead of a 410.
  auto direct = NewClient(server_->direct_config());
  ASSERT_TRUE(direct);
  Status upstream = watch_from_old(**direct);
  std::printf(
      "kube-apiserver, watch from compacted rv %s: %s\n", old_rv.c_str(),
      upstream ? "served from its watch cache (no 410)" : upstream.error().message().c_str());
  // Lists are forwarded untouched; in 1.35 even an Exact list from the compacted revision is
  // served from the watch cache's snapshots (recorded, not required).
  auto exact = Raw("GET",
                   "/api/v1/namespaces/" + ns_ + "/services?resourceVersion=" + old_rv +
                       "&resourceVersionMatch=Exact",
                   admin());
  ASSERT_TRUE(exact);
  std::printf("kube-apiserver, Exact list at compacted rv %s: HTTP %lld\n", old_rv.c_str(),
              static_cast<long long>(exact->status));
  // A fresh watch (current RV) still works.
  auto now = client_->List(resources::Services(), ns_, {});
  ASSERT_TRUE(now);
  wo.resource_version = now->resource_version;
  wo.timeout_seconds = 1;
  EXPECT_TRUE(watch_from_old(*client_));
}

TEST_F(FaultProxyTest, CommandServesTheSameApi) {
  const std::string binary = test_support::DevBinary();
  ASSERT_EQ(access(binary.c_str(), X_OK), 0) << "no " << binary;
  const std::string addr = server_->dir() + "/fault-proxy.addr";
  const std::string log = server_->dir() + "/fault-proxy.log";
  const std::string ca = server_->plane().CaFile();
  std::vector<std::string> args = {binary,          "fault-proxy",
                                   "--upstream",    server_->plane().Server(),
                                   "--upstream-ca", ca,
                                   "--etcd",        server_->plane().EtcdEndpoint(),
                                   "--address-out", addr,
                                   "--faults",      R"({"error_rate":1,"paths":"/configmaps"})"};
  lab::SpawnOptions spawn;
  spawn.argv = args;
  spawn.log_path = log;
  auto proxy = lab::Process::Spawn(spawn);
  ASSERT_TRUE(proxy) << proxy.error().message();
  bool up = Eventually([&] { return std::filesystem::exists(addr); }, seconds(10));
  std::string url;
  if (up) {
    std::ifstream in(addr);
    std::getline(in, url);
  }
  auto stop = [&] {
    EXPECT_TRUE(proxy->Signal(SIGTERM));
    auto status = proxy->Wait(seconds(10));
    return status ? *status : -1;
  };
  if (!up) {
    stop();
    FAIL() << "fault-proxy wrote no address; see " << log;
  }
  EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
  RestConfig rc = server_->config();
  rc.server = url;
  auto c = NewClient(rc);
  ASSERT_TRUE(c);
  EXPECT_TRUE((*c)->Get(resources::Namespaces(), "", ns_));
  auto faulted = (*c)->List(resources::ConfigMaps(), ns_, {});  // --faults applies from the start
  ASSERT_FALSE(faulted);
  EXPECT_EQ(faulted.error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(PostJson(rc, "/pylon/faults", "{}"));
  EXPECT_TRUE((*c)->List(resources::ConfigMaps(), ns_, {}));
  EXPECT_TRUE(PostJson(rc, "/pylon/faults/compact", "{}"));
  int status = stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit status " << status;
}

// Bad command lines: one line naming the problem, and exit code 2.
TEST(FaultProxyCommand, RejectsBadFlagsWithExitCode2) {
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {{"--bogus", "x", "--upstream", "https://127.0.0.1:1"}, "--bogus"},
      {{"--port"}, "--port"},
      {{"--port", "70000", "--upstream", "https://127.0.0.1:1"}, "70000"},
      {{"--listen", "127.0.0.1"}, "--upstream"},
      {{"--upstream", "https://127.0.0.1:1", "--faults", "{"}, "--faults"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {test_support::DevBinary(), "fault-proxy"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    std::string out;
    auto rc = pylon::lab::RunCommand(argv, &out);
    ASSERT_TRUE(rc.has_value());
    EXPECT_EQ(*rc, 2) << c.mentions;
    EXPECT_EQ(out.rfind("pylon-dev fault-proxy: ", 0), 0u) << out;
    EXPECT_NE(out.find(c.mentions), std::string::npos) << out;
    EXPECT_EQ(out.find('\n'), out.size() - 1) << "one line: " << out;
  }
}

}  // namespace
}  // namespace pylon::k8s
