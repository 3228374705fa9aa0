// Restart safety and leader election of `pylon allocator` against kube-apiserver:
//  - a crash between the status write and the annotation write (the API server's fault injection
//    fails every annotation patch, then the allocator is killed) never leads to a reused address;
//  - two replicas: only the leader writes; killing it hands over within the lease duration;
//  - 4000 Services, the allocator killed with SIGKILL mid-burst and restarted: no Service changes
//    address and no address is held twice. (4000, not 10^4: creating 10^4 Services through
//    kube-apiserver and etcd takes about 5 minutes of both cores; the 10^4 burst is a figure of
//    bench/allocator, docs/allocator.md.)
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "allocator_harness.h"
#include "k8s/lease.h"

namespace pylon::allocator::e2e {
namespace {

// LoadBalancer Service name -> ingress IPs, read with one paginated list (never faulted: the
// fault regex of the tests only matches single-object paths).
std::map<std::string, std::vector<std::string>> AllIngress(Cluster& c, const std::string& ns) {
  std::map<std::string, std::vector<std::string>> out;
  auto l = c.client().List(k8s::resources::Services(), ns, {});
  if (!l) return out;
  for (const auto& s : l->items) {
    // LoadBalancer Services only: the real server also keeps `kubernetes` in default.
    if (FindString(s, {"spec", "type"}).value_or("") != "LoadBalancer") continue;
    std::vector<std::string> ips;
    if (const json* lb = Find(s, {"status", "loadBalancer"}); lb && lb->contains("ingress")) {
      for (const auto& e : (*lb)["ingress"]) ips.push_back(e.value("ip", ""));
    }
    out[k8s::Name(s)] = ips;
  }
  return out;
}

std::string AnnotationViaList(Cluster& c, const std::string& name, const std::string& key) {
  k8s::ListOptions lo;
  lo.field_selector = "metadata.name=" + name;
  auto l = c.client().List(k8s::resources::Services(), "default", lo);
  if (!l || l->items.empty()) return "";
  return k8s::Annotation(l->items[0], key);
}

std::string LeaseHolder(Cluster& c) {
  auto l = c.client().Get(k8s::resources::Leases(), "purelb-system", "pylon-allocator");
  if (!l) return "";
  auto spec = k8s::ParseLeaseSpec(*l);
  return spec ? spec->holder_identity : "";
}

void ApplyGroup(Cluster& c, const std::string& name, const std::string& local_yaml) {
  auto r = c.Apply("apiVersion: purelb.io/v1\nkind: ServiceGroup\nmetadata:\n  name: " + name +
                   "\n  namespace: purelb-system\nspec:\n  local:\n" + local_yaml);
  ASSERT_TRUE(r.has_value()) << r.error().message();
}

TEST(AllocatorRestart, CrashBetweenStatusAndAnnotationWrites) {
  Cluster c("crash", ClusterOptions::WithFaultProxy());
  ApplyGroup(c, "default",
             "    v4pools:\n    - pool: 192.0.2.10-192.0.2.12\n      subnet: 192.0.2.0/24\n");
  // Every write to a single Service object fails (the annotation patch); /status and
  // collections are untouched.
  ASSERT_TRUE(c.Faults("/pylon/faults", R"({"error_rate":1.0,"error_code":500,
      "paths":"^/api/v1/namespaces/[^/]+/services/[^/]+$"})")
                  .has_value());
  int a = c.StartAllocator("a");
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), Svc{"first"}.ToJson()).has_value());
  ASSERT_TRUE(Eventually([&] {
    return AllIngress(c, "default")["first"] == std::vector<std::string>{"192.0.2.10"};
  })) << c.AllocatorLog(a);
  // The status is written, the annotations cannot be: die right here.
  EXPECT_EQ(AnnotationViaList(c, "first", "purelb.io/allocated-by"), "");
  ASSERT_TRUE(c.allocator(a).Signal(SIGKILL).has_value());
  (void)c.allocator(a).Wait(std::chrono::milliseconds(5000));
  ASSERT_TRUE(c.Faults("/pylon/faults", "{}").has_value());
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), Svc{"second"}.ToJson()).has_value());
  int b = c.StartAllocator("b");
  ASSERT_TRUE(c.WaitIngress("second", {"192.0.2.11"}, 15s))
      << ::testing::PrintToString(c.Ingress("second")) << c.AllocatorLog(b);
  EXPECT_EQ(c.Ingress("first"), std::vector<std::string>{"192.0.2.10"});
  EXPECT_TRUE(
      Eventually([&] { return c.Annotation("first", "purelb.io/allocated-by") == "Pylon"; }));
}

