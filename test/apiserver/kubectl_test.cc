// The real kubectl 1.32 against `pylon apiserver --tls` (the built binary, as a child process):
// apply, get (Table with EXTERNAL-IP), get -w, annotate, strategic and merge patch, status patch,
// describe with events, delete, CRD + custom resource, Deployments / Secrets / ServiceAccounts /
// RBAC through kubectl's own generators. Asserts on what kubectl prints.
#include <fstream>

#include <gtest/gtest.h>

#include "test_client.h"

namespace pylon::apiserver {
namespace {

using testing::Child;
using testing::ReadFile;
using testing::WaitFor;

class KubectlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir());
    server_ =
        new Child({PYLON_BINARY, "apiserver", "--listen", "127.0.0.1:0", "--tls",
                   "--kubeconfig-out", *dir_ + "/kubeconfig", "--audit-log", *dir_ + "/audit.log"},
                  *dir_ + "/server.out");
    ASSERT_TRUE(WaitFor([] {
      return ReadFile(*dir_ + "/server.out").find("https://") != std::string::npos;
    })) << ReadFile(*dir_ + "/server.out");
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Stop(), 0);  // SIGTERM → clean exit
    delete server_;
    delete dir_;
  }

  static std::string Kubectl(std::vector<std::string> args, int* status = nullptr) {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", *dir_ + "/kubeconfig",
                                     "--cache-dir", *dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    int st = 0;
    std::string out = testing::Run(argv, &st);
    if (status)
      *status = st;
    else
      EXPECT_EQ(st, 0) << out;
    return out;
  }
  static std::string Write(const std::string& name, const std::string& text) {
    std::string path = *dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static std::string* dir_;
  static Child* server_;
};
std::string* KubectlTest::dir_ = nullptr;
Child* KubectlTest::server_ = nullptr;

const char* kService = R"(apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: 8080
)";

TEST_F(KubectlTest, ServiceLifecycle) {
  std::string svc = Write("svc.yaml", kService);
  EXPECT_EQ(Kubectl({"apply", "-f", svc, "--validate=false"}), "service/web created\n");
  EXPECT_EQ(Kubectl({"apply", "-f", svc, "--validate=false"}), "service/web unchanged\n");
  std::string changed = kService;
  changed.replace(changed.find("8080"), 4, "9090");
  EXPECT_EQ(Kubectl({"apply", "-f", Write("svc2.yaml", changed), "--validate=false"}),
            "service/web configured\n");
  EXPECT_EQ(Kubectl({"get", "svc", "web", "-o", "jsonpath={.spec.ports[0].targetPort}"}), "9090");

  std::string table = Kubectl({"get", "svc", "web"});
  EXPECT_NE(table.find("NAME   TYPE           CLUSTER-IP"), std::string::npos) << table;
  EXPECT_NE(table.find("EXTERNAL-IP"), std::string::npos) << table;
  EXPECT_NE(table.find("<pending>"), std::string::npos) << table;

  EXPECT_EQ(Kubectl({"patch", "svc", "web", "--subresource=status", "--type=merge", "-p",
                     R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}})"}),
            "service/web patched\n");
  table = Kubectl({"get", "svc", "web"});
  EXPECT_NE(table.find("192.0.2.10"), std::string::npos) << table;
  EXPECT_EQ(
      Kubectl({"get", "svc", "web", "-o", "jsonpath={.status.loadBalancer.ingress[0].ipMode}"}),
      "VIP");

  EXPECT_EQ(Kubectl({"annotate", "svc", "web", "pylon.io/note=hello"}), "service/web annotated\n");
  EXPECT_EQ(Kubectl({"patch", "svc", "web", "-p", R"({"metadata":{"labels":{"tier":"front"}}})"}),
            "service/web patched\n");
  EXPECT_EQ(Kubectl({"patch", "svc", "web", "--type=merge", "-p",
                     R"({"spec":{"externalTrafficPolicy":"Local"}})"}),
            "service/web patched\n");
  EXPECT_EQ(Kubectl({"get", "svc", "web", "-o",
                     "jsonpath={.metadata.labels.tier} {.metadata.annotations.pylon\\.io/note} "
                     "{.spec.externalTrafficPolicy}"}),
            "front hello Local");
  EXPECT_NE(Kubectl({"get", "svc", "web", "-o", "jsonpath={.spec.healthCheckNodePort}"}), "");

  auto now = std::chrono::system_clock::now();
  std::string first = FormatTime(now - std::chrono::minutes(6));
  std::string last = FormatTime(now - std::chrono::seconds(30));
  std::string uid = Kubectl({"get", "svc", "web", "-o", "jsonpath={.metadata.uid}"});
  std::string event =
      R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"web.a1","namespace":"default"},
    "involvedObject":{"kind":"Service","namespace":"default","name":"web","uid":")" +
      uid + R"(","apiVersion":"v1"},
    "reason":"AddressAssigned","message":"Assigned 192.0.2.10 from pool default","type":"Normal",
    "source":{"component":"pylon-allocator"},"firstTimestamp":")" +
      first + R"(","lastTimestamp":")" + last + R"(","count":5})";
  EXPECT_EQ(Kubectl({"create", "-f", Write("event.json", event), "--validate=false"}),
            "event/web.a1 created\n");
  std::string describe = Kubectl({"describe", "service", "web"});
  EXPECT_NE(describe.find("LoadBalancer Ingress:     192.0.2.10 (VIP)"), std::string::npos)
      << describe;
  EXPECT_NE(describe.find("Events:"), std::string::npos) << describe;
  EXPECT_NE(describe.find("AddressAssigned"), std::string::npos) << describe;
  EXPECT_NE(describe.find("pylon-allocator"), std::string::npos) << describe;
  // "6m" or "6m1s": the age is computed when kubectl runs.
  EXPECT_NE(describe.find("(x5 over 6m"), std::string::npos) << describe;
  EXPECT_NE(describe.find("Assigned 192.0.2.10 from pool default"), std::string::npos) << describe;

  EXPECT_EQ(Kubectl({"delete", "svc", "web"}), "service \"web\" deleted\n");
  int st = 0;
  std::string gone = Kubectl({"get", "svc", "web"}, &st);
  EXPECT_NE(st, 0);
  EXPECT_EQ(gone, "Error from server (NotFound): services \"web\" not found\n");

  // Every request was audited, with kubectl's user agent.
  std::string audit = ReadFile(*dir_ + "/audit.log");
  EXPECT_NE(audit.find(R"("verb":"patch","group":"","resource":"services","subresource":"status")"),
            std::string::npos);
  EXPECT_NE(audit.find(R"("user_agent":"kubectl/)"), std::string::npos);
}

