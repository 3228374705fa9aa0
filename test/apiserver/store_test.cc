// Store rules without sockets: write semantics, Status bodies (byte-compared with the shared
// fixtures), watch start modes, history expiry, selector transitions, Service defaulting and
// validation, finalizers, pagination, generation, MicroTime.
#include "apiserver/store.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace pylon::apiserver {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream f(std::string(PYLON_SHARED_DIR) + "/fixtures/kubernetes/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

Json J(const char* text) { return Json::parse(text); }

class StoreTest : public ::testing::Test {
 protected:
  StoreTest() : store_(clock_, Options()) {
    svc_ = store_.Lookup("", "v1", "services");
    lease_ = store_.Lookup("coordination.k8s.io", "v1", "leases");
    ev_ = store_.Lookup("", "v1", "events");
    crd_ = store_.Lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  }
  static StoreOptions Options() {
    StoreOptions o;
    o.history = 20;
    return o;
  }
  ObjectPtr Create(const TypePtr& t, const std::string& ns, Json body) {
    auto r = store_.Create(*t, ns, std::move(body));
    EXPECT_TRUE(r.has_value()) << (r ? "" : Dump(r.error().ToStatus()));
    return r ? *r : nullptr;
  }
  static Json Lb(const std::string& name) {
    Json j = J(
        R"({"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer","ports":[{"port":80}]}})");
    j["metadata"]["name"] = name;
    return j;
  }
  static std::string Rv(const ObjectPtr& o) {
    return GetString(*o, {"metadata", "resourceVersion"});
  }
  std::vector<std::string> Drain(const std::shared_ptr<Watcher>& w) {
    std::vector<std::string> out;
    for (const auto& e : w->Wait(std::chrono::milliseconds(0)).events)
      out.push_back(std::string(e.type) + " " + GetString(*e.object, {"metadata", "name"}) + "@" +
                    Rv(e.object));
    return out;
  }

  FakeClock clock_;
  Store store_;
  TypePtr svc_, lease_, ev_, crd_;
};

TEST_F(StoreTest, CreateSetsServerFieldsAndDefaults) {
  auto o = Create(svc_, "default", Lb("web"));
  ASSERT_TRUE(o);
  const Json& m = (*o)["metadata"];
  EXPECT_EQ(m["namespace"], "default");
  EXPECT_EQ(m["uid"].get<std::string>().size(), 36u);
  EXPECT_FALSE(m.contains("generation"));  // Services have no generation
  auto ts = m["creationTimestamp"].get<std::string>();
  EXPECT_EQ(ts.size(), 20u);
  EXPECT_EQ(ts.back(), 'Z');
  const Json& spec = (*o)["spec"];
  EXPECT_EQ(spec["ipFamilyPolicy"], "SingleStack");
  EXPECT_EQ(spec["ipFamilies"], J(R"(["IPv4"])"));
  EXPECT_EQ(spec["externalTrafficPolicy"], "Cluster");
  EXPECT_EQ(spec["internalTrafficPolicy"], "Cluster");
  EXPECT_EQ(spec["allocateLoadBalancerNodePorts"], true);
  EXPECT_EQ(spec["sessionAffinity"], "None");
  EXPECT_EQ(spec["ports"][0]["protocol"], "TCP");
  EXPECT_EQ(spec["ports"][0]["targetPort"], 80);
  int np = spec["ports"][0]["nodePort"].get<int>();
  EXPECT_GE(np, 30000);
  EXPECT_LE(np, 32767);
  EXPECT_TRUE(net::Prefix::Parse("10.96.0.0/12")
                  ->Contains(*net::IpAddress::Parse(spec["clusterIP"].get<std::string>())));
  EXPECT_EQ(spec["clusterIPs"][0], spec["clusterIP"]);
  EXPECT_EQ((*o)["status"], J(R"({"loadBalancer":{}})"));
}

