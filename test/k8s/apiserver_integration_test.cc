// pylon_k8s against `pylon apiserver` on loopback: CRUD, /status, the three patch types,
// selectors, pagination, leases and events; the TLS path with the generated CA; and an informer
// that must converge to the server's state while every fault is switched on (500s, 429s, 409s,
// cut watches, compaction → 410), with no event lost across relists.
#include <atomic>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "apiserver_process.h"
#include "k8s/event_recorder.h"
#include "k8s/informer.h"
#include "k8s/leader_election.h"
#include "k8s/retry.h"

namespace pylon::k8s {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const char kNs[] = "k8s-it";

bool Eventually(const std::function<bool()>& cond, Duration timeout = seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

Json Service(const std::string& name, const std::string& app,
             const std::string& type = "ClusterIP") {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"namespace", kNs}, {"labels", {{"app", app}}}}},
          {"spec",
           {{"type", type},
            {"ports", Json::array({{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}}})}}}};
}

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Boot(false); }
  void Boot(bool tls) {
    auto server = ApiServerProcess::Start(PYLON_BINARY, tls);
    ASSERT_TRUE(server) << server.error().message();
    server_ = std::move(*server);
    auto client = NewClient(server_->config(), "pylon-k8s-test/0.1.0");
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
    auto ns = client_->Create(resources::Namespaces(), Json{{"metadata", {{"name", kNs}}}});
    ASSERT_TRUE(ns) << ns.error().message();
  }
  std::unique_ptr<ApiServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ApiServerTest, CrudStatusAndConflicts) {
  const auto& svcs = resources::Services();
  auto created = client_->Create(svcs, Service("web", "web", "LoadBalancer"));
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_FALSE(Uid(*created).empty());
  auto again = client_->Create(svcs, Service("web", "web"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kAlreadyExists) << again.error().message();

  auto got = client_->Get(svcs, kNs, "web");
  ASSERT_TRUE(got) << got.error().message();
  Json stale = *got;
  Json edited = *got;
  edited["metadata"]["labels"]["tier"] = "front";
  auto updated = client_->Update(svcs, edited);
  ASSERT_TRUE(updated) << updated.error().message();
  EXPECT_NE(ResourceVersion(*updated), ResourceVersion(stale));
  stale["metadata"]["labels"]["tier"] = "back";
  auto conflict = client_->Update(svcs, stale);
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code(), ErrorCode::kConflict) << conflict.error().message();

  // /status: only the status changes; a main-resource update keeps it.
  Json with_status = *updated;
  with_status["status"]["loadBalancer"]["ingress"] =
      Json::array({{{"ip", "192.0.2.10"}, {"ipMode", "VIP"}}});
  auto st = client_->UpdateStatus(svcs, with_status);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ((*st)["status"]["loadBalancer"]["ingress"][0]["ip"], "192.0.2.10");
  Json main_write = *st;
  main_write["status"] = Json::object();
  main_write["metadata"]["labels"]["x"] = "1";
  auto kept = client_->Update(svcs, main_write);
  ASSERT_TRUE(kept) << kept.error().message();
  EXPECT_EQ((*kept)["status"]["loadBalancer"]["ingress"][0]["ip"], "192.0.2.10");

  // Patches.
  auto merged = client_->Patch(svcs, kNs, "web", PatchType::kMerge,
                               Json{{"metadata", {{"annotations", {{"purelb.io/a", "1"}}}}}}, "");
  ASSERT_TRUE(merged) << merged.error().message();
  EXPECT_EQ(Annotation(*merged, "purelb.io/a"), "1");
  auto jsonp = client_->Patch(
      svcs, kNs, "web", PatchType::kJson,
      Json::array({{{"op", "add"}, {"path", "/metadata/labels/json"}, {"value", "yes"}}}), "");
  ASSERT_TRUE(jsonp) << jsonp.error().message();
  EXPECT_EQ(Label(*jsonp, "json"), "yes");
  auto smp = client_->Patch(svcs, kNs, "web", PatchType::kStrategicMerge,
                            Json{{"metadata", {{"labels", {{"smp", "yes"}}}}}}, "");
  ASSERT_TRUE(smp) << smp.error().message();
  EXPECT_EQ(Label(*smp, "smp"), "yes");
  EXPECT_EQ(Label(*smp, "json"), "yes");
  auto status_patch = client_->Patch(
      svcs, kNs, "web", PatchType::kMerge,
      Json{{"status", {{"loadBalancer", {{"ingress", Json::array({{{"ip", "192.0.2.11"}}})}}}}}},
      "status");
  ASSERT_TRUE(status_patch) << status_patch.error().message();
  EXPECT_EQ((*status_patch)["status"]["loadBalancer"]["ingress"][0]["ip"], "192.0.2.11");
  auto rv_precondition = client_->Patch(
      svcs, kNs, "web", PatchType::kMerge,
      Json{
          {"metadata", {{"resourceVersion", ResourceVersion(*updated)}, {"labels", {{"p", "1"}}}}}},
      "");
  ASSERT_FALSE(rv_precondition);
  EXPECT_EQ(rv_precondition.error().code(), ErrorCode::kConflict);

  // Delete with a wrong precondition, then for real.
  DeleteOptions wrong;
  wrong.precondition_uid = "not-the-uid";
  auto pre = client_->Delete(svcs, kNs, "web", wrong);
  ASSERT_FALSE(pre);
  EXPECT_EQ(pre.error().code(), ErrorCode::kConflict) << pre.error().message();
  DeleteOptions right;
  right.precondition_uid = Uid(*created);
  ASSERT_TRUE(client_->Delete(svcs, kNs, "web", right));
  auto gone = client_->Get(svcs, kNs, "web");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(client_->Delete(svcs, kNs, "web", {}).error().code(), ErrorCode::kNotFound);
  auto invalid =
      client_->Create(svcs, Json{{"metadata", {{"name", "Bad_Name"}, {"namespace", kNs}}},
                                 {"spec", {{"ports", Json::array()}}}});
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code(), ErrorCode::kInvalidArgument) << invalid.error().message();
}

