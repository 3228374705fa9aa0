// CPU cost of the per-datagram work: encode (HMAC included), decode + authenticate, and the
// detector's bookkeeping for one heartbeat. Google Benchmark.
#include <benchmark/benchmark.h>

#include "heartbeat/detector.h"
#include "heartbeat/wire.h"

using namespace pylon;
using namespace pylon::heartbeat;

namespace {

Heartbeat Sample(int addresses) {
  Heartbeat hb;
  hb.node = election::NodeName("worker-node-17.example.internal");
  hb.boot_id = 0x1234;
  hb.sequence = 1;
  for (int i = 0; i < addresses; ++i) {
    hb.addresses.push_back(net::IpAddress::V4(0xc0000200u + static_cast<unsigned>(i)));
  }
  return hb;
}

const KeyRing& Key() {
  static const KeyRing k = *KeyRing::Create({"codec-bench-key-0123456789abcdef"});
  return k;
}

void BM_Encode(benchmark::State& state) {
  Heartbeat hb = Sample(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    hb.sequence++;
    benchmark::DoNotOptimize(Encode(hb, Key()));
  }
}
BENCHMARK(BM_Encode)->Arg(0)->Arg(10)->Arg(300);

void BM_Decode(benchmark::State& state) {
  auto bytes = *Encode(Sample(static_cast<int>(state.range(0))), Key());
  for (auto _ : state) benchmark::DoNotOptimize(Decode(bytes, Key()));
}
BENCHMARK(BM_Decode)->Arg(0)->Arg(10)->Arg(300);

void BM_DecodeWrongKey(benchmark::State& state) {
  auto bytes = *Encode(Sample(10), *KeyRing::Create({"another-key-0123456789abcdef"}));
  for (auto _ : state) benchmark::DoNotOptimize(Decode(bytes, Key()));
}
BENCHMARK(BM_DecodeWrongKey);

// One heartbeat from one of N peers, plus the evaluation the service runs after it.
void BM_DetectorHeartbeat(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Detector d(DetectorOptions{election::NodeName("self"), std::chrono::milliseconds(100), 3});
  std::vector<election::NodeName> peers;
  for (int i = 0; i < n; ++i) peers.emplace_back("node-" + std::to_string(i));
  d.SetPeers(peers);
  Heartbeat hb = Sample(5);
  SteadyTime now{};
  std::uint64_t i = 0;
  for (auto _ : state) {
    hb.node = peers[i % peers.size()];
    hb.sequence = ++i;
    now += std::chrono::microseconds(100000 / n);
    d.OnHeartbeat(hb, now);
    benchmark::DoNotOptimize(d.Evaluate(now));
  }
}
BENCHMARK(BM_DetectorHeartbeat)->Arg(3)->Arg(100)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
