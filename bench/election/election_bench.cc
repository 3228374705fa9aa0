// Election cost at the target scale: 10^4 addresses (half IPv4, half IPv6) over 10^3 nodes.
//   flat:   every node on the same IPv4 and IPv6 subnet (worst case: 1000 candidates per address)
//   spread: 10 subnet pairs of 100 nodes each, addresses spread evenly over them
// Run: build-election/bench/election/pylon_election_bench
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "election/elector.h"
#include "election/membership.h"

namespace pylon::election {
namespace {

constexpr int kNodes = 1000;
constexpr int kAddresses = 10000;

struct Fixture {
  FakeClock clock;
  Membership members;
  std::vector<net::IpAddress> addresses;
  std::vector<LeaseObservation> leases;

  explicit Fixture(int subnets) {
    for (int n = 0; n < kNodes; ++n) {
      const int s = n % subnets;
      LeaseObservation o;
      o.node = NodeName("worker-" + std::to_string(n));
      o.holder_identity = o.node.str();
      o.lease_duration_seconds = 10;
      o.renew_time = "2024-01-05T12:00:00.000000Z";
      o.subnets_annotation =
          "10." + std::to_string(s) + ".0.0/16,2001:db8:" + std::to_string(s) + "::/64";
      members.Observe(o, clock.Now());
      leases.push_back(o);
    }
    for (int i = 0; i < kAddresses; ++i) {
      const int s = i % subnets;
      const int k = i / subnets + 1;
      const std::string text = i % 2 == 0
                                   ? "10." + std::to_string(s) + "." + std::to_string(k / 250) +
                                         "." + std::to_string(k % 250 + 1)
                                   : "2001:db8:" + std::to_string(s) + "::" + std::to_string(k);
      addresses.push_back(*net::IpAddress::Parse(text));
    }
  }