TEST_F(ApiServerTest, SelectorsAndPagination) {
  const auto& svcs = resources::Services();
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client_->Create(svcs, Service("s" + std::to_string(i), i % 2 ? "odd" : "even")));
  }
  ListOptions lo;
  lo.page_size = 2;
  auto all = client_->List(svcs, kNs, lo);
  ASSERT_TRUE(all) << all.error().message();
  EXPECT_EQ(all->items.size(), 7u);
  for (const auto& item : all->items) EXPECT_EQ(item["kind"], "Service");
  lo.label_selector = "app=odd";
  auto odd = client_->List(svcs, kNs, lo);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->items.size(), 3u);
  lo.label_selector = "app!=odd";
  EXPECT_EQ(client_->List(svcs, kNs, lo)->items.size(), 4u);
  lo.label_selector.clear();
  lo.field_selector = "metadata.name=s3";
  auto one = client_->List(svcs, "", lo);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->items.size(), 1u);
  EXPECT_EQ(Name(one->items[0]), "s3");
}

TEST_F(ApiServerTest, LeaseElectionAndEvents) {
  auto a = LeaderElector::Create(
      *client_,
      LeaderElectionConfig{kNs, "it-lease", "a", seconds(15), seconds(10), seconds(2), false, {}});
  auto b = LeaderElector::Create(
      *client_,
      LeaderElectionConfig{kNs, "it-lease", "b", seconds(15), seconds(10), seconds(2), false, {}});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*a)->TryAcquireOrRenew());
  EXPECT_FALSE((*b)->TryAcquireOrRenew());
  ASSERT_TRUE((*a)->TryAcquireOrRenew());
  ASSERT_TRUE((*a)->Release());
  ASSERT_TRUE((*b)->TryAcquireOrRenew());
  auto lease = client_->Get(resources::Leases(), kNs, "it-lease");
  ASSERT_TRUE(lease);
  EXPECT_EQ(ParseLeaseSpec(*lease)->holder_identity, "b");
  EXPECT_EQ(ParseLeaseSpec(*lease)->lease_transitions, 1);

  auto svc = client_->Create(resources::Services(), Service("ev", "ev"));
  ASSERT_TRUE(svc);
  EventRecorderOptions eo;
  eo.component = "pylon-allocator";
  EventRecorderImpl rec(*client_, eo);
  rec.Start();
  ObjectReference ref = ObjectReference::For(resources::Services(), *svc);
  rec.Event(ref, EventLevel::kNormal, "AddressAssigned", "Assigned 192.0.2.5");
  ASSERT_TRUE(Eventually([&] { return rec.written() == 1; }));
  rec.Event(ref, EventLevel::kNormal, "AddressAssigned", "Assigned 192.0.2.5");
  ASSERT_TRUE(Eventually([&] { return rec.written() == 2; }));
  rec.Stop();
  ListOptions lo;
  lo.field_selector =
      "involvedObject.kind=Service,involvedObject.name=ev,involvedObject.namespace=" +
      std::string(kNs) + ",involvedObject.uid=" + Uid(*svc);
  auto events = client_->List(resources::Events(), kNs, lo);
  ASSERT_TRUE(events) << events.error().message();
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0]["count"], 2);
  EXPECT_EQ(events->items[0]["source"]["component"], "pylon-allocator");
}