TEST_F(StoreTest, ServiceDefaultingTable) {
  struct Case {
    const char* name;
    const char* spec;
    const char* policy;
    const char* families;
    bool node_ports;
    bool health_check;
  } cases[] = {
      {"cip", R"({"ports":[{"port":1}]})", "SingleStack", R"(["IPv4"])", false, false},
      {"dual", R"({"ports":[{"port":1}],"ipFamilyPolicy":"PreferDualStack"})", "PreferDualStack",
       R"(["IPv4","IPv6"])", false, false},
      {"two-fams", R"({"ports":[{"port":1}],"ipFamilies":["IPv6","IPv4"]})", "RequireDualStack",
       R"(["IPv6","IPv4"])", false, false},
      {"np", R"({"type":"NodePort","ports":[{"port":1}]})", "SingleStack", R"(["IPv4"])", true,
       false},
      {"lb-local",
       R"({"type":"LoadBalancer","externalTrafficPolicy":"Local","ports":[{"port":1}]})",
       "SingleStack", R"(["IPv4"])", true, true},
      {"lb-noports",
       R"({"type":"LoadBalancer","allocateLoadBalancerNodePorts":false,"ports":[{"port":1}]})",
       "SingleStack", R"(["IPv4"])", false, false},
  };
  for (const auto& c : cases) {
    Json body = {{"metadata", {{"name", c.name}}}, {"spec", J(c.spec)}};
    auto o = Create(svc_, "default", body);
    ASSERT_TRUE(o) << c.name;
    const Json& spec = (*o)["spec"];
    EXPECT_EQ(spec["ipFamilyPolicy"], c.policy) << c.name;
    EXPECT_EQ(spec["ipFamilies"], J(c.families)) << c.name;
    EXPECT_EQ(spec["clusterIPs"].size(), spec["ipFamilies"].size()) << c.name;
    EXPECT_EQ(spec["ports"][0].contains("nodePort"), c.node_ports) << c.name;
    EXPECT_EQ(spec.contains("healthCheckNodePort"), c.health_check) << c.name;
  }
}

TEST_F(StoreTest, StatusBodiesMatchFixtures) {
  auto foo = Create(svc_, "default", Lb("foo"));
  Json stale = *foo;
  stale["metadata"]["resourceVersion"] = "1";
  auto r = store_.Update(*svc_, "default", "foo", stale, false);
  ASSERT_FALSE(r);
  EXPECT_EQ(Dump(r.error().ToStatus()), Fixture("status-409-conflict.json"));

  auto nf = store_.Get(*svc_, "default", "x");
  ASSERT_FALSE(nf);
  EXPECT_EQ(Dump(nf.error().ToStatus()), Fixture("status-404-notfound.json"));

  Json web = Lb("web");
  web["spec"]["loadBalancerClass"] = "lace-cni.io/main";
  auto w = Create(svc_, "default", web);
  Json change = *w;
  change["spec"]["loadBalancerClass"] = "lace-cni.io/other";
  auto inv = store_.Update(*svc_, "default", "web", change, false);
  ASSERT_FALSE(inv);
  EXPECT_EQ(Dump(inv.error().ToStatus()), Fixture("status-422-invalid.json"));

  auto dup = store_.Create(*svc_, "default", Lb("foo"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(
      Dump(dup.error().ToStatus()),
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"services \"foo\" already exists","reason":"AlreadyExists","details":{"name":"foo","kind":"services"},"code":409})");
}

TEST_F(StoreTest, LoadBalancerClassRules) {
  Json cip =
      J(R"({"metadata":{"name":"a"},"spec":{"ports":[{"port":1}],"loadBalancerClass":"x.io/y"}})");
  auto r = store_.Create(*svc_, "default", cip);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().causes.at(0).reason, "FieldValueForbidden");
  EXPECT_EQ(r.error().causes.at(0).message,
            "Forbidden: may only be used when `type` is 'LoadBalancer'");
  // Unset → set on a LoadBalancer is also a change.
  auto lb = Create(svc_, "default", Lb("b"));
  Json set = *lb;
  set["spec"]["loadBalancerClass"] = "x.io/y";
  EXPECT_FALSE(store_.Update(*svc_, "default", "b", set, false));
  // Leaving LoadBalancer drops an unchanged class.
  Json c = Lb("c");
  c["spec"]["loadBalancerClass"] = "x.io/y";
  auto co = Create(svc_, "default", c);
  auto to_cip = store_.Patch(*svc_, "default", "c", PatchType::kMergePatch,
                             R"({"spec":{"type":"ClusterIP"}})", false);
  ASSERT_TRUE(to_cip) << Dump(to_cip.error().ToStatus());
  EXPECT_FALSE((**to_cip)["spec"].contains("loadBalancerClass"));
  EXPECT_FALSE((**to_cip)["spec"]["ports"][0].contains("nodePort"));
  EXPECT_FALSE((**to_cip)["spec"].contains("externalTrafficPolicy"));
}

