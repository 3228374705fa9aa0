// The stored built-in kinds of the install (apps/v1 Deployment and DaemonSet, RBAC, ServiceAccount,
// Secret, ConfigMap) at the store level: defaults as the real server fills them in, validation
// (scenario tables), generation and DaemonSet template generation, Secret stringData, RBAC names
// and roleRef immutability, strategic merge of pod templates, discovery and Table columns.
#include <gtest/gtest.h>

#include "apiserver/discovery.h"
#include "apiserver/patch.h"
#include "apiserver/pod_template.h"
#include "apiserver/store.h"
#include "apiserver/table.h"

namespace pylon::apiserver {
namespace {

Json J(const char* text) { return Json::parse(text); }

const char* kDeployment = R"({
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "allocator", "labels": {"app": "pylon"}},
  "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "pylon"}},
    "template": {
      "metadata": {"labels": {"app": "pylon"}},
      "spec": {
        "serviceAccountName": "allocator",
        "containers": [{
          "name": "allocator", "image": "pylon:0.1.0", "args": ["allocator"],
          "ports": [{"name": "metrics", "containerPort": 7472}],
          "env": [{"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
          "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}}
        }]
      }
    }
  }
})";

const char* kDaemonSet = R"({
  "apiVersion": "apps/v1", "kind": "DaemonSet",
  "metadata": {"name": "agent"},
  "spec": {
    "selector": {"matchLabels": {"app": "agent"}},
    "template": {
      "metadata": {"labels": {"app": "agent"}},
      "spec": {
        "hostNetwork": true,
        "containers": [{
          "name": "agent", "image": "pylon",
          "ports": [{"name": "metrics", "containerPort": 7473}],
          "volumeMounts": [{"name": "key", "mountPath": "/etc/key", "readOnly": true}]
        }],
        "volumes": [{"name": "key", "secret": {"secretName": "k", "optional": true}},
                    {"name": "scratch"}]
      }
    }
  }
})";

class BuiltinKindsTest : public ::testing::Test {
 protected:
  BuiltinKindsTest() : store_(clock_, StoreOptions{}) {}
  TypePtr T(const std::string& group, const std::string& resource) {
    TypePtr t = store_.Lookup(group, "v1", resource);
    EXPECT_TRUE(t) << group << "/" << resource;
    return t;
  }
  ApiResult<ObjectPtr> Create(const std::string& group, const std::string& resource,
                              const std::string& ns, const Json& body) {
    return store_.Create(*T(group, resource), ns, body);
  }
  ObjectPtr MustCreate(const std::string& group, const std::string& resource, const std::string& ns,
                       const Json& body) {
    auto r = Create(group, resource, ns, body);
    EXPECT_TRUE(r.has_value()) << (r ? "" : Dump(r.error().ToStatus()));
    return r ? *r : nullptr;
  }
  ApiResult<ObjectPtr> Patch(const std::string& group, const std::string& resource,
                             const std::string& ns, const std::string& name, PatchType pt,
                             const std::string& body) {
    return store_.Patch(*T(group, resource), ns, name, pt, body, false);
  }

  FakeClock clock_;
  Store store_;
};

TEST_F(BuiltinKindsTest, ScopesAndDiscovery) {
  struct Case {
    std::string group, resource, kind;
    bool namespaced, status;
    std::string short_name;
  };
  const Case cases[] = {
      {"apps", "deployments", "Deployment", true, true, "deploy"},
      {"apps", "daemonsets", "DaemonSet", true, true, "ds"},
      {"", "serviceaccounts", "ServiceAccount", true, false, "sa"},
      {"", "secrets", "Secret", true, false, ""},
      {"", "configmaps", "ConfigMap", true, false, "cm"},
      {"rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false, false, ""},
      {"rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", false, false, ""},
      {"rbac.authorization.k8s.io", "roles", "Role", true, false, ""},
      {"rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true, false, ""},
  };
  std::vector<TypePtr> types = store_.Types();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.resource);
    TypePtr t = T(c.group, c.resource);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->kind, c.kind);
    EXPECT_EQ(t->namespaced, c.namespaced);
    EXPECT_EQ(t->has_status, c.status);
    auto doc = ResourceListDocument(types, c.group, "v1");
    ASSERT_TRUE(doc);
    bool listed = false, status_listed = false;
    for (const auto& r : (*doc)["resources"]) {
      if (r["name"] == c.resource) {
        listed = true;
        EXPECT_EQ(r["namespaced"], c.namespaced);
        EXPECT_EQ(r["kind"], c.kind);
        if (!c.short_name.empty()) {
          EXPECT_EQ(r["shortNames"][0], c.short_name);
        }
      }
      if (r["name"] == c.resource + "/status") status_listed = true;
    }
    EXPECT_TRUE(listed);
    EXPECT_EQ(status_listed, c.status);
  }
  // /apis lists the groups in the real server's order: apps before rbac before the rest.
  Json groups = GroupListDocument(types)["groups"];
  std::vector<std::string> names;
  for (const auto& g : groups) names.push_back(g["name"]);
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "apps");
  EXPECT_EQ(names[1], "events.k8s.io");
  EXPECT_EQ(names[2], "rbac.authorization.k8s.io");
  EXPECT_TRUE(GroupDocument(types, "apps"));
}

