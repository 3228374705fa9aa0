// Agent benchmarks:
//  - BM_PlanAfterNodeLeaves: the agent core's whole pass (Planner::Compute: grouping Services,
//    handing addresses to the elector, electing) for 10^4 addresses over 10^3 live nodes on one
//    subnet, right after one node's lease is deleted.
//  - BM_PassWith1000Announced: a full Reconciler pass (plan + kernel sync over FakeNetlink +
//    writes) while this node holds 10^3 local addresses; reports the process RSS and the
//    planner's bookkeeping size.
// Run: build-agent/bench/agent/pylon_agent_bench
#include <benchmark/benchmark.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agent/address_sync.h"
#include "agent/garp.h"
#include "agent/ownership.h"
#include "agent/planner.h"
#include "agent/reconciler.h"
#include "agent/writer.h"
#include "config/validate.h"
#include "election/membership.h"
#include "metrics/registry.h"
#include "packet/announcer.h"
#include "support/netlink/fake_netlink.h"
#include "support/packet/fake_announcer.h"

namespace pylon::agent {
namespace {

long RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// 2001:db8:1::/64 holds every address and every node.
net::IpAddress Address(int i) {
  return net::IpAddress::FromValue(net::Family::kV6, (net::Uint128{0x20010db800010000ULL} << 64) +
                                                         0x1000 + static_cast<unsigned>(i));
}

election::LeaseObservation Lease(int node, int renewal) {
  election::LeaseObservation o;
  o.node = NodeName("node" + std::to_string(node));
  o.holder_identity = o.node.str();
  o.lease_duration_seconds = 10;
  o.renew_time = std::to_string(renewal);
  o.subnets_annotation = "2001:db8:1::/64";
  return o;
}

std::vector<ServiceInput> Services(int n) {
  std::vector<ServiceInput> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    ServiceInput s;
    s.service.ns = "default";
    s.service.name = "svc" + std::to_string(i);
    s.service.type = "LoadBalancer";
    s.service.external_traffic_policy = "Cluster";
    s.service.ingress = {Address(i)};
    s.owner = model::Selection{model::Owner::kServiceGroup, "default"};
    out.push_back(std::move(s));
  }
  return out;
}

void BM_PlanAfterNodeLeaves(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int addresses = static_cast<int>(state.range(1));
  SteadyTime now{std::chrono::hours(1)};
  election::Membership membership;
  for (int n = 0; n < nodes; ++n) membership.Observe(Lease(n, 1), now);
  auto planner = *Planner::Create(
      PlannerOptions{NodeName("node0"), EtpLocalMode::kReset, election::Stickiness::kSticky});
  NodeNetwork network;
  network.interfaces.push_back(LocalInterface{"eth0", 2, {*net::Prefix::Parse("2001:db8:1::/64")}});
  config::InForceConfig config;
  std::vector<ServiceInput> services = Services(addresses);
  std::vector<L2Advertisement> l2;
  PlanInputs in{&network, &config, &services, &l2, true, false};
  planner.Compute(in, membership, now);  // the initial election (10^7 digests) is not timed

  int renewal = 2;
  std::uint64_t moved = 0;
  for (auto _ : state) {
    // The winner of address 0 leaves (graceful: its lease is deleted).
    const NodeName* w = planner.elector().WinnerOf(Address(0));
    const NodeName leaving = *w;
    election::LeaseObservation gone;
    gone.node = leaving;
    gone.deleted = true;
    membership.Observe(gone, now);
    Plan plan = planner.Compute(in, membership, now);
    moved += plan.winner_changes;
    benchmark::DoNotOptimize(plan);
    state.PauseTiming();
    auto back = Lease(std::stoi(leaving.str().substr(4)), ++renewal);
    membership.Observe(back, now);
    planner.Compute(in, membership, now);
    state.ResumeTiming();
  }
  state.counters["moved_per_leave"] =
      benchmark::Counter(static_cast<double>(moved) / static_cast<double>(state.iterations()));
  state.counters["elector_MB"] =
      static_cast<double>(planner.elector().MemoryBytes()) / (1024.0 * 1024.0);
}
BENCHMARK(BM_PlanAfterNodeLeaves)
    ->Args({1000, 10000})
    ->Args({100, 10000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20);

void BM_PassWith1000Announced(benchmark::State& state) {
  const int addresses = static_cast<int>(state.range(0));
  const long rss_before = RssKb();
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  const int eth0 = nl.AddTestLink("eth0", "veth");
  election::Membership membership;
  membership.Observe(Lease(0, 1), clock.Now());
  auto planner = *Planner::Create(
      PlannerOptions{NodeName("node0"), EtpLocalMode::kReset, election::Stickiness::kSticky});
  MemoryOwnershipStore store;
  AddressSync sync(nl, store, clock);
  (void)sync.Load();
  GarpScheduler garp;
  packet::FakeAnnouncer announcer;
  RecordingWriter writer;
  metrics::Registry registry;
  Reconciler reconciler(
      ReconcilerDeps{&planner, &sync, &garp, &announcer, &nl, &writer, &registry, &clock});
  NodeNetwork network;
  network.interfaces.push_back(
      LocalInterface{"eth0", eth0, {*net::Prefix::Parse("2001:db8:1::/64")}});
  config::InForceConfig config;
  std::vector<ServiceInput> services = Services(addresses);
  std::vector<L2Advertisement> l2;
  PlanInputs in{&network, &config, &services, &l2, true, false};
  auto first = reconciler.Run(in, membership);
  if (first.sync.added.size() != static_cast<std::size_t>(addresses)) {
    state.SkipWithError("not every address was added");
    return;
  }
  int renewal = 1;
  for (auto _ : state) {
    clock.Advance(std::chrono::seconds(1));
    membership.Observe(Lease(0, ++renewal), clock.Now());
    writer.Clear();
    auto r = reconciler.Run(in, membership);
    benchmark::DoNotOptimize(r);
  }
  state.counters["held"] = static_cast<double>(sync.owned().size());
  state.counters["rss_MB"] = static_cast<double>(RssKb()) / 1024.0;
  state.counters["rss_growth_MB"] = static_cast<double>(RssKb() - rss_before) / 1024.0;
  state.counters["elector_KB"] = static_cast<double>(planner.elector().MemoryBytes()) / 1024.0;
}
BENCHMARK(BM_PassWith1000Announced)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pylon::agent

BENCHMARK_MAIN();