TEST_F(StoreTest, UnconditionalUpdateRules) {
  auto s = Create(svc_, "default", Lb("web"));
  Json body = *s;
  body["metadata"].erase("resourceVersion");
  body["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_TRUE(store_.Update(*svc_, "default", "web", body, false));  // Services: allowed

  Create(lease_, "default",
         J(R"({"metadata":{"name":"l"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15}})"));
  auto lr = store_.Update(*lease_, "default", "l",
                          J(R"({"metadata":{"name":"l"},"spec":{"holderIdentity":"b"}})"), false);
  ASSERT_FALSE(lr);
  EXPECT_EQ(lr.error().code, 422);
  EXPECT_EQ(lr.error().message,
            "Lease.coordination.k8s.io \"l\" is invalid: metadata.resourceVersion: Invalid value: "
            "0x0: must be specified for an update");
}

TEST_F(StoreTest, NoOpUpdateKeepsRvAndEmitsNothing) {
  auto s = Create(svc_, "default", Lb("web"));
  auto w = store_.Watch(*svc_, {"default", "", "", Rv(s)});
  ASSERT_TRUE(w);
  auto same = store_.Update(*svc_, "default", "web", *s, false);
  ASSERT_TRUE(same);
  EXPECT_EQ(Rv(*same), Rv(s));
  auto p = store_.Patch(*svc_, "default", "web", PatchType::kStrategicMerge,
                        R"({"spec":{"type":"LoadBalancer"}})", false);
  ASSERT_TRUE(p);
  EXPECT_EQ(Rv(*p), Rv(s));
  EXPECT_TRUE(Drain(*w).empty());
  EXPECT_EQ(store_.CurrentRv(), std::stoull(Rv(s)));
  store_.StopWatch(*w);
}

TEST_F(StoreTest, StatusSeparation) {
  auto s = Create(svc_, "default", Lb("web"));
  // Main-resource writes keep the old status.
  Json main = *s;
  main["status"] = J(R"({"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}})");
  main["metadata"]["labels"] = {{"a", "b"}};
  auto m = store_.Update(*svc_, "default", "web", main, false);
  ASSERT_TRUE(m);
  EXPECT_EQ((**m)["status"], J(R"({"loadBalancer":{}})"));
  // Status writes keep the old spec and default ipMode.
  Json st = **m;
  st["spec"]["type"] = "ClusterIP";
  st["status"] = J(R"({"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}})");
  auto u = store_.Update(*svc_, "default", "web", st, true);
  ASSERT_TRUE(u) << Dump(u.error().ToStatus());
  EXPECT_EQ((**u)["spec"]["type"], "LoadBalancer");
  EXPECT_EQ((**u)["status"],
            J(R"({"loadBalancer":{"ingress":[{"ip":"192.0.2.1","ipMode":"VIP"}]}})"));
  // Leaving LoadBalancer clears status.loadBalancer.
  auto c = store_.Patch(*svc_, "default", "web", PatchType::kStrategicMerge,
                        R"({"spec":{"type":"ClusterIP"}})", false);
  ASSERT_TRUE(c) << Dump(c.error().ToStatus());
  EXPECT_EQ((**c)["status"], J(R"({"loadBalancer":{}})"));
}

TEST_F(StoreTest, StatusValidation) {
  auto s = Create(svc_, "default", Lb("web"));
  Create(svc_, "default", J(R"({"metadata":{"name":"cip"},"spec":{"ports":[{"port":1}]}})"));
  struct Case {
    const char* name;
    const char* status;
    const char* field;
    const char* reason;
  } cases[] = {
      {"web", R"({"loadBalancer":{"ingress":[{"ip":"300.1.1.1"}]}})",
       "status.loadBalancer.ingress[0].ip", "FieldValueInvalid"},
      {"web", R"({"loadBalancer":{"ingress":[{"ip":"192.0.2.1","ipMode":"Bogus"}]}})",
       "status.loadBalancer.ingress[0].ipMode", "FieldValueNotSupported"},
      {"web", R"({"loadBalancer":{"ingress":[{"hostname":"a.b","ipMode":"VIP"}]}})",
       "status.loadBalancer.ingress[0].ipMode", "FieldValueForbidden"},
      {"cip", R"({"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}})", "status.loadBalancer.ingress",
       "FieldValueForbidden"},
  };
  for (const auto& c : cases) {
    std::string patch = std::string(R"({"status":)") + c.status + "}";
    auto r = store_.Patch(*svc_, "default", c.name, PatchType::kMergePatch, patch, true);
    ASSERT_FALSE(r) << c.status;
    EXPECT_EQ(r.error().code, 422);
    ASSERT_FALSE(r.error().causes.empty());
    EXPECT_EQ(r.error().causes[0].field, c.field) << c.status;
    EXPECT_EQ(r.error().causes[0].reason, c.reason) << c.status;
  }
}