TEST_F(BuiltinKindsTest, DeploymentDefaultsAsTheRealServer) {
  auto d = MustCreate("apps", "deployments", "default", J(kDeployment));
  ASSERT_TRUE(d);
  const Json& o = *d;
  EXPECT_EQ(o["metadata"]["generation"], 1);
  EXPECT_EQ(o["status"], Json::object());
  const Json& spec = o["spec"];
  EXPECT_EQ(
      spec["strategy"],
      J(R"({"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}})"));
  EXPECT_EQ(spec["revisionHistoryLimit"], 10);
  EXPECT_EQ(spec["progressDeadlineSeconds"], 600);
  const Json& pod = spec["template"]["spec"];
  EXPECT_TRUE(spec["template"]["metadata"]["creationTimestamp"].is_null());
  EXPECT_EQ(pod["restartPolicy"], "Always");
  EXPECT_EQ(pod["terminationGracePeriodSeconds"], 30);
  EXPECT_EQ(pod["dnsPolicy"], "ClusterFirst");
  EXPECT_EQ(pod["schedulerName"], "default-scheduler");
  EXPECT_EQ(pod["securityContext"], Json::object());
  EXPECT_EQ(pod["serviceAccount"], "allocator");
  const Json& c = pod["containers"][0];
  EXPECT_EQ(c["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(c["terminationMessagePath"], "/dev/termination-log");
  EXPECT_EQ(c["terminationMessagePolicy"], "File");
  EXPECT_EQ(c["resources"], Json::object());
  EXPECT_EQ(c["ports"][0], J(R"({"name":"metrics","containerPort":7472,"protocol":"TCP"})"));
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"],
            J(R"({"apiVersion":"v1","fieldPath":"metadata.namespace"})"));
  EXPECT_EQ(c["livenessProbe"],
            J(R"({"httpGet":{"path":"/healthz","port":"metrics","scheme":"HTTP"},
                  "timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,
                  "failureThreshold":3})"));
  // Spec keys in Go struct order.
  std::vector<std::string> keys;
  for (auto it = spec.begin(); it != spec.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"replicas", "selector", "template", "strategy",
                                            "revisionHistoryLimit", "progressDeadlineSeconds"}));
}

TEST_F(BuiltinKindsTest, ImagePullPolicyDefault) {
  const std::pair<const char*, const char*> cases[] = {
      {"pylon", "Always"},
      {"pylon:latest", "Always"},
      {"pylon:0.1.0", "IfNotPresent"},
      {"registry.example.com:5000/pylon", "Always"},
      {"registry.example.com:5000/pylon:1", "IfNotPresent"},
      {"pylon@sha256:0123", "IfNotPresent"},
  };
  for (const auto& [image, want] : cases) {
    Json t = J(R"({"metadata":{},"spec":{"containers":[{"name":"c"}]}})");
    t["spec"]["containers"][0]["image"] = image;
    DefaultPodTemplate(t);
    EXPECT_EQ(t["spec"]["containers"][0]["imagePullPolicy"], want) << image;
  }
}