// Configuration the allocator cannot read never takes an address away (issue "nothing lost"): a
// ServiceGroup made invalid, a LoadBalancerClass made invalid and a ServiceGroup deleted, then the
// allocator killed with SIGKILL and restarted (its last valid versions lived only in memory): 0
// addresses changed or released, each Service explained by its condition; a new Service in the
// invalid group gets nothing; when the group is fixed, its Services keep their addresses and a
// new one gets a free address.
TEST(AllocatorRestart, UnreadableConfigAcrossSigkillReleasesNothing) {
  Cluster c("unreadable");
  const std::string v4 =
      "    v4pools:\n    - pool: 192.0.2.224-192.0.2.239\n      subnet: 192.0.2.0/24\n";
  ApplyGroup(
      c, "default",
      v4 + "    v6pools:\n    - pool: 2001:db8:1:0:8000::/120\n      subnet: 2001:db8:1::/64\n");
  ApplyGroup(c, "gone",
             "    v4pools:\n    - pool: 198.51.100.0/28\n      subnet: 198.51.100.0/24\n");
  const std::string cls =
      "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata:\n  name: public\n"
      "spec:\n  ipv4Pools:\n";
  ASSERT_TRUE(c.Apply(cls + "  - cidr: 203.0.113.0/28\n").has_value());
  int a = c.StartAllocator("first");
  const std::vector<Svc> services = {
      Svc{"single"},
      Svc{"dual", "default", std::nullopt, {}, {"IPv4", "IPv6"}, "RequireDualStack"},
      Svc{"in-gone", "default", std::nullopt, {{"purelb.io/service-group", "gone"}}},
      Svc{"lace", "default", std::string("lace-cni.io/public")},
  };
  for (const Svc& s : services) {
    ASSERT_TRUE(c.client().Create(k8s::resources::Services(), s.ToJson()).has_value()) << s.name;
  }
  std::map<std::string, std::vector<std::string>> before;
  ASSERT_TRUE(Eventually([&] {
    before = AllIngress(c, "default");
    return before["single"].size() == 1 && before["dual"].size() == 2 &&
           before["in-gone"].size() == 1 && before["lace"].size() == 1 &&
           c.Annotation("lace", "purelb.io/allocated-by") == "Pylon";
  })) << c.AllocatorLog(a);

  // Unreadable configuration: invalid group, invalid class, deleted group.
  ApplyGroup(c, "default",
             "    v4pools:\n    - pool: 198.18.0.1-198.18.0.2\n"
             "      subnet: 192.0.2.0/24\n");
  ASSERT_TRUE(c.Apply(cls + "  - start: 203.0.113.20\n    end: 203.0.113.10\n").has_value());
  ASSERT_TRUE(
      c.client().Delete(k8s::resources::ServiceGroups(), "purelb-system", "gone").has_value());
  ASSERT_TRUE(Eventually([&] {
    const std::string log = c.AllocatorLog(a);
    return log.find("outside subnet") != std::string::npos &&
           log.find("is after end") != std::string::npos &&
           c.Condition("in-gone").value("status", "") == "False";
  })) << c.AllocatorLog(a);
  ASSERT_TRUE(c.allocator(a).Signal(SIGKILL).has_value());
  (void)c.allocator(a).Wait(std::chrono::milliseconds(5000));
  int b = c.StartAllocator("second");
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), Svc{"newcomer"}.ToJson()).has_value());

  // Every Service explained: condition False naming the group or class and the kept addresses.
  const std::map<std::string, std::string> reasons = {{"single", "NoSuchServiceGroup"},
                                                      {"dual", "NoSuchServiceGroup"},
                                                      {"in-gone", "NoSuchServiceGroup"},
                                                      {"lace", "NoSuchClass"}};
  for (const auto& [name, reason] : reasons) {
    SCOPED_TRACE(name);
    json cond;
    EXPECT_TRUE(Eventually([&] {
      if (!c.KeepAllocatorRunning(b)) return false;
      cond = c.Condition(name);
      return cond.is_object() && cond.value("status", "") == "False" &&
             cond.value("reason", "") == reason &&
             cond.value("message", "").find("keeping " + before[name][0]) != std::string::npos;
    })) << cond.dump()
        << c.AllocatorLog(b);
    EXPECT_EQ(c.Annotation(name, "purelb.io/allocated-by"), "Pylon");
  }
  EXPECT_TRUE(Eventually([&] {
    return c.Condition("newcomer").value("reason", "") == "NoSuchServiceGroup";
  })) << c.AllocatorLog(b);
  auto after = AllIngress(c, "default");
  for (const auto& [name, ips] : before) EXPECT_EQ(after[name], ips) << name;
  EXPECT_TRUE(after["newcomer"].empty());

  // The group fixed: its Services keep their addresses, the newcomer gets a free one.
  ApplyGroup(
      c, "default",
      v4 + "    v6pools:\n    - pool: 2001:db8:1:0:8000::/120\n      subnet: 2001:db8:1::/64\n");
  EXPECT_TRUE(Eventually([&] {
    if (!c.KeepAllocatorRunning(b)) return false;
    return c.Condition("single").value("status", "") == "True" &&
           c.Condition("dual").value("status", "") == "True" &&
           AllIngress(c, "default")["newcomer"].size() == 1;
  })) << c.AllocatorLog(b);
  after = AllIngress(c, "default");
  EXPECT_EQ(after["single"], before["single"]);
  EXPECT_EQ(after["dual"], before["dual"]);
  EXPECT_EQ(after["in-gone"], before["in-gone"]);
  EXPECT_EQ(after["lace"], before["lace"]);
  ASSERT_EQ(after["newcomer"].size(), 1u);
  for (const std::string& held : {before["single"][0], before["dual"][0]}) {
    EXPECT_NE(after["newcomer"][0], held);
  }
}