TEST_F(StoreTest, WatchStartModes) {
  auto a = Create(svc_, "default", Lb("a"));
  auto b = Create(svc_, "default", Lb("b"));
  auto w0 = store_.Watch(*svc_, {"default", "", "", "0"});
  auto wn = store_.Watch(*svc_, {"default", "", "", Rv(a)});
  auto wu = store_.Watch(*svc_, {"default", "", "", ""});
  ASSERT_TRUE(w0 && wn && wu);
  EXPECT_EQ(Drain(*w0), (std::vector<std::string>{"ADDED a@" + Rv(a), "ADDED b@" + Rv(b)}));
  EXPECT_EQ(Drain(*wu).size(), 2u);
  EXPECT_EQ(Drain(*wn), (std::vector<std::string>{"ADDED b@" + Rv(b)}));
  auto d = store_.Delete(*svc_, "default", "a", Json::object());
  ASSERT_TRUE(d);
  std::string del_rv = std::to_string(store_.CurrentRv());
  EXPECT_EQ(Drain(*wn), (std::vector<std::string>{"DELETED a@" + del_rv}));
  // The bookmark RV (progress) covers every delivered event.
  EXPECT_EQ((*wn)->Wait(std::chrono::milliseconds(0)).progress, store_.CurrentRv());
  for (auto* w : {&*w0, &*wn, &*wu}) store_.StopWatch(*w);
}

TEST_F(StoreTest, TooOldAndFutureResourceVersions) {
  auto first = Create(svc_, "default", Lb("a"));
  for (int i = 0; i < 30; ++i)
    ASSERT_TRUE(store_.Patch(*svc_, "default", "a", PatchType::kMergePatch,
                             R"({"metadata":{"labels":{"i":")" + std::to_string(i) + R"("}}})",
                             false));
  auto w = store_.Watch(*svc_, {"default", "", "", Rv(first)});
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, 410);
  EXPECT_EQ(w.error().reason, "Expired");
  EXPECT_EQ(w.error().message.rfind("too old resource version: " + Rv(first) + " (", 0), 0u)
      << w.error().message;
  auto future = store_.Watch(*svc_, {"default", "", "", std::to_string(store_.CurrentRv() + 100)});
  ASSERT_FALSE(future);
  EXPECT_EQ(future.error().code, 504);
  EXPECT_EQ(future.error().reason, "Timeout");
  // Compaction expires everything older than now.
  auto ok = store_.Watch(*svc_, {"default", "", "", std::to_string(store_.CurrentRv() - 1)});
  ASSERT_TRUE(ok);
  store_.StopWatch(*ok);
  store_.CompactHistory();
  EXPECT_FALSE(store_.Watch(*svc_, {"default", "", "", std::to_string(store_.CurrentRv() - 1)}));
}

TEST_F(StoreTest, SelectorTransitions) {
  Create(svc_, "default",
         J(R"({"metadata":{"name":"a","labels":{"app":"x"}},"spec":{"ports":[{"port":1}]}})"));
  auto w = store_.Watch(*svc_, {"default", "app=x", "", std::to_string(store_.CurrentRv())});
  ASSERT_TRUE(w);
  auto stop = store_.Patch(*svc_, "default", "a", PatchType::kMergePatch,
                           R"({"metadata":{"labels":{"app":"y"}}})", false);
  auto start = store_.Patch(*svc_, "default", "a", PatchType::kMergePatch,
                            R"({"metadata":{"labels":{"app":"x"}}})", false);
  auto mod = store_.Patch(*svc_, "default", "a", PatchType::kMergePatch,
                          R"({"metadata":{"labels":{"b":"c"}}})", false);
  ASSERT_TRUE(stop && start && mod);
  auto batch = (*w)->Wait(std::chrono::milliseconds(0));
  ASSERT_EQ(batch.events.size(), 3u);
  EXPECT_STREQ(batch.events[0].type, "DELETED");
  // DELETED carries the previous (matching) content with the new RV.
  EXPECT_EQ(GetString(*batch.events[0].object, {"metadata", "labels", "app"}), "x");
  EXPECT_EQ(Rv(batch.events[0].object), Rv(*stop));
  EXPECT_STREQ(batch.events[1].type, "ADDED");
  EXPECT_STREQ(batch.events[2].type, "MODIFIED");
  store_.StopWatch(*w);
}