TEST_F(BuiltinKindsTest, DaemonSetDefaultsStatusAndTemplateGeneration) {
  auto ds = MustCreate("apps", "daemonsets", "default", J(kDaemonSet));
  ASSERT_TRUE(ds);
  const Json& o = *ds;
  EXPECT_EQ(o["metadata"]["annotations"]["deprecated.daemonset.template.generation"], "1");
  EXPECT_EQ(o["status"], J(R"({"currentNumberScheduled":0,"numberMisscheduled":0,
                               "desiredNumberScheduled":0,"numberReady":0})"));
  EXPECT_EQ(o["spec"]["updateStrategy"],
            J(R"({"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1,"maxSurge":0}})"));
  const Json& pod = o["spec"]["template"]["spec"];
  // hostNetwork: hostPort defaults to containerPort.
  EXPECT_EQ(pod["containers"][0]["ports"][0]["hostPort"], 7473);
  EXPECT_EQ(pod["containers"][0]["imagePullPolicy"], "Always");
  EXPECT_EQ(pod["volumes"][0]["secret"],
            J(R"({"secretName":"k","defaultMode":420,"optional":true})"));
  EXPECT_EQ(pod["volumes"][1]["emptyDir"], Json::object());

  struct Step {
    const char* what;
    const char* patch;  // strategic merge
    long long generation;
    const char* template_generation;
  };
  const Step steps[] = {
      {"label on the object: neither generation moves", R"({"metadata":{"labels":{"x":"y"}}})", 1,
       "1"},
      {"minReadySeconds: spec only", R"({"spec":{"minReadySeconds":5}})", 2, "1"},
      {"template image: both", R"({"spec":{"template":{"spec":{"containers":[{"name":"agent",
       "image":"pylon:2"}]}}}})",
       3, "2"},
  };
  for (const Step& s : steps) {
    auto r = Patch("apps", "daemonsets", "default", "agent", PatchType::kStrategicMerge, s.patch);
    ASSERT_TRUE(r.has_value()) << s.what << ": " << Dump(r.error().ToStatus());
    EXPECT_EQ((**r)["metadata"]["generation"], s.generation) << s.what;
    EXPECT_EQ((**r)["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
              s.template_generation)
        << s.what;
  }
  // The container list merged by name: the volume mount and port survived the image patch.
  auto got = store_.Get(*T("apps", "daemonsets"), "default", "agent");
  ASSERT_TRUE(got);
  const Json& c = (**got)["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["image"], "pylon:2");
  EXPECT_EQ(c[0]["volumeMounts"][0]["mountPath"], "/etc/key");
  EXPECT_EQ(c[0]["ports"][0]["containerPort"], 7473);
}

TEST_F(BuiltinKindsTest, DeploymentGenerationCountsSpecAndAnnotations) {
  ASSERT_TRUE(MustCreate("apps", "deployments", "default", J(kDeployment)));
  struct Step {
    const char* patch;
    long long generation;
  };
  const Step steps[] = {
      {R"({"metadata":{"labels":{"tier":"x"}}})", 1},
      {R"({"metadata":{"annotations":{"note":"a"}}})", 2},
      {R"({"spec":{"replicas":3}})", 3},
      {R"({"status":{"replicas":3}})", 3},  // main resource: status is kept, nothing changes
  };
  for (const Step& s : steps) {
    auto r = Patch("apps", "deployments", "default", "allocator", PatchType::kMergePatch, s.patch);
    ASSERT_TRUE(r.has_value()) << s.patch << ": " << Dump(r.error().ToStatus());
    EXPECT_EQ((**r)["metadata"]["generation"], s.generation) << s.patch;
  }
  auto st = store_.Patch(*T("apps", "deployments"), "default", "allocator", PatchType::kMergePatch,
                         R"({"status":{"readyReplicas":2,"replicas":3}})", true);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ((**st)["status"]["readyReplicas"], 2);
  EXPECT_EQ((**st)["metadata"]["generation"], 3);
}

TEST_F(BuiltinKindsTest, WorkloadValidation) {
  struct Case {
    const char* what;
    const char* merge_patch;  // applied to kDeployment before create
    const char* field;        // expected in the 422 causes
  };
  const Case cases[] = {
      {"no selector", R"({"spec":{"selector":null}})", "spec.selector"},
      {"selector does not match", R"({"spec":{"selector":{"matchLabels":{"app":"other"}}}})",
       "spec.template.metadata.labels"},
      {"empty selector", R"({"spec":{"selector":{"matchLabels":null}}})", "spec.selector"},
      {"no containers", R"({"spec":{"template":{"spec":{"containers":[]}}}})",
       "spec.template.spec.containers"},
      {"no image", R"({"spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}})",
       "spec.template.spec.containers[0].image"},
      {"bad container name",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"A_b","image":"x"}]}}}})",
       "spec.template.spec.containers[0].name"},
      {"mount of an unknown volume",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x",
           "volumeMounts":[{"name":"nope","mountPath":"/x"}]}]}}}})",
       "spec.template.spec.containers[0].volumeMounts[0].name"},
      {"restartPolicy Never", R"({"spec":{"template":{"spec":{"restartPolicy":"Never"}}}})",
       "spec.template.spec.restartPolicy"},
      {"negative replicas", R"({"spec":{"replicas":-1}})", "spec.replicas"},
      {"bad strategy", R"({"spec":{"strategy":{"type":"BlueGreen"}}})", "spec.strategy.type"},
      {"port name too long",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x",
           "ports":[{"name":"a-very-long-port-name","containerPort":1}]}]}}}})",
       "spec.template.spec.containers[0].ports[0].name"},
  };
  for (const Case& c : cases) {
    Json body = J(kDeployment);
    body.merge_patch(J(c.merge_patch));
    auto r = Create("apps", "deployments", "default", body);
    ASSERT_FALSE(r.has_value()) << c.what;
    EXPECT_EQ(r.error().code, 422) << c.what;
    bool found = false;
    for (const auto& cause : r.error().causes) found = found || cause.field == c.field;
    EXPECT_TRUE(found) << c.what << ": " << r.error().message;
  }
  // The selector is immutable.
  ASSERT_TRUE(MustCreate("apps", "deployments", "default", J(kDeployment)));
  auto r = Patch("apps", "deployments", "default", "allocator", PatchType::kMergePatch,
                 R"({"spec":{"selector":{"matchLabels":{"app":"pylon","x":"y"}},
                     "template":{"metadata":{"labels":{"x":"y"}}}}})");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("spec.selector: Invalid value"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("field is immutable"), std::string::npos) << r.error().message;
}

