// Store write throughput with N concurrent watchers (fan-out cost), without HTTP.
// Run: build-*/bench/apiserver/pylon_apiserver_bench
#include <benchmark/benchmark.h>

#include "apiserver/store.h"

namespace pylon::apiserver {
namespace {

void BM_PatchWithWatchers(benchmark::State& state) {
  FakeClock clock;
  StoreOptions o;
  o.watch_queue = 1u << 30;
  Store store(clock, o);
  TypePtr svc = store.Lookup("", "v1", "services");
  for (int i = 0; i < 100; ++i)
    (void)store.Create(*svc, "default",
                       Json{{"metadata", {{"name", "s" + std::to_string(i)}}},
                            {"spec", {{"ports", {{{"port", 80}}}}}}});
  std::vector<std::shared_ptr<Watcher>> watchers;
  for (int i = 0; i < state.range(0); ++i)
    watchers.push_back(*store.Watch(*svc, {"", "", "", std::to_string(store.CurrentRv())}));
  long n = 0;
  for (auto _ : state) {
    std::string body = R"({"metadata":{"labels":{"n":")" + std::to_string(n) + R"("}}})";
    auto r = store.Patch(*svc, "default", "s" + std::to_string(n % 100), PatchType::kMergePatch,
                         body, false);
    benchmark::DoNotOptimize(r);
    ++n;
    if (n % 1000 == 0)
      for (auto& w : watchers) w->Wait(std::chrono::milliseconds(0));
  }
  for (auto& w : watchers) store.StopWatch(w);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_PatchWithWatchers)->Arg(0)->Arg(10)->Arg(100);

}  // namespace
}  // namespace pylon::apiserver

BENCHMARK_MAIN();