TEST_F(StoreTest, SelectorsOnList) {
  Create(
      svc_, "default",
      J(R"({"metadata":{"name":"a","labels":{"app":"x","tier":"1"}},"spec":{"ports":[{"port":1}]}})"));
  Create(svc_, "default",
         J(R"({"metadata":{"name":"b","labels":{"app":"y"}},"spec":{"ports":[{"port":1}]}})"));
  Create(svc_, "kube-system", J(R"({"metadata":{"name":"c"},"spec":{"ports":[{"port":1}]}})"));
  struct Case {
    const char* ns;
    const char* labels;
    const char* fields;
    std::vector<std::string> names;
  } cases[] = {
      {"", "", "", {"a", "b", "c"}},
      {"default", "", "", {"a", "b"}},
      {"", "app=x", "", {"a"}},
      {"", "app==x", "", {"a"}},
      {"", "app!=x", "", {"b", "c"}},
      {"", "app in (x,y)", "", {"a", "b"}},
      {"", "app notin (x)", "", {"b", "c"}},
      {"", "tier", "", {"a"}},
      {"", "!app", "", {"c"}},
      {"", "", "metadata.name=b", {"b"}},
      {"", "", "metadata.namespace!=default", {"c"}},
      {"", "app", "metadata.name!=a", {"b"}},
  };
  for (const auto& c : cases) {
    auto r = store_.List(*svc_, {c.ns, c.labels, c.fields, "", 0, ""});
    ASSERT_TRUE(r) << c.labels << c.fields;
    std::vector<std::string> names;
    for (const auto& o : r->items) names.push_back(GetString(*o, {"metadata", "name"}));
    EXPECT_EQ(names, c.names) << c.labels << " / " << c.fields;
  }
  auto bad = store_.List(*svc_, {"", "", "spec.foo=1", "", 0, ""});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, 400);
  EXPECT_EQ(bad.error().message, "field label not supported: spec.foo");
}

TEST_F(StoreTest, EventFieldSelectors) {
  Create(
      ev_, "default",
      J(R"({"metadata":{"name":"e1"},"involvedObject":{"kind":"Service","namespace":"default","name":"web","uid":"u1"},"reason":"R","type":"Normal","source":{"component":"pylon"}})"));
  Create(
      ev_, "default",
      J(R"({"metadata":{"name":"e2"},"involvedObject":{"kind":"Service","namespace":"default","name":"other","uid":"u2"},"reason":"R","type":"Warning"})"));
  auto r = store_.List(*ev_, {"default", "",
                              "involvedObject.kind=Service,involvedObject.name=web,involvedObject."
                              "namespace=default,involvedObject.uid=u1",
                              "", 0, ""});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->items.size(), 1u);
  EXPECT_EQ(store_.List(*ev_, {"default", "", "type=Warning", "", 0, ""})->items.size(), 1u);
  EXPECT_EQ(store_.List(*ev_, {"default", "", "source=pylon,reason=R", "", 0, ""})->items.size(),
            1u);
  auto mismatch = store_.Create(
      *ev_, "default",
      J(R"({"metadata":{"name":"e3"},"involvedObject":{"namespace":"kube-system"}})"));
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().causes.at(0).field, "involvedObject.namespace");
}

TEST_F(StoreTest, PaginationAndExpiredContinue) {
  for (const char* n : {"a", "b", "c", "d", "e"})
    Create(svc_, "default",
           J((std::string(R"({"metadata":{"name":")") + n + R"("},"spec":{"ports":[{"port":1}]}})")
                 .c_str()));
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    auto r = store_.List(*svc_, {"default", "", "", "", 2, token});
    ASSERT_TRUE(r);
    for (const auto& o : r->items) names.push_back(GetString(*o, {"metadata", "name"}));
    token = r->continue_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  auto first = store_.List(*svc_, {"default", "", "", "", 2, ""});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->remaining, 3);
  Create(svc_, "default", Lb("f"));
  store_.CompactHistory();
  auto expired = store_.List(*svc_, {"default", "", "", "", 2, first->continue_token});
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.error().code, 410);
  EXPECT_EQ(expired.error().reason, "Expired");
  auto garbage = store_.List(*svc_, {"default", "", "", "", 2, "!!"});
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, 400);
}