TEST_F(BuiltinKindsTest, SecretsAndConfigMaps) {
  auto s = MustCreate(
      "", "secrets", "default",
      J(R"({"metadata":{"name":"k"},"data":{"a":"eA=="},"stringData":{"key":"hello","a":"y"}})"));
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["type"], "Opaque");
  EXPECT_FALSE(s->contains("stringData"));
  EXPECT_EQ((*s)["data"], J(R"({"a":"eQ==","key":"aGVsbG8="})"));  // stringData wins

  struct Case {
    const char* what;
    const char* body;
    int code;
    const char* text;
  };
  const Case cases[] = {
      {"data not base64", R"({"metadata":{"name":"b1"},"data":{"a":"not base64!"}})", 400,
       "illegal base64 data at input byte 3"},
      {"bad key", R"({"metadata":{"name":"b2"},"stringData":{"a/b":"x"}})", 422,
       "a valid config key"},
      {"tls without key", R"({"metadata":{"name":"b3"},"type":"kubernetes.io/tls",
                              "stringData":{"tls.crt":"x"}})",
       422, "data[tls.key]: Required value"},
      {"stringData not strings", R"({"metadata":{"name":"b4"},"stringData":{"a":1}})", 400,
       "cannot unmarshal"},
  };
  for (const Case& c : cases) {
    auto r = Create("", "secrets", "default", J(c.body));
    ASSERT_FALSE(r.has_value()) << c.what;
    EXPECT_EQ(r.error().code, c.code) << c.what;
    EXPECT_NE(r.error().message.find(c.text), std::string::npos)
        << c.what << ": " << r.error().message;
  }
  auto type_change =
      Patch("", "secrets", "default", "k", PatchType::kMergePatch, R"({"type":"other"})");
  ASSERT_FALSE(type_change.has_value());
  EXPECT_NE(type_change.error().message.find("type: Invalid value: \"other\": field is immutable"),
            std::string::npos)
      << type_change.error().message;
  // Field selector on type.
  ListOptions lo;
  lo.ns = "default";
  lo.field_selector = "type=Opaque";
  auto list = store_.List(*T("", "secrets"), lo);
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->items.size(), 1u);

  ASSERT_TRUE(MustCreate("", "configmaps", "default",
                         J(R"({"metadata":{"name":"c"},"data":{"a":"1"},"immutable":true})")));
  auto frozen =
      Patch("", "configmaps", "default", "c", PatchType::kMergePatch, R"({"data":{"a":"2"}})");
  ASSERT_FALSE(frozen.has_value());
  EXPECT_NE(frozen.error().message.find("field is immutable when `immutable` is set"),
            std::string::npos)
      << frozen.error().message;
  auto bad = Create("", "configmaps", "default", J(R"({"metadata":{"name":"d"},"data":{"a":1}})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, 400);
}

TEST_F(BuiltinKindsTest, RbacNamesRulesAndRoleRef) {
  const char* rbac = "rbac.authorization.k8s.io";
  ASSERT_TRUE(MustCreate(rbac, "clusterroles", "",
                         J(R"({"metadata":{"name":"pylon:agent","namespace":"x"},"rules":[
                               {"apiGroups":[""],"resources":["services"],"verbs":["get"]}]})")));
  auto crb = MustCreate(rbac, "clusterrolebindings", "", J(R"({"metadata":{"name":"pylon:agent"},
                              "roleRef":{"kind":"ClusterRole","name":"pylon:agent"},
                              "subjects":[{"kind":"ServiceAccount","name":"agent",
                                           "namespace":"purelb-system"},
                                          {"kind":"User","name":"alice"}]})"));
  ASSERT_TRUE(crb);
  EXPECT_FALSE((*crb)["metadata"].contains("namespace"));  // cluster-scoped
  EXPECT_EQ((*crb)["roleRef"]["apiGroup"], rbac);          // defaulted
  EXPECT_EQ((*crb)["subjects"][1]["apiGroup"], rbac);
  EXPECT_FALSE((*crb)["subjects"][0].contains("apiGroup"));  // "" is omitted

  struct Case {
    const char* what;
    const char* resource;
    const char* ns;
    const char* body;
    const char* text;
  };
  const Case cases[] = {
      {"slash in the name", "clusterroles", "", R"({"metadata":{"name":"a/b"}})",
       "metadata.name: Invalid value: \"a/b\": may not contain '/'"},
      {"rule without verbs", "roles", "default",
       R"({"metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"]}]})",
       "rules[0].verbs: Required value"},
      {"namespaced non-resource URL", "roles", "default",
       R"({"metadata":{"name":"r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]})",
       "namespaced rules cannot apply to non-resource URLs"},
      {"ClusterRoleBinding to a Role", "clusterrolebindings", "",
       R"({"metadata":{"name":"b"},"roleRef":{"kind":"Role","name":"r"}})",
       "roleRef.kind: Unsupported value: \"Role\""},
      {"cluster-wide SA subject without namespace", "clusterrolebindings", "",
       R"({"metadata":{"name":"b"},"roleRef":{"kind":"ClusterRole","name":"r"},
           "subjects":[{"kind":"ServiceAccount","name":"sa"}]})",
       "subjects[0].namespace: Required value"},
      {"unknown subject kind", "rolebindings", "default",
       R"({"metadata":{"name":"b"},"roleRef":{"kind":"Role","name":"r"},
           "subjects":[{"kind":"Robot","name":"x"}]})",
       "subjects[0].kind: Unsupported value: \"Robot\""},
  };
  for (const Case& c : cases) {
    auto r = Create(rbac, c.resource, c.ns, J(c.body));
    ASSERT_FALSE(r.has_value()) << c.what;
    EXPECT_EQ(r.error().code, 422) << c.what;
    EXPECT_NE(r.error().message.find(c.text), std::string::npos)
        << c.what << ": " << r.error().message;
  }
  auto change = Patch(rbac, "clusterrolebindings", "", "pylon:agent", PatchType::kMergePatch,
                      R"({"roleRef":{"name":"other"}})");
  ASSERT_FALSE(change.has_value());
  EXPECT_NE(change.error().message.find("cannot change roleRef"), std::string::npos)
      << change.error().message;
  auto subjects = Patch(rbac, "clusterrolebindings", "", "pylon:agent", PatchType::kMergePatch,
                        R"({"subjects":[{"kind":"Group","name":"ops"}]})");
  EXPECT_TRUE(subjects.has_value());
}

