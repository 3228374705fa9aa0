// Chaos: the API server injects 500s, 429s and 409s, cuts every watch and compacts its history
// (410 on resume) while a driver creates, edits and deletes Services at random. After the faults
// stop, the allocator must converge: every allocatable Service allocated (condition True, one
// address per family it asked for), no address held by two Services unless they share a key, and
// the config status figures matching what the Services hold.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "allocator_harness.h"
#include "support/manifests.h"

namespace pylon::allocator::e2e {
namespace {

constexpr int kNames = 120;

// Every Service the driver makes is allocatable: requested addresses are unique per name, and
// Services sharing a key use ports unique per name.
json MakeService(int i, std::mt19937& rng) {
  Svc s;
  s.name = "c" + std::to_string(i);
  const int kind = static_cast<int>(rng() % 3);
  if (kind == 0) {
    s.annotations.push_back({"purelb.io/service-group", "chaos"});
  } else if (kind == 1) {
    s.cls = "lace-cni.io/chaosclass";
  }  // else: the "default" group
  if (rng() % 2 == 0) {
    s.families = {"IPv4", "IPv6"};
    s.policy = kind == 2 ? "PreferDualStack" : "RequireDualStack";
  }
  if (rng() % 4 == 0) {
    // From each pool's second range, which dynamic allocation never reaches (the first range is
    // never full), so a request can only collide with itself.
    const std::string base = kind == 0 ? "198.18.5." : kind == 1 ? "198.18.9." : "198.18.13.";
    std::string ip = base + std::to_string(i + 1);
    if (kind == 1) {
      s.annotations.push_back({"loadbalancer.lace-cni.io/loadBalancerIPs", ip});
    } else {
      s.annotations.push_back({"purelb.io/addresses", ip});
    }
  } else if (rng() % 3 == 0) {
    s.annotations.push_back({"purelb.io/allow-shared-ip", "key" + std::to_string(rng() % 3)});
  }
  s.ports = {{"TCP", 1000 + i}};
  return s.ToJson();
}

// ServiceGroup "g": one IPv4 pool, all of `cidr`.
std::string GroupG(const std::string& cidr) {
  return test_support::ServiceGroupYaml(
      "purelb.io/v1", "g",
      "  local:\n    v4pools:\n    - pool: " + cidr + "\n      subnet: " + cidr + "\n");
}

// ServiceGroup g's status.ipv4.inUse as the server has it ("?" if it has none).
std::string InUseOfG(Cluster& c) {
  auto o = c.client().Get(k8s::resources::ServiceGroups(), "purelb-system", "g");
  const json* st = o ? Find(*o, {"status", "ipv4"}) : nullptr;
  return st ? st->value("inUse", "?") : std::string("?");
}

// The config status must not depend on the allocator's ServiceGroup cache being current: with the
// groups' list and watch failing (the cache frozen at the version before the allocator's own last
// status write), the next status write conflicts. It must still land (re-read from the server),
// not retry with the stale version until the watch comes back. Before the fix the status stayed
// at the old count for as long as the watch was down (the chaos run's "inUse: 0").
TEST(AllocatorChaos, ConfigStatusLandsWhileTheGroupCacheIsStale) {
  Cluster c("stalestatus", ClusterOptions::WithFaultProxy());
  ASSERT_TRUE(c.Apply(GroupG("198.18.20.0/24")).has_value());
  int r = c.StartAllocator("stale");
  auto in_use = [&] { return InUseOfG(c); };
  auto create = [&](const std::string& name) {
    Svc s{name, "default", std::nullopt, {{"purelb.io/service-group", "g"}}};
    ASSERT_TRUE(c.client().Create(k8s::resources::Services(), s.ToJson()).has_value()) << name;
  };
  create("s1");
  ASSERT_TRUE(Eventually([&] { return in_use() == "1"; })) << in_use() << c.AllocatorLog(r);
  // Freeze the allocator's group cache: every list and watch of ServiceGroups fails from now on
  // (single-object requests, the status write among them, pass).
  ASSERT_TRUE(c.Faults("/pylon/faults", R"({"error_rate":1.0,"error_code":500,
      "paths":"^/apis/purelb\\.io/v1/(namespaces/[^/]+/)?servicegroups$"})")
                  .has_value());
  ASSERT_TRUE(c.Faults("/pylon/faults/cut-watches", "{}").has_value());
  create("s2");
  // This write is based on the cached version and lands; the cache never sees it.
  ASSERT_TRUE(Eventually([&] { return in_use() == "2"; })) << in_use() << c.AllocatorLog(r);
  create("s3");
  // This one conflicts against the stale cache.
  EXPECT_TRUE(Eventually([&] { return in_use() == "3"; })) << in_use() << "\n" << c.AllocatorLog(r);
  ASSERT_TRUE(c.Faults("/pylon/faults", "{}").has_value());
}

// A config status that changes to something other than what the allocator holds in force (here
// another writer; in the soak, the allocator's cache catching up with a write of the previous
// leader after a leader change) is corrected. Before the fix a status-only change requeued
// nothing: the wrong figure stayed until the next allocation in that group.
TEST(AllocatorChaos, AConfigStatusChangedBehindItsBackIsCorrected) {
  Cluster c("fixstatus", ClusterOptions::WithFaultProxy());
  ASSERT_TRUE(c.Apply(GroupG("198.18.21.0/24")).has_value());
  int r = c.StartAllocator("fix");
  auto in_use = [&] { return InUseOfG(c); };
  Svc s{"s1", "default", std::nullopt, {{"purelb.io/service-group", "g"}}};
  ASSERT_TRUE(c.client().Create(k8s::resources::Services(), s.ToJson()).has_value());
  ASSERT_TRUE(Eventually([&] { return in_use() == "1"; })) << in_use() << c.AllocatorLog(r);
  // Past every status write the allocation itself queued (config_status_delay is 1 s), so that
  // only the reaction to the change below can correct it.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  auto o = c.client().Get(k8s::resources::ServiceGroups(), "purelb-system", "g");
  ASSERT_TRUE(o.has_value());
  (*o)["status"]["ipv4"]["inUse"] = "99";
  ASSERT_TRUE(c.client().UpdateStatus(k8s::resources::ServiceGroups(), *o).has_value());
  EXPECT_TRUE(Eventually([&] { return in_use() == "1"; })) << in_use() << "\n" << c.AllocatorLog(r);
}

TEST(AllocatorChaos, FaultsAndRandomEditsConverge) {
  Cluster c("chaos", ClusterOptions::WithFaultProxy());
  for (const auto& [name, v4a, v4b, v6] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"chaos", "198.18.4.0/24", "198.18.5.0/24", "2001:db8:c4::/120"},
           {"default", "198.18.12.0/24", "198.18.13.0/24", "2001:db8:c12::/120"}}) {
    auto r =
        c.Apply("apiVersion: purelb.io/v1\nkind: ServiceGroup\nmetadata:\n  name: " + name +
                "\n  namespace: purelb-system\nspec:\n  local:\n    v4pools:\n    - pool: " + v4a +
                "\n      subnet: " + v4a + "\n    - pool: " + v4b + "\n      subnet: " + v4b +
                "\n    v6pools:\n    - pool: " + v6 + "\n      subnet: " + v6 + "\n");
    ASSERT_TRUE(r.has_value()) << r.error().message();
  }
  ASSERT_TRUE(c.Apply(R"(apiVersion: lace-cni.io/v1alpha1
kind: LoadBalancerClass
metadata:
  name: chaosclass
spec:
  ipv4Pools:
  - cidr: 198.18.8.0/24
  - cidr: 198.18.9.0/24
  ipv6Pools:
  - cidr: 2001:db8:c8::/120
)")
                  .has_value());
  int r = c.StartAllocator("chaos", {"--log-level", "info"});

  std::mt19937 rng(12345);
  ASSERT_TRUE(
      c.Faults("/pylon/faults", R"({"error_rate":0.1,"error_code":500,"conflict_rate":0.1})")
          .has_value());
  const auto end = std::chrono::steady_clock::now() + 6s;
  int ops = 0, failed_ops = 0, round = 0;
  while (std::chrono::steady_clock::now() < end) {
    const int i = static_cast<int>(rng() % kNames);
    const std::string name = "c" + std::to_string(i);
    const int op = static_cast<int>(rng() % 10);
    Status st = Ok();
    if (op < 5) {  // create or replace
      (void)c.client().Delete(k8s::resources::Services(), "default", name);
      auto cr = c.client().Create(k8s::resources::Services(), MakeService(i, rng));
      if (!cr) st = Fail(cr.error());
    } else if (op < 8) {  // edit annotations
      json ann = {{"purelb.io/allow-shared-ip", rng() % 2 ? json("key1") : json(nullptr)},
                  {"purelb.io/addresses", nullptr}};
      auto p = c.client().Patch(k8s::resources::Services(), "default", name, k8s::PatchType::kMerge,
                                {{"metadata", {{"annotations", ann}}}}, "");
      if (!p) st = Fail(p.error());
    } else {
      st = c.client().Delete(k8s::resources::Services(), "default", name);
    }
    ++ops;
    failed_ops += st ? 0 : 1;
    if (++round % 40 == 0) {
      EXPECT_TRUE(c.Faults("/pylon/faults/cut-watches", "{}").has_value());
    }
    if (round % 150 == 0) {
      EXPECT_TRUE(c.Faults("/pylon/faults/compact", "{}").has_value());
    }
    if (round == 300) {
      EXPECT_TRUE(c.Faults("/pylon/faults", R"({"error_rate":0.1,"error_code":429,
                           "conflict_rate":0.1})")
                      .has_value());
    }
  }
  ASSERT_TRUE(c.Faults("/pylon/faults", "{}").has_value());
  std::printf("chaos: %d operations (%d failed by injected faults)\n", ops, failed_ops);

  // Convergence.
  std::string why;
  const bool converged = Eventually(
      [&] {
        if (!c.KeepAllocatorRunning(r)) {
          why = "no allocator";
          return false;
        }
        auto l = c.client().List(k8s::resources::Services(), "default", {});
        if (!l) return false;
        std::map<std::string, std::pair<std::string, std::string>> holder;  // ip -> (svc, key)
        for (const auto& s : l->items) {
          const std::string name = k8s::Name(s);
          // Only the driver's Services (the real server also keeps `kubernetes` here).
          if (FindString(s, {"spec", "type"}).value_or("") != "LoadBalancer") continue;
          const json* st = Find(s, {"status"});
          bool ok = false;
          if (st && st->contains("conditions")) {
            for (const auto& cond : (*st)["conditions"]) {
              if (cond.value("type", "") == "purelb.io/AddressAllocated") {
                ok = cond.value("status", "") == "True";
              }
            }
          }
          std::vector<std::string> ips;
          if (const json* lb = Find(s, {"status", "loadBalancer"}); lb && lb->contains("ingress")) {
            for (const auto& e : (*lb)["ingress"]) ips.push_back(e.value("ip", ""));
          }
          const json* fams = Find(s, {"spec"});
          const std::string policy = fams ? fams->value("ipFamilyPolicy", "") : "";
          const size_t want = policy == "SingleStack" || policy.empty() ? 1 : 2;
          if (!ok || ips.size() != want) {
            why = name + " not allocated: " + (st ? st->dump() : "no status");
            return false;
          }
          if (k8s::Annotation(s, "purelb.io/allocated-by") != "Pylon") {
            why = name + " lacks annotations";
            return false;
          }
          const std::string key = k8s::Annotation(s, "purelb.io/allow-shared-ip");
          for (const auto& ip : ips) {
            auto [it, fresh] = holder.try_emplace(ip, name, key);
            if (!fresh && (key.empty() || it->second.second != key)) {
              why = ip + " held by " + it->second.first + " and " + name;
              return false;
            }
          }
        }
        return true;
      },
      60s);
  EXPECT_TRUE(converged) << why << "\n---- allocator log (tail) ----\n"
                         << [&] {
                              if (r < 0) return std::string();
                              std::string log = c.AllocatorLog(r);
                              return log.size() > 5000 ? log.substr(log.size() - 5000) : log;
                            }();
  // The config status figures match what the Services hold.
  auto l = c.client().List(k8s::resources::Services(), "default", {});
  ASSERT_TRUE(l.has_value());
  std::map<std::string, std::set<std::string>> used;  // allocated-from -> ips
  for (const auto& s : l->items) {
    const json* lb = Find(s, {"status", "loadBalancer"});
    if (!lb || !lb->contains("ingress")) continue;
    for (const auto& e : (*lb)["ingress"]) {
      std::string ip = e.value("ip", "");
      used[k8s::Annotation(s, "purelb.io/allocated-from") +
           (ip.find(':') == std::string::npos ? "/4" : "/6")]
          .insert(ip);
    }
  }
  auto in_use = [&](const k8s::Resource& res, const std::string& ns, const std::string& name,
                    const char* fam) {
    auto o = c.client().Get(res, ns, name);
    if (!o) return std::string("?");
    const json* st = Find(*o, {"status", fam});
    return st ? st->value("inUse", "?") : std::string("?");
  };
  struct Figure {
    const k8s::Resource* res;
    std::string ns, name, from;
  };
  for (const Figure& f :
       {Figure{&k8s::resources::ServiceGroups(), "purelb-system", "chaos", "chaos"},
        Figure{&k8s::resources::ServiceGroups(), "purelb-system", "default", "default"},
        Figure{&k8s::resources::LoadBalancerClasses(), "", "chaosclass", "chaosclass"}}) {
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(Eventually([&] {
      if (!c.KeepAllocatorRunning(r)) return false;
      return in_use(*f.res, f.ns, f.name, "ipv4") == std::to_string(used[f.from + "/4"].size()) &&
             in_use(*f.res, f.ns, f.name, "ipv6") == std::to_string(used[f.from + "/6"].size());
    })) << in_use(*f.res, f.ns, f.name, "ipv4")
        << " vs " << used[f.from + "/4"].size();
  }
}

}  // namespace
}  // namespace pylon::allocator::e2e