TEST_F(StoreTest, FinalizersDeferDeletion) {
  Json body = Lb("web");
  body["metadata"]["finalizers"] = {"pylon.io/x"};
  auto s = Create(svc_, "default", body);
  auto w = store_.Watch(*svc_, {"default", "", "", Rv(s)});
  auto d = store_.Delete(*svc_, "default", "web", Json::object());
  ASSERT_TRUE(d);
  EXPECT_TRUE((**d)["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(store_.Get(*svc_, "default", "web"));
  Json add = **d;
  add["metadata"]["finalizers"] = {"pylon.io/x", "pylon.io/y"};
  auto bad = store_.Update(*svc_, "default", "web", add, false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, 422);
  EXPECT_EQ(bad.error().causes.at(0).field, "metadata.finalizers");
  auto gone = store_.Patch(*svc_, "default", "web", PatchType::kJsonPatch,
                           R"([{"op":"remove","path":"/metadata/finalizers"}])", false);
  ASSERT_TRUE(gone) << Dump(gone.error().ToStatus());
  EXPECT_FALSE(store_.Get(*svc_, "default", "web"));
  auto events = Drain(*w);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].rfind("MODIFIED web@", 0), 0u);
  EXPECT_EQ(events[1].rfind("DELETED web@", 0), 0u);
  store_.StopWatch(*w);
}

TEST_F(StoreTest, DeletePreconditions) {
  auto s = Create(svc_, "default", Lb("web"));
  auto r = store_.Delete(*svc_, "default", "web", J(R"({"preconditions":{"uid":"nope"}})"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 409);
  EXPECT_EQ(r.error().message,
            "Operation cannot be fulfilled on services \"web\": Precondition failed: UID in "
            "precondition: nope, UID in object meta: " +
                GetString(*s, {"metadata", "uid"}));
  EXPECT_FALSE(
      store_.Delete(*svc_, "default", "web", J(R"({"preconditions":{"resourceVersion":"1"}})")));
  EXPECT_TRUE(store_.Delete(*svc_, "default", "web",
                            Json{{"preconditions", {{"resourceVersion", Rv(s)}}}}));
}

TEST_F(StoreTest, PatchRvIsAPrecondition) {
  auto s = Create(svc_, "default", Lb("web"));
  auto r = store_.Patch(*svc_, "default", "web", PatchType::kMergePatch,
                        R"({"metadata":{"resourceVersion":"1","labels":{"a":"b"}}})", false);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 409);
  auto ok = store_.Patch(
      *svc_, "default", "web", PatchType::kMergePatch,
      R"({"metadata":{"resourceVersion":")" + Rv(s) + R"(","labels":{"a":"b"}}})", false);
  EXPECT_TRUE(ok);
}

TEST_F(StoreTest, LeaseValidation) {
  struct Case {
    const char* spec;
    bool ok;
  } cases[] = {
      {R"({"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2025-01-02T03:04:05.123456Z","acquireTime":"2025-01-02T03:04:05.000000Z"})",
       true},
      {R"({"leaseDurationSeconds":0})", false},
      {R"({"leaseDurationSeconds":-1})", false},
      {R"({"renewTime":"2025-01-02T03:04:05Z"})", false},
      {R"({"renewTime":"2025-01-02T03:04:05.123Z"})", false},
      {R"({"acquireTime":"2025-01-02T03:04:05.1234567Z"})", false},
      {R"({"renewTime":"yesterday"})", false},
  };
  int i = 0;
  for (const auto& c : cases) {
    Json body = {{"metadata", {{"name", "l" + std::to_string(i++)}}}, {"spec", J(c.spec)}};
    auto r = store_.Create(*lease_, "default", body);
    EXPECT_EQ(r.has_value(), c.ok) << c.spec;
    if (!r) {
      EXPECT_EQ(r.error().code, 422) << c.spec;
    }
  }
}