TEST(ApiServerUnix, ClientReachesServerOverUnixSocket) {
  char tmpl[] = "/tmp/pylon-unix-it-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto server = ApiServerProcess::Start(
      PYLON_BINARY, /*tls=*/false,
      {"--listen-unix", dir + "/api.sock", "--kubeconfig-unix-out", dir + "/kubeconfig-unix"});
  ASSERT_TRUE(server) << server.error().message();
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir + "/kubeconfig-unix"); }));
  auto cfg = LoadKubeconfig(dir + "/kubeconfig-unix");
  ASSERT_TRUE(cfg) << cfg.error().message();
  EXPECT_EQ(cfg->server, "unix://" + dir + "/api.sock");
  auto client = NewClient(*cfg, "pylon-k8s-test/0.1.0");
  ASSERT_TRUE(client) << client.error().message();
  ASSERT_TRUE((*client)->Create(resources::Namespaces(), Json{{"metadata", {{"name", kNs}}}}));
  ASSERT_TRUE((*client)->Create(resources::Services(), Service("over-unix", "u")));
  // A watch streams over the same socket.
  InformerOptions io;
  io.resource = resources::Services();
  io.ns = kNs;
  Informer inf(**client, io, SystemClock::Instance());
  inf.Start();
  ASSERT_TRUE(Eventually([&] { return inf.HasSynced(); }));
  ASSERT_TRUE((*client)->Create(resources::Services(), Service("second", "u")));
  EXPECT_TRUE(Eventually([&] { return inf.store().Get(kNs, "second").has_value(); }));
  inf.Stop();
  // A relative or empty socket path is refused with a clear message.
  RestConfig bad = *cfg;
  bad.server = "unix://relative.sock";
  auto refused = NewClient(bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("unix:///absolute/path"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ApiServerTls, VerifiesWithTheGeneratedCa) {
  auto server = ApiServerProcess::Start(PYLON_BINARY, /*tls=*/true);
  ASSERT_TRUE(server) << server.error().message();
  const RestConfig& cfg = (*server)->config();
  ASSERT_EQ(cfg.server.rfind("https://", 0), 0u) << cfg.server;
  ASSERT_FALSE(cfg.ca_pem.empty());
  auto client = NewClient(cfg);
  ASSERT_TRUE(client);
  auto ns = (*client)->Get(resources::Namespaces(), "", "default");
  EXPECT_TRUE(ns) << ns.error().message();
  // tls-server-name: connect to 127.0.0.1 but verify the certificate for "localhost".
  RestConfig sni = cfg;
  sni.tls_server_name = "localhost";
  auto sni_client = NewClient(sni);
  EXPECT_TRUE((*sni_client)->Get(resources::Namespaces(), "", "default"));
  // Without the CA, verification (on by default) must fail.
  RestConfig no_ca = cfg;
  no_ca.ca_pem.clear();
  auto untrusted = NewClient(no_ca);
  auto refused = (*untrusted)->Get(resources::Namespaces(), "", "default");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kPermission) << refused.error().message();
  // A name the certificate does not carry fails too.
  RestConfig wrong_name = cfg;
  wrong_name.tls_server_name = "not-in-the-cert.example";
  auto wrong = NewClient(wrong_name);
  EXPECT_FALSE((*wrong)->Get(resources::Namespaces(), "", "default"));
  // insecure-skip-tls-verify turns verification off.
  RestConfig insecure = no_ca;
  insecure.insecure_skip_tls_verify = true;
  auto skip = NewClient(insecure);
  EXPECT_TRUE((*skip)->Get(resources::Namespaces(), "", "default"));
}

// What the handlers were told: key → RV, with consistency checks on every callback.
struct Observed {
  std::mutex mu;
  std::map<std::string, std::string> state;
  int inconsistencies = 0;
  EventHandlers Handlers() {
    return {[this](const Json& o) {
              std::lock_guard<std::mutex> l(mu);
              if (state.count(KeyOf(o).String())) ++inconsistencies;
              state[KeyOf(o).String()] = ResourceVersion(o);
            },
            [this](const Json& old_obj, const Json& o) {
              std::lock_guard<std::mutex> l(mu);
              if (state[KeyOf(o).String()] != ResourceVersion(old_obj)) ++inconsistencies;
              state[KeyOf(o).String()] = ResourceVersion(o);
            },
            [this](const Json& o) {
              std::lock_guard<std::mutex> l(mu);
              if (state.erase(KeyOf(o).String()) == 0) ++inconsistencies;
            }};
  }
  std::map<std::string, std::string> Snapshot() {
    std::lock_guard<std::mutex> l(mu);
    return state;
  }
};