TEST(AllocatorRestart, TwoReplicasLeaderElection) {
  Cluster c("leader");
  ApplyGroup(c, "default",
             "    v4pools:\n    - pool: 192.0.2.20-192.0.2.29\n      subnet: 192.0.2.0/24\n");
  int ra = c.StartAllocator("replica-a");
  int rb = c.StartAllocator("replica-b");
  std::string leader;
  ASSERT_TRUE(Eventually([&] { return !(leader = LeaseHolder(c)).empty(); }, 15s));
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), Svc{"one"}.ToJson()).has_value());
  ASSERT_TRUE(c.WaitIngress("one", {"192.0.2.20"}));
  const int lead = leader == "replica-a" ? ra : rb;
  const int follow = lead == ra ? rb : ra;
  // Only the leader writes. The leader logs "status written" after the API server has answered,
  // so the test may see the ingress a moment before the line reaches the log file.
  EXPECT_TRUE(Eventually([&] {
    return c.AllocatorLog(lead).find("status written") != std::string::npos;
  })) << c.AllocatorLog(lead);
  EXPECT_TRUE(Eventually([&] {
    return c.AllocatorLog(follow).find("informers synced") != std::string::npos;
  })) << c.AllocatorLog(follow);
  EXPECT_EQ(c.AllocatorLog(follow).find("status written"), std::string::npos);
  EXPECT_EQ(c.AllocatorLog(follow).find("became leader"), std::string::npos);

  // Kill the leader; the follower takes over within about the lease duration.
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.allocator(lead).Signal(SIGKILL).has_value());
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), Svc{"two"}.ToJson()).has_value());
  const std::string other = lead == ra ? "replica-b" : "replica-a";
  ASSERT_TRUE(Eventually([&] { return LeaseHolder(c) == other; }, 15s));
  const auto took_over = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.WaitIngress("two", {"192.0.2.21"}, 15s)) << c.AllocatorLog(follow);
  const auto allocated = std::chrono::steady_clock::now();
  EXPECT_EQ(c.Ingress("one"), std::vector<std::string>{"192.0.2.20"});
  std::printf(
      "takeover: lease acquired %lld ms after SIGKILL, new Service allocated after %lld "
      "ms (lease duration %s)\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(took_over - killed).count()),
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(allocated - killed).count()),
      kLeaseDuration);
}