TEST_F(KubectlTest, GetWatchShowsNewExternalIp) {
  std::string svc = kService;
  svc.replace(svc.find("name: web"), 9, "name: watched");
  Kubectl({"apply", "-f", Write("watched.yaml", svc), "--validate=false"});
  std::string out = *dir_ + "/watch.out";
  Child watch({"kubectl", "--kubeconfig", *dir_ + "/kubeconfig", "--cache-dir", *dir_ + "/cache",
               "get", "svc", "watched", "-w"},
              out);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("<pending>") != std::string::npos; }))
      << ReadFile(out);
  Kubectl({"patch", "svc", "watched", "--subresource=status", "--type=merge", "-p",
           R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.20"}]}}})"});
  EXPECT_TRUE(WaitFor([&] { return ReadFile(out).find("192.0.2.20") != std::string::npos; }))
      << ReadFile(out);
  watch.Stop();
  std::string text = ReadFile(out);
  EXPECT_EQ(text.find("EXTERNAL-IP"), text.rfind("EXTERNAL-IP")) << "one header only:\n" << text;
  Kubectl({"delete", "svc", "watched"});
}

const char* kCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicegroups.purelb.io
spec:
  group: purelb.io
  names: {kind: ServiceGroup, plural: servicegroups, singular: servicegroup, shortNames: [sg]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Subnet, type: string, jsonPath: .spec.local.subnet}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              local:
                type: object
                properties:
                  subnet: {type: string}
                  pool: {type: string}
)";

TEST_F(KubectlTest, CrdAndCustomResource) {
  EXPECT_EQ(Kubectl({"apply", "-f", Write("crd.yaml", kCrd), "--validate=false"}),
            "customresourcedefinition.apiextensions.k8s.io/servicegroups.purelb.io created\n");
  EXPECT_EQ(
      Kubectl({"wait", "--for", "condition=established", "crd/servicegroups.purelb.io",
               "--timeout=10s"}),
      "customresourcedefinition.apiextensions.k8s.io/servicegroups.purelb.io condition met\n");
  std::string sg = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata: {name: default, namespace: purelb-system}
spec:
  local: {subnet: 192.0.2.0/24, pool: 192.0.2.10-192.0.2.20, unknown: 1}
)";
  EXPECT_EQ(Kubectl({"apply", "-f", Write("sg.yaml", sg), "--validate=false"}),
            "servicegroup.purelb.io/default created\n");
  std::string table = Kubectl({"get", "sg", "-n", "purelb-system"});
  EXPECT_NE(table.find("SUBNET"), std::string::npos) << table;
  EXPECT_NE(table.find("192.0.2.0/24"), std::string::npos) << table;
  EXPECT_EQ(Kubectl({"get", "servicegroups.purelb.io", "-n", "purelb-system", "default", "-o",
                     "jsonpath={.spec.local}"}),
            R"({"pool":"192.0.2.10-192.0.2.20","subnet":"192.0.2.0/24"})");
  EXPECT_EQ(Kubectl({"get", "sg", "-n", "purelb-system", "default", "-o",
                     "jsonpath={.metadata.generation}"}),
            "1");
  EXPECT_EQ(Kubectl({"patch", "sg", "-n", "purelb-system", "default", "--type=merge", "-p",
                     R"({"spec":{"local":{"pool":"192.0.2.30/31"}}})"}),
            "servicegroup.purelb.io/default patched\n");
  EXPECT_EQ(Kubectl({"get", "sg", "-n", "purelb-system", "default", "-o",
                     "jsonpath={.metadata.generation}"}),
            "2");
  int st = 0;
  std::string smp =
      Kubectl({"patch", "sg", "-n", "purelb-system", "default", "-p", R"({"spec":{}})"}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(smp.find("application/strategic-merge-patch+json is not supported"), std::string::npos)
      << smp;
  EXPECT_NE(Kubectl({"api-resources"}).find("servicegroups"), std::string::npos);
  EXPECT_EQ(Kubectl({"delete", "crd", "servicegroups.purelb.io"}),
            "customresourcedefinition.apiextensions.k8s.io \"servicegroups.purelb.io\" deleted\n");
}