TEST_F(StoreTest, GenerateNameAndNamespaceChecks) {
  auto r = store_.Create(
      *svc_, "default", J(R"({"metadata":{"generateName":"web-"},"spec":{"ports":[{"port":1}]}})"));
  ASSERT_TRUE(r);
  std::string name = GetString(**r, {"metadata", "name"});
  EXPECT_EQ(name.size(), 9u);
  EXPECT_EQ(name.rfind("web-", 0), 0u);
  auto nons = store_.Create(*svc_, "nope", Lb("x"));
  ASSERT_FALSE(nons);
  EXPECT_EQ(nons.error().message, "namespaces \"nope\" not found");
  auto badname = store_.Create(*svc_, "default", Lb("Bad_Name"));
  ASSERT_FALSE(badname);
  EXPECT_EQ(badname.error().causes.at(0).field, "metadata.name");
  auto missing = store_.Create(*svc_, "default", J(R"({"spec":{"ports":[{"port":1}]}})"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().causes.at(0).reason, "FieldValueRequired");
}

TEST_F(StoreTest, ClusterIpAndNodePortAllocation) {
  Json fixed = J(
      R"({"metadata":{"name":"a"},"spec":{"type":"NodePort","clusterIP":"10.96.0.50","ports":[{"port":1,"nodePort":30050}]}})");
  auto a = Create(svc_, "default", fixed);
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["spec"]["clusterIPs"], J(R"(["10.96.0.50"])"));
  fixed["metadata"]["name"] = "b";
  auto b = store_.Create(*svc_, "default", fixed);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().causes.at(0).field, "spec.clusterIPs");
  fixed["spec"].erase("clusterIP");
  b = store_.Create(*svc_, "default", fixed);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().causes.at(0).field, "spec.ports[0].nodePort");
  // Deleting frees both.
  ASSERT_TRUE(store_.Delete(*svc_, "default", "a", Json::object()));
  fixed["spec"]["clusterIP"] = "10.96.0.50";
  EXPECT_TRUE(store_.Create(*svc_, "default", fixed));
  // clusterIP is immutable.
  auto ch =
      store_.Patch(*svc_, "default", "b", PatchType::kMergePatch,
                   R"({"spec":{"clusterIP":"10.96.0.51","clusterIPs":["10.96.0.51"]}})", false);
  ASSERT_FALSE(ch);
  EXPECT_EQ(ch.error().causes.at(0).field, "spec.clusterIPs[0]");
}