TEST_F(ApiServerTest, InformerConvergesUnderEveryFault) {
  const auto& svcs = resources::Services();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(client_->Create(svcs, Service("f" + std::to_string(i), "f")));
  }
  InformerOptions io;
  io.resource = svcs;
  io.ns = kNs;
  io.page_size = 7;
  io.min_watch_timeout = seconds(3);
  io.backoff.initial = milliseconds(10);
  io.backoff.cap = milliseconds(200);
  Informer inf(*client_, io);
  Observed seen;
  inf.AddHandlers(seen.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(20)));

  ASSERT_TRUE(server_->SetFaults(
      R"({"error_rate":0.15,"error_code":500,"conflict_rate":0.1,"latency_ms":2})"));
  RetryOptions ro;
  ro.steps = 30;
  ro.initial = milliseconds(5);
  ro.factor = 1.5;
  ro.cap = milliseconds(200);
  std::mt19937 rng(7);
  int failures = 0;
  for (int op = 0; op < 240; ++op) {
    if (op == 180) {
      // 429s carry Retry-After: 1, which callers honour: keep this phase short.
      ASSERT_TRUE(
          server_->SetFaults(R"({"error_rate":0.05,"error_code":429,"conflict_rate":0.1})"));
    }
    if (op % 30 == 10) {
      ASSERT_TRUE(server_->CutWatches());
    }
    if (op % 60 == 45) {
      // Move the global RV past the informer's last Service event (a write to another kind),
      // compact, then cut: the resuming watch is too old → 410 → relist (also expired → RV unset).
      Status bumped = RetryOnConflictOrUnavailable(
          [&]() -> Status {
            LeaseSpec spec;
            spec.holder_identity = "bump";
            spec.lease_duration_seconds = 15;
            auto r = client_->Create(resources::Leases(),
                                     MakeLease(kNs, "bump-" + std::to_string(op), spec));
            if (!r && r.error().code() == ErrorCode::kAlreadyExists) return Ok();
            return r ? Ok() : Fail(r.error());
          },
          ro);
      ASSERT_TRUE(bumped) << bumped.error().message();
      ASSERT_TRUE(server_->Compact());
      ASSERT_TRUE(server_->CutWatches());
    }
    std::string name = "f" + std::to_string(rng() % 30);
    int kind = static_cast<int>(rng() % 3);
    Status s = RetryOnConflictOrUnavailable(
        [&]() -> Status {
          if (kind == 0) {
            auto r = client_->Create(svcs, Service(name, "f"));
            if (!r && r.error().code() == ErrorCode::kAlreadyExists) return Ok();
            return r ? Ok() : Fail(r.error());
          }
          if (kind == 1) {
            auto cur = client_->Get(svcs, kNs, name);
            if (!cur) return cur.error().code() == ErrorCode::kNotFound ? Ok() : Fail(cur.error());
            (*cur)["metadata"]["labels"]["n"] = std::to_string(op);
            auto r = client_->Update(svcs, *cur);
            return r ? Ok() : Fail(r.error());
          }
          auto r = client_->Delete(svcs, kNs, name, {});
          if (!r && r.error().code() == ErrorCode::kNotFound) return Ok();
          return r;
        },
        ro);
    if (!s) ++failures;
  }
  EXPECT_EQ(failures, 0) << "retry helper should absorb injected faults";
  ASSERT_TRUE(server_->SetFaults("{}"));
  ASSERT_TRUE(server_->CutWatches());

  auto final_state = [&] {
    std::map<std::string, std::string> out;
    auto list = client_->List(svcs, kNs, {});
    if (!list) return out;
    for (const auto& o : list->items) out[KeyOf(o).String()] = ResourceVersion(o);
    return out;
  };
  std::map<std::string, std::string> want;
  ASSERT_TRUE(Eventually(
      [&] {
        want = final_state();
        return !want.empty() && seen.Snapshot() == want;
      },
      seconds(60)))
      << "handler-observed state did not converge";
  std::map<std::string, std::string> store;
  for (const auto& o : inf.store().List()) store[KeyOf(o).String()] = ResourceVersion(o);
  EXPECT_EQ(store, want);
  EXPECT_EQ(seen.inconsistencies, 0);
  InformerStats stats = inf.stats();
  EXPECT_GE(stats.lists, 2) << "compaction must have forced a relist";
  EXPECT_GE(stats.expired, 2) << "watch 410 and list 410";
  EXPECT_GE(stats.watches, 3);
  inf.Stop();
}

}  // namespace
}  // namespace pylon::k8s
