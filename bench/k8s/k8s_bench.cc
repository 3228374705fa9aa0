// pylon_k8s_bench: end-to-end figures of the Kubernetes client against the real etcd +
// kube-apiserver (lab::ControlPlane on loopback, the release scripts/k8s-components.sh builds; see
// test/support/k8s/real_apiserver.h), real HTTPS with the control plane's CA:
//   1. list+watch start-up of an informer over N Services (paginated LIST limit=500, then WATCH);
//   2. watch-event throughput: a raw watch replaying the server's history, and a live informer
//      fed by concurrent writers (events/s as seen by the informer's handler).
// --proxy goes through `pylon-dev fault-proxy` (in-process, plain HTTP, no faults) instead, to see
// what the proxy the tests use costs.
// Usage: pylon_k8s_bench [--services N] [--updates N] [--writers N] [--proxy]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "k8s/informer.h"
#include "support/k8s/real_apiserver.h"

namespace pylon::k8s {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

Json Service(const std::string& ns, const std::string& name) {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "bench"}}}}},
          {"spec",
           {{"type", "ClusterIP"},
            {"ports", Json::array({{{"name", "http"}, {"port", 80}, {"protocol", "TCP"}}})}}}};
}

// Runs fn(i) for i in [0, n) on `threads` threads; returns false if any call failed.
bool Parallel(int n, int threads, const std::function<bool(int)>& fn) {
  std::atomic<int> next{0};
  std::atomic<bool> ok{true};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        if (!fn(i)) ok = false;
      }
    });
  }
  for (auto& t : ts) t.join();
  return ok;
}

int Main(int argc, char** argv) {
  int services = 10000;
  int updates = 20000;
  int writers = 4;
  bool proxy = false;
  auto app = cli::NewCommand("pylon_k8s_bench",
                             "Pylon's Kubernetes client on kube-apiserver: informer and writes");
  app->add_option("--services", services, "Services in the informer's cache")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--updates", updates, "status updates written")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--writers", writers, "threads writing")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_flag("--proxy", proxy, "go through pylon-dev fault-proxy (no faults)");
  if (auto code = cli::Parse(*app, argc, argv)) return *code;
  if (const auto why = test_support::ApiServerMissing()) {
    std::fprintf(stderr, "pylon_k8s_bench: %s\n", why->c_str());
    return 2;
  }
  auto server = RealApiServer::Start();
  if (!server) {
    std::fprintf(stderr, "cannot start the control plane: %s\n", server.error().message().c_str());
    return 1;
  }
  const RestConfig& config = proxy ? (*server)->config() : (*server)->direct_config();
  auto client_r = NewClient(config, "pylon-k8s-bench/0.1.0");
  if (!client_r) return 1;
  Client& client = **client_r;
  const std::string ns = "bench";
  if (!client.Create(resources::Namespaces(), Json{{"metadata", {{"name", ns}}}})) return 1;
  const std::string rv_before = client.List(resources::Namespaces(), "", {})->resource_version;

  std::printf("pylon_k8s_bench: %d Services, %d updates, %d writers, %s\n", services, updates,
              writers,
              proxy ? "HTTP via pylon-dev fault-proxy" : "HTTPS straight to kube-apiserver");
  auto t0 = Clock::now();
  bool ok = Parallel(services, writers, [&](int i) {
    return client.Create(resources::Services(), Service(ns, "svc-" + std::to_string(i)))
        .has_value();
  });
  double create_ms = Ms(Clock::now() - t0);
  if (!ok) {
    std::fprintf(stderr, "creating Services failed\n");
    return 1;
  }
  std::printf("create   %6d Services            %9.1f ms  %9.0f creates/s\n", services, create_ms,
              services / create_ms * 1000);

  // 1. Informer start-up: paginated LIST (limit 500) until HasSynced, then the WATCH is open.
  std::vector<double> sync_ms;
  for (int rep = 0; rep < 5; ++rep) {
    InformerOptions io;
    io.resource = resources::Services();
    io.ns = ns;
    Informer inf(client, io);
    auto s = Clock::now();
    inf.Start();
    if (!inf.WaitForSync(std::chrono::seconds(60)) || inf.store().Size() != size_t(services)) {
      std::fprintf(stderr, "informer did not sync\n");
      return 1;
    }
    sync_ms.push_back(Ms(Clock::now() - s));
    inf.Stop();
  }
  std::sort(sync_ms.begin(), sync_ms.end());
  std::printf(
      "informer list+watch start-up (%d Services, limit=500): median %.1f ms, min %.1f ms\n",
      services, sync_ms[sync_ms.size() / 2], sync_ms.front());
  for (int64_t page : {int64_t{0}, int64_t{500}}) {
    ListOptions lo;
    lo.page_size = page;
    auto s = Clock::now();
    auto list = client.List(resources::Services(), ns, lo);
    if (!list) return 1;
    std::printf("list     %6zu Services, limit=%-4lld %9.1f ms\n", list->items.size(),
                static_cast<long long>(page), Ms(Clock::now() - s));
  }

  // 2a. Raw watch replaying the history since before the creates (server encode + client decode).
  {
    int64_t seen = 0;
    WatchOptions wo;
    wo.resource_version = rv_before;
    wo.timeout_seconds = 60;
    auto s = Clock::now();
    Status st = client.Watch(
        resources::Services(), ns, wo, [&](WatchEvent&&) { return ++seen < services; }, nullptr);
    double ms = Ms(Clock::now() - s);
    if (!st) std::fprintf(stderr, "watch: %s\n", st.error().message().c_str());
    std::printf("watch replay %6lld events           %9.1f ms  %9.0f events/s\n",
                static_cast<long long>(seen), ms, seen / ms * 1000);
  }

  // 2b. Live: writers patch Services while an informer follows; count handler events.
  {
    InformerOptions io;
    io.resource = resources::Services();
    io.ns = ns;
    Informer inf(client, io);
    std::atomic<int64_t> events{0};
    std::mutex mu;
    Clock::time_point first{}, last{};
    inf.AddHandlers(EventHandlers{nullptr,
                                  [&](const Json&, const Json&) {
                                    auto now = Clock::now();
                                    if (events++ == 0) first = now;
                                    std::lock_guard<std::mutex> l(mu);
                                    last = now;
                                  },
                                  nullptr});
    inf.Start();
    if (!inf.WaitForSync(std::chrono::seconds(60))) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // watch established
    auto s = Clock::now();
    ok = Parallel(updates, writers, [&](int i) {
      Json patch = {{"metadata", {{"annotations", {{"bench", std::to_string(i)}}}}}};
      return client
          .Patch(resources::Services(), ns, "svc-" + std::to_string(i % services),
                 PatchType::kMerge, patch, "")
          .has_value();
    });
    double write_ms = Ms(Clock::now() - s);
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (events < updates && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    double end_to_end = Ms(Clock::now() - s);
    double span;
    {
      std::lock_guard<std::mutex> l(mu);
      span = Ms(last - first);
    }
    std::printf("live     %6d patches by %d writers %9.1f ms  %9.0f writes/s%s\n", updates, writers,
                write_ms, updates / write_ms * 1000, ok ? "" : " (some failed)");
    std::printf(
        "informer %6lld events observed      %9.1f ms  %9.0f events/s (first→last event); "
        "all seen %.1f ms after the first write\n",
        static_cast<long long>(events.load()), span, events / span * 1000, end_to_end);
    inf.Stop();
  }
  return 0;
}

}  // namespace
}  // namespace pylon::k8s

int main(int argc, char** argv) { return pylon::k8s::Main(argc, argv); }