  Elector NewElector(std::size_t depth = 4) {
    auto e = Elector::Create(ElectorOptions{NodeName("worker-0"), Stickiness::kSticky, depth});
    for (const auto& a : addresses) e->SetAddress(a, {});
    return std::move(*e);
  }
};

// Bytes currently allocated (glibc: heap arena + mmapped blocks), to check MemoryBytes().
std::size_t HeapInUse() {
  const auto mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

Fixture& Flat() {
  static Fixture f(1);
  return f;
}
Fixture& Spread() {
  static Fixture f(10);
  return f;
}
Fixture& Pick(const benchmark::State& state) { return state.range(0) == 1 ? Flat() : Spread(); }

void SetLabel(benchmark::State& state) {
  state.SetLabel(state.range(0) == 1 ? "flat: 1000 candidates/address"
                                     : "spread: 100 candidates/address");
}

// From nothing: every address hashed against every node on its subnet.
void BM_FullElection(benchmark::State& state) {
  Fixture& f = Pick(state);
  std::uint64_t hashes = 0;
  std::size_t bytes = 0;
  for (auto _ : state) {
    Elector e = f.NewElector();
    const auto& r = e.Evaluate(f.members, f.clock.Now());
    hashes = r.hashes;
    bytes = e.MemoryBytes();
    benchmark::DoNotOptimize(r.local.size());
  }
  state.counters["hashes"] = static_cast<double>(hashes);
  state.counters["elector_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["membership_KiB"] = static_cast<double>(f.members.MemoryBytes()) / 1024;
  SetLabel(state);
}
BENCHMARK(BM_FullElection)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond)->MinTime(2);

// A node's lease is deleted (graceful shutdown): re-election of all 10^4 addresses. The node
// rejoins between iterations, untimed.
void BM_ReelectAfterLeave(benchmark::State& state) {
  Fixture& f = Pick(state);
  Elector e = f.NewElector();
  e.Evaluate(f.members, f.clock.Now());
  double moved = 0;
  double hashes = 0;
  int victim = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const LeaseObservation lease = f.leases[static_cast<std::size_t>(victim)];
    victim = (victim + 37) % kNodes;
    LeaseObservation gone = lease;
    gone.deleted = true;
    state.ResumeTiming();
    f.members.Observe(gone, f.clock.Now());
    const auto& r = e.Evaluate(f.members, f.clock.Now());
    moved += static_cast<double>(r.changes.size());
    hashes += static_cast<double>(r.hashes);
    state.PauseTiming();
    f.members.Observe(lease, f.clock.Now());
    e.Evaluate(f.members, f.clock.Now());
    state.ResumeTiming();
  }
  // Averages per departure. Hashes come from caches that ran dry after many departures (each
  // refill re-ranks one address against all its candidates).
  state.counters["moved"] = benchmark::Counter(moved, benchmark::Counter::kAvgIterations);
  state.counters["hashes"] = benchmark::Counter(hashes, benchmark::Counter::kAvgIterations);
  SetLabel(state);
}
BENCHMARK(BM_ReelectAfterLeave)->Arg(1)->Arg(10)->Unit(benchmark::kMicrosecond);

// A failure detector marks a node dead (its lease still there), then alive again: two
// re-elections per iteration, no hashing.
void BM_ReelectAfterFailureAndRecovery(benchmark::State& state) {
  Fixture& f = Pick(state);
  Elector e = f.NewElector();
  e.Evaluate(f.members, f.clock.Now());
  int victim = 0;
  for (auto _ : state) {
    const NodeName& node = f.leases[static_cast<std::size_t>(victim)].node;
    victim = (victim + 37) % kNodes;
    f.members.SetOverride(node, {Liveness::kDead, std::nullopt});
    benchmark::DoNotOptimize(e.Evaluate(f.members, f.clock.Now()).changes.size());
    f.members.ClearOverride(node);
    benchmark::DoNotOptimize(e.Evaluate(f.members, f.clock.Now()).changes.size());
  }
  SetLabel(state);
}
BENCHMARK(BM_ReelectAfterFailureAndRecovery)->Arg(1)->Arg(10)->Unit(benchmark::kMicrosecond);

// Nothing changed (e.g. a renewal): the cost of walking every address.
void BM_EvaluateUnchanged(benchmark::State& state) {
  Fixture& f = Pick(state);
  Elector e = f.NewElector();
  e.Evaluate(f.members, f.clock.Now());
  for (auto _ : state) {
    benchmark::DoNotOptimize(e.Evaluate(f.members, f.clock.Now()).local.size());
  }
  SetLabel(state);
}
BENCHMARK(BM_EvaluateUnchanged)->Arg(1)->Arg(10)->Unit(benchmark::kMicrosecond);

// A brand-new node joins: one digest per address on its subnets.
void BM_NodeJoins(benchmark::State& state) {
  Fixture& f = Pick(state);
  Elector e = f.NewElector();
  e.Evaluate(f.members, f.clock.Now());
  LeaseObservation o = f.leases[0];
  o.node = NodeName("newcomer");
  o.holder_identity = "newcomer";
  LeaseObservation gone = o;
  gone.deleted = true;
  std::uint64_t hashes = 0;
  for (auto _ : state) {
    f.members.Observe(o, f.clock.Now());
    hashes = e.Evaluate(f.members, f.clock.Now()).hashes;
    state.PauseTiming();
    f.members.Observe(gone, f.clock.Now());
    e.Evaluate(f.members, f.clock.Now());
    state.ResumeTiming();
  }
  state.counters["hashes"] = static_cast<double>(hashes);
  SetLabel(state);
}
BENCHMARK(BM_NodeJoins)->Arg(1)->Arg(10)->Unit(benchmark::kMicrosecond);

// Memory of the structures as a function of the cache depth (flat topology).
void BM_MemoryByCacheDepth(benchmark::State& state) {
  Fixture& f = Flat();
  std::size_t bytes = 0;
  std::size_t heap = 0;
  for (auto _ : state) {
    const std::size_t before = HeapInUse();
    Elector e = f.NewElector(static_cast<std::size_t>(state.range(0)));
    e.Evaluate(f.members, f.clock.Now());
    bytes = e.MemoryBytes();
    heap = HeapInUse() - before;
  }
  state.counters["elector_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["heap_MiB"] = static_cast<double>(heap) / (1 << 20);
  state.counters["bytes_per_address"] = static_cast<double>(bytes) / kAddresses;
}
BENCHMARK(BM_MemoryByCacheDepth)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_Sha256ElectionDigest(benchmark::State& state) {
  auto hasher = Sha256Hasher::Create();
  for (auto _ : state) benchmark::DoNotOptimize((*hasher)->Hash("worker-123", "2001:db8:7::1234"));
}
BENCHMARK(BM_Sha256ElectionDigest);

}  // namespace
}  // namespace pylon::election

BENCHMARK_MAIN();
