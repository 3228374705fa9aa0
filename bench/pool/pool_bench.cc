// Allocation cost as the number of live allocations grows. Each iteration is one Assign of a
// fresh address (next-fit) plus the Release of it, on an allocator that already holds `live`
// allocations, so the live count stays constant while the figure is taken.
//   contiguous: the live addresses were handed out in a row (one occupied interval);
//   fragmented: every other address is free (`live` separate intervals: the worst case for the
//               interval map, and a free neighbour at every step).
// Counters: bytes_per_alloc = mallinfo2() heap growth while filling / live allocations (for
// fills of 1000 or more; it includes the Service's own state, the address entry, hash buckets
// and, when fragmented, one interval-map node per live address).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdint>
#include <memory>
#include <string>

#include "pool/allocator.h"

namespace pylon::pool {
namespace {

using net::Family;

struct Config {
  const char* name;
  Family family;
  const char* prefix;
  std::int64_t live;
  bool fragmented;
};

struct Prepared {
  const Config* config = nullptr;
  std::unique_ptr<Allocator> alloc;
  double bytes_per_alloc = 0;
};

ServiceKey Key(std::int64_t i) { return *ServiceKey::Make("bench", "svc-" + std::to_string(i)); }

AssignRequest Request(ServiceKey key, Family family) {
  return AssignRequest{std::move(key), "bench", {family}, {}, "", {{Protocol::kTCP, 80}}};
}

// One prepared allocator at a time (a million allocations is a few hundred MB).
Prepared& Prepare(const Config& c) {
  static Prepared current;
  if (current.config == &c) return current;
  current = Prepared{};
  current.config = &c;
  current.alloc = std::make_unique<Allocator>();
  Allocator& a = *current.alloc;
  auto prefix = net::Prefix::Parse(c.prefix);
  PoolDefinition def{"bench", {}, {}};
  (c.family == Family::kV4 ? def.v4 : def.v6).push_back(net::AddressRange::FromPrefix(*prefix));
  if (!a.SetPools({def})) std::abort();

  const std::size_t heap_before = mallinfo2().uordblks;
  const std::int64_t fill = c.fragmented ? 2 * c.live : c.live;
  for (std::int64_t i = 0; i < fill; ++i) {
    if (!a.Assign(Request(Key(i), c.family))) std::abort();
  }
  if (c.fragmented) {
    for (std::int64_t i = 1; i < fill; i += 2) a.Release(Key(i));
  }
  const std::size_t heap_after = mallinfo2().uordblks;
  // glibc counts chunks parked in its per-thread cache as in use, so a handful of allocations
  // can show no growth at all; the figure is meaningful for large fills only.
  current.bytes_per_alloc =
      c.live >= 1000 && heap_after > heap_before
          ? static_cast<double>(heap_after - heap_before) / static_cast<double>(c.live)
          : 0;
  return current;
}

void BM_AllocRelease(benchmark::State& state, const Config* c) {
  Prepared& p = Prepare(*c);
  Allocator& a = *p.alloc;
  const AssignRequest req = Request(*ServiceKey::Make("bench", "churn"), c->family);
  for (auto _ : state) {
    auto r = a.Assign(req);
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      break;
    }
    benchmark::DoNotOptimize(r->addresses.data());
    a.Release(req.service);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["live"] = static_cast<double>(a.address_count());
  if (p.bytes_per_alloc > 0) state.counters["bytes_per_alloc"] = p.bytes_per_alloc;
}

const Config kConfigs[] = {
    {"v4_slash16/live:1", Family::kV4, "10.0.0.0/16", 1, false},
    {"v4_slash16/live:10000", Family::kV4, "10.0.0.0/16", 10000, false},
    {"v4_slash16/live:10000/fragmented", Family::kV4, "10.0.0.0/16", 10000, true},
    {"v4_slash16/live:60000", Family::kV4, "10.0.0.0/16", 60000, false},
    {"v4_slash11/live:1000000", Family::kV4, "10.0.0.0/11", 1000000, false},
    {"v4_slash11/live:1000000/fragmented", Family::kV4, "10.0.0.0/11", 1000000, true},
    {"v6_slash64/live:1", Family::kV6, "2001:db8::/64", 1, false},
    {"v6_slash64/live:10000", Family::kV6, "2001:db8::/64", 10000, false},
    {"v6_slash64/live:10000/fragmented", Family::kV6, "2001:db8::/64", 10000, true},
    {"v6_slash64/live:1000000", Family::kV6, "2001:db8::/64", 1000000, false},
    {"v6_slash64/live:1000000/fragmented", Family::kV6, "2001:db8::/64", 1000000, true},
};

// Sharing: a Service with a sharing key joins an address already shared under it; the lookup goes
// through the key's index, so 10^4 unrelated live allocations in a /64 do not slow it down.
void BM_ShareJoin(benchmark::State& state) {
  Allocator a;
  PoolDefinition def{
      "bench", {}, {net::AddressRange::FromPrefix(*net::Prefix::Parse("2001:db8::/64"))}};
  if (!a.SetPools({def})) std::abort();
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    if (!a.Assign(Request(Key(i), Family::kV6))) std::abort();
  }
  AssignRequest first{*ServiceKey::Make("bench", "web-tcp"),
                      "bench",
                      {Family::kV6},
                      {},
                      "web",
                      {{Protocol::kTCP, 443}}};
  if (!a.Assign(first)) std::abort();
  AssignRequest join{*ServiceKey::Make("bench", "web-udp"),
                     "bench",
                     {Family::kV6},
                     {},
                     "web",
                     {{Protocol::kUDP, 443}}};
  for (auto _ : state) {
    auto r = a.Assign(join);
    if (!r || r->addresses[0] != a.AddressesOf(first.service)[0]) {
      state.SkipWithError("did not join");
      break;
    }
    a.Release(join.service);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ShareJoin)->Arg(1)->Arg(10000)->ArgName("live");

// Restart: Rebuild from n records (one per Service).
void BM_Rebuild(benchmark::State& state) {
  Allocator a;
  PoolDefinition def{
      "bench", {}, {net::AddressRange::FromPrefix(*net::Prefix::Parse("2001:db8::/64"))}};
  if (!a.SetPools({def})) std::abort();
  std::vector<ExistingRecord> records;
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    records.push_back({Key(i),
                       "bench",
                       net::IpAddress::FromValue(Family::kV6, (net::Uint128{0x20010db8} << 96) +
                                                                  static_cast<net::Uint128>(i * 7)),
                       "",
                       {{Protocol::kTCP, 80}}});
  }
  for (auto _ : state) {
    auto conflicts = a.Rebuild(records);
    if (!conflicts.empty()) {
      state.SkipWithError("unexpected conflict");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Rebuild)->Arg(10000)->Arg(100000)->ArgName("records")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pylon::pool

int main(int argc, char** argv) {
  for (const auto& c : pylon::pool::kConfigs) {
    benchmark::RegisterBenchmark((std::string("BM_AllocRelease/") + c.name).c_str(),
                                 pylon::pool::BM_AllocRelease, &c);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