const char* kDeployment = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
)";

TEST_F(KubectlTest, WorkloadsSecretsAndRbac) {
  std::string deploy = Write("deploy.yaml", kDeployment);
  EXPECT_EQ(Kubectl({"apply", "-f", deploy, "--validate=false"}), "deployment.apps/web created\n");
  EXPECT_EQ(Kubectl({"apply", "-f", deploy, "--validate=false"}),
            "deployment.apps/web unchanged\n");
  std::string table = Kubectl({"get", "deploy", "web"});
  EXPECT_NE(table.find("NAME   READY   UP-TO-DATE   AVAILABLE   AGE"), std::string::npos) << table;
  EXPECT_NE(table.find("web    0/2     0            0"), std::string::npos) << table;
  EXPECT_EQ(Kubectl({"set", "image", "deployment/web", "web=nginx:1.28"}),
            "deployment.apps/web image updated\n");
  EXPECT_EQ(Kubectl({"get", "deploy", "web", "-o",
                     "jsonpath={.metadata.generation} {.spec.template.spec.containers[0].image} "
                     "{.spec.template.spec.containers[0].ports[0].protocol}"}),
            "2 nginx:1.28 TCP");
  // The "all" category reaches Deployments.
  EXPECT_NE(Kubectl({"get", "all"}).find("deployment.apps/web"), std::string::npos);

  // kubectl's generators (create secret/serviceaccount/clusterrole/...) post protobuf, which this
  // server does not decode: run them client-side and create what they print.
  auto generate = [&](std::vector<std::string> args, int* status = nullptr) {
    args.insert(args.end(), {"--dry-run=client", "-o", "json"});
    std::string file = Write("generated.json", Kubectl(args));
    return Kubectl({"create", "--validate=false", "-f", file}, status);
  };
  EXPECT_EQ(generate({"create", "secret", "generic", "creds", "--from-literal=user=admin"}),
            "secret/creds created\n");
  EXPECT_EQ(Kubectl({"get", "secret", "creds", "-o", "jsonpath={.type} {.data.user}"}),
            "Opaque YWRtaW4=");
  EXPECT_EQ(generate({"create", "serviceaccount", "robot"}), "serviceaccount/robot created\n");
  EXPECT_EQ(
      generate({"create", "clusterrole", "pylon:reader", "--verb=get,list", "--resource=services"}),
      "clusterrole.rbac.authorization.k8s.io/pylon:reader created\n");
  EXPECT_EQ(generate({"create", "clusterrolebinding", "pylon:reader", "--clusterrole=pylon:reader",
                      "--serviceaccount=default:robot"}),
            "clusterrolebinding.rbac.authorization.k8s.io/pylon:reader created\n");
  table = Kubectl({"get", "clusterrolebinding", "pylon:reader", "-o", "wide"});
  EXPECT_NE(table.find("ClusterRole/pylon:reader"), std::string::npos) << table;
  EXPECT_NE(table.find("default/robot"), std::string::npos) << table;
  // The server's RBAC validation reaches kubectl.
  int st = 0;
  std::string bad = generate(
      {"create", "clusterrolebinding", "broken", "--clusterrole=a/b", "--user=alice"}, &st);
  EXPECT_NE(st, 0) << bad;
  EXPECT_NE(bad.find("roleRef.name: Invalid value: \"a/b\": may not contain '/'"),
            std::string::npos)
      << bad;
  // Typed clients send protobuf: refused with the media types this server takes.
  std::string proto = Kubectl({"create", "serviceaccount", "direct"}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(proto.find("accepted media types include: application/json"), std::string::npos)
      << proto;

  EXPECT_EQ(Kubectl({"delete", "deploy", "web"}), "deployment.apps \"web\" deleted\n");
  EXPECT_EQ(Kubectl({"delete", "clusterrolebinding", "pylon:reader"}),
            "clusterrolebinding.rbac.authorization.k8s.io \"pylon:reader\" deleted\n");
}

}  // namespace
}  // namespace pylon::apiserver