TEST_F(BuiltinKindsTest, NamespaceDeletionTakesItsObjects) {
  ASSERT_TRUE(MustCreate("", "namespaces", "", J(R"({"metadata":{"name":"gone"}})")));
  ASSERT_TRUE(MustCreate("apps", "deployments", "gone", J(kDeployment)));
  ASSERT_TRUE(MustCreate("", "serviceaccounts", "gone", J(R"({"metadata":{"name":"sa"}})")));
  ASSERT_TRUE(store_.Delete(*T("", "namespaces"), "", "gone", Json::object()).has_value());
  EXPECT_FALSE(store_.Get(*T("apps", "deployments"), "gone", "allocator").has_value());
  EXPECT_FALSE(store_.Get(*T("", "serviceaccounts"), "gone", "sa").has_value());
}

TEST_F(BuiltinKindsTest, TableColumns) {
  auto d = MustCreate("apps", "deployments", "default", J(kDeployment));
  auto ds = MustCreate("apps", "daemonsets", "default", J(kDaemonSet));
  auto sec = MustCreate("", "secrets", "default",
                        J(R"({"metadata":{"name":"k"},"stringData":{"a":"1","b":"2"}})"));
  auto rb = MustCreate("rbac.authorization.k8s.io", "rolebindings", "default",
                       J(R"({"metadata":{"name":"pylon:agent"},
                             "roleRef":{"kind":"Role","name":"pylon:agent"},
                             "subjects":[{"kind":"ServiceAccount","name":"agent",
                                          "namespace":"default"}]})"));
  ASSERT_TRUE(d && ds && sec && rb);
  struct Case {
    TypePtr type;
    ObjectPtr obj;
    std::vector<std::string> columns;
    Json cells_without_age;  // Age (and Created At) cells replaced by null
  };
  const Case cases[] = {
      {T("apps", "deployments"),
       d,
       {"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"},
       J(R"(["allocator","0/2",0,0,null,"allocator","pylon:0.1.0","app=pylon"])")},
      {T("apps", "daemonsets"),
       ds,
       {"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age",
        "Containers", "Images", "Selector"},
       J(R"(["agent",0,0,0,0,0,"<none>",null,"agent","pylon","app=agent"])")},
      {T("", "secrets"), sec, {"Name", "Type", "Data", "Age"}, J(R"(["k","Opaque",2,null])")},
      {T("rbac.authorization.k8s.io", "rolebindings"),
       rb,
       {"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"},
       J(R"(["pylon:agent","Role/pylon:agent",null,"","","default/agent"])")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type->resource);
    Json t = ToTable(*c.type, {c.obj}, Json::object(), TableOptions{});
    std::vector<std::string> cols;
    for (const auto& cd : t["columnDefinitions"]) cols.push_back(cd["name"]);
    EXPECT_EQ(cols, c.columns);
    Json cells = t["rows"][0]["cells"];
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == "Age") cells[i] = nullptr;
    EXPECT_EQ(cells, c.cells_without_age);
  }
}