TEST(AllocatorRestart, ThousandsOfServicesKilledMidBurst) {
  constexpr int kServices = 4000;
  Cluster c("burst");
  ApplyGroup(c, "default",
             "    v4pools:\n    - pool: 198.18.0.0/16\n      subnet: 198.18.0.0/16\n");
  const std::vector<std::string> flags = {"--log-level",      "info", "--lease-duration", "4s",
                                          "--renew-deadline", "3s",   "--retry-period",   "500ms"};
  int a = c.StartAllocator("first", flags);
  std::atomic<int> created{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> creators;
  for (int t = 0; t < 8; ++t) {
    creators.emplace_back([&, t] {
      for (int i = t; i < kServices && !stop.load(); i += 8) {
        Svc s{"s" + std::to_string(i)};
        for (int attempt = 0; attempt < 5; ++attempt) {
          if (c.client().Create(k8s::resources::Services(), s.ToJson())) break;
        }
        created.fetch_add(1);
      }
    });
  }
  // Kill -9 once a good part is allocated, while Services are still being created.
  ASSERT_TRUE(Eventually(
      [&] {
        if (!c.KeepAllocatorRunning(a)) return false;
        auto all = AllIngress(c, "default");
        int with = 0;
        for (const auto& [n, ips] : all) with += ips.empty() ? 0 : 1;
        return with >= kServices / 4;
      },
      120s, 500ms));
  ASSERT_TRUE(c.allocator(a).Signal(SIGKILL).has_value());
  (void)c.allocator(a).Wait(std::chrono::milliseconds(5000));
  const auto before = AllIngress(c, "default");
  int had = 0;
  for (const auto& [n, ips] : before) had += ips.empty() ? 0 : 1;
  std::printf("killed with %d of %d created Services allocated (%d created so far)\n", had,
              static_cast<int>(before.size()), created.load());
  int b = c.StartAllocator("second", flags);
  for (auto& t : creators) t.join();
  std::map<std::string, std::vector<std::string>> after;
  ASSERT_TRUE(Eventually(
      [&] {
        if (!c.KeepAllocatorRunning(b)) return false;
        after = AllIngress(c, "default");
        if (static_cast<int>(after.size()) < kServices) return false;
        for (const auto& [n, ips] : after) {
          if (ips.empty()) return false;
        }
        return true;
      },
      180s, 500ms))
      << "allocated " << after.size() << "\n"
      << c.AllocatorLog(b).substr(0, 4000);
  int changed = 0;
  for (const auto& [n, ips] : before) {
    if (!ips.empty() && after[n] != ips) ++changed;
  }
  EXPECT_EQ(changed, 0);
  std::set<std::string> seen;
  int duplicates = 0;
  for (const auto& [n, ips] : after) {
    for (const auto& ip : ips) duplicates += seen.insert(ip).second ? 0 : 1;
  }
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(static_cast<int>(seen.size()), kServices);
}

}  // namespace
}  // namespace pylon::allocator::e2e