const char* kCrd = R"({
  "apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
  "metadata":{"name":"widgets.example.com"},
  "spec":{"group":"example.com","scope":"Namespaced",
    "names":{"plural":"widgets","singular":"widget","kind":"Widget"},
    "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
      "schema":{"openAPIV3Schema":{"type":"object","properties":{
        "spec":{"type":"object","properties":{"size":{"type":"integer"},"color":{"type":"string","default":"red"}}},
        "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}}]}})";

TEST_F(StoreTest, CustomResources) {
  auto crd = Create(crd_, "", J(kCrd));
  ASSERT_TRUE(crd);
  const Json& conds = (*crd)["status"]["conditions"];
  ASSERT_EQ(conds.size(), 2u);
  EXPECT_EQ(conds[0]["type"], "NamesAccepted");
  EXPECT_EQ(conds[1]["type"], "Established");
  EXPECT_EQ(conds[1]["status"], "True");
  TypePtr widgets = store_.Lookup("example.com", "v1", "widgets");
  ASSERT_TRUE(widgets);
  auto w = Create(
      widgets, "default",
      J(R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"junk":true},"extra":1,"status":{"ready":true}})"));
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)["metadata"]["generation"], 1);
  EXPECT_EQ((*w)["spec"], J(R"({"size":1,"color":"red"})"));  // pruned and defaulted
  EXPECT_FALSE(w->contains("extra"));
  EXPECT_FALSE(w->contains("status"));  // create clears status
  auto bad =
      store_.Create(*widgets, "default", J(R"({"metadata":{"name":"x"},"spec":{"size":"big"}})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().causes.at(0).field, "spec.size");
  // Unconditional update is 422, strategic merge is 415.
  auto uncond = store_.Update(*widgets, "default", "w",
                              J(R"({"metadata":{"name":"w"},"spec":{"size":2}})"), false);
  ASSERT_FALSE(uncond);
  EXPECT_EQ(uncond.error().code, 422);
  auto smp = store_.Patch(*widgets, "default", "w", PatchType::kStrategicMerge,
                          R"({"spec":{"size":2}})", false);
  ASSERT_FALSE(smp);
  EXPECT_EQ(smp.error().code, 415);
  // Spec change: generation +1; metadata / status changes: no bump.
  auto g2 = store_.Patch(*widgets, "default", "w", PatchType::kMergePatch, R"({"spec":{"size":2}})",
                         false);
  ASSERT_TRUE(g2);
  EXPECT_EQ((**g2)["metadata"]["generation"], 2);
  auto lbl = store_.Patch(*widgets, "default", "w", PatchType::kMergePatch,
                          R"({"metadata":{"labels":{"a":"b"}}})", false);
  EXPECT_EQ((**lbl)["metadata"]["generation"], 2);
  auto st = store_.Patch(*widgets, "default", "w", PatchType::kMergePatch,
                         R"({"spec":{"size":9},"status":{"ready":true}})", true);
  ASSERT_TRUE(st) << Dump(st.error().ToStatus());
  EXPECT_EQ((**st)["metadata"]["generation"], 2);
  EXPECT_EQ((**st)["spec"]["size"], 2);  // /status keeps everything but status
  EXPECT_EQ((**st)["status"], J(R"({"ready":true})"));
  // Deleting the CRD removes the type and its objects.
  ASSERT_TRUE(store_.Delete(*crd_, "", "widgets.example.com", Json::object()));
  EXPECT_FALSE(store_.Lookup("example.com", "v1", "widgets"));
}

TEST_F(StoreTest, WatcherQueueBoundClosesSlowWatcher) {
  StoreOptions o;
  o.watch_queue = 3;
  Store small(clock_, o);
  TypePtr svc = small.Lookup("", "v1", "services");
  auto w = small.Watch(*svc, {"default", "", "", std::to_string(small.CurrentRv())});
  ASSERT_TRUE(w);
  for (int i = 0; i < 5; ++i) {
    Json b = Lb("s" + std::to_string(i));
    ASSERT_TRUE(small.Create(*svc, "default", b));
  }
  auto batch = (*w)->Wait(std::chrono::milliseconds(0));
  EXPECT_TRUE(batch.closed);
  small.StopWatch(*w);
}

}  // namespace
}  // namespace pylon::apiserver

namespace pylon::apiserver {
namespace {

TEST(StoreNoOp, KeyOrderDoesNotMakeAChange) {
  FakeClock clock;
  Store store(clock, StoreOptions{});
  TypePtr svc = store.Lookup("", "v1", "services");
  auto a = store.Create(
      *svc, "default",
      Json::parse(
          R"({"metadata":{"name":"a","labels":{"z":"1","b":"2"}},"spec":{"ports":[{"port":1}]}})"));
  ASSERT_TRUE(a);
  // The same object with every map's keys sorted (as a client using std::map would send it).
  Json sorted = Json::parse(nlohmann::json::parse(Dump(**a)).dump());
  auto u = store.Update(*svc, "default", "a", sorted, false);
  ASSERT_TRUE(u);
  EXPECT_EQ(GetString(**u, {"metadata", "resourceVersion"}),
            GetString(**a, {"metadata", "resourceVersion"}));
}

TEST(StoreOrder, ServiceSpecInGoStructOrder) {
  FakeClock clock;
  Store store(clock, StoreOptions{});
  TypePtr svc = store.Lookup("", "v1", "services");
  auto a = store.Create(
      *svc, "default",
      Json::parse(
          R"({"metadata":{"name":"a"},"spec":{"type":"LoadBalancer","ports":[{"port":1}]}})"));
  ASSERT_TRUE(a);
  std::vector<std::string> keys;
  for (auto it = (**a)["spec"].begin(); it != (**a)["spec"].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"ports", "clusterIP", "clusterIPs", "type", "sessionAffinity",
                                      "externalTrafficPolicy", "ipFamilies", "ipFamilyPolicy",
                                      "allocateLoadBalancerNodePorts", "internalTrafficPolicy"}));
  std::string dumped = Dump(**a);
  EXPECT_EQ(
      dumped.rfind(
          R"({"kind":"Service","apiVersion":"v1","metadata":{"name":"a","namespace":"default","uid":)",
          0),
      0u)
      << dumped;
}

}  // namespace
}  // namespace pylon::apiserver