TEST(LabelSelectorTest, MatchAndFormat) {
  struct Case {
    const char* selector;
    const char* labels;
    bool match;
    const char* text;
  };
  const Case cases[] = {
      {R"({"matchLabels":{"b":"2","a":"1"}})", R"({"a":"1","b":"2","c":"3"})", true, "a=1,b=2"},
      {R"({"matchLabels":{"a":"1"}})", R"({"a":"2"})", false, "a=1"},
      {R"({"matchExpressions":[{"key":"t","operator":"In","values":["y","x"]}]})", R"({"t":"x"})",
       true, "t in (x,y)"},
      {R"({"matchExpressions":[{"key":"t","operator":"NotIn","values":["x"]}]})", R"({"t":"x"})",
       false, "t notin (x)"},
      {R"({"matchExpressions":[{"key":"t","operator":"Exists"}]})", R"({})", false, "t"},
      {R"({"matchExpressions":[{"key":"t","operator":"DoesNotExist"}]})", R"({})", true, "!t"},
      {R"({})", R"({"a":"1"})", true, "<none>"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SelectorMatches(J(c.selector), J(c.labels)), c.match) << c.selector;
    EXPECT_EQ(FormatLabelSelector(J(c.selector)), c.text) << c.selector;
  }
}

}  // namespace
}  // namespace pylon::apiserver
