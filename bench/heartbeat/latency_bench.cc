// Failure-detection latency over loopback with real HeartbeatServices (sockets, threads):
// three nodes; in each run one of them stops (a crash on the wire) or marks its link down, at a
// random phase of its send cycle, and the time until both others report it dead is measured.
//
//   pylon_heartbeat_latency [runs=40] [interval_ms=100] [miss_count=3]
//
// Prints min / median / p90 / max per scenario. Expected: between (miss_count - 1) and
// miss_count intervals after the stop (the last heartbeat went out up to one interval before),
// plus scheduling delay.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "heartbeat/service.h"

using namespace pylon;
using namespace pylon::heartbeat;
using Steady = std::chrono::steady_clock;

namespace {

std::unique_ptr<HeartbeatService> Make(const std::string& name, const KeyRing& key,
                                       Duration interval, int miss) {
  ServiceOptions o;
  o.node = election::NodeName(name);
  o.config.interval = interval;
  o.config.miss_count = miss;
  o.config.port = 0;
  ServiceDeps deps;
  deps.clock = &SystemClock::Instance();
  auto s = HeartbeatService::Create(std::move(o), key, std::move(deps), nullptr);
  if (!s || !(*s)->Start()) {
    std::fprintf(stderr, "cannot start a heartbeat service\n");
    std::exit(1);
  }
  return std::move(*s);
}

void Wire(std::map<std::string, std::unique_ptr<HeartbeatService>>& nodes) {
  const auto lo = *net::IpAddress::Parse("127.0.0.1");
  for (auto& [name, svc] : nodes) {
    std::map<election::NodeName, std::vector<Endpoint>> peers;
    for (auto& [other, o] : nodes) {
      if (other != name) peers[election::NodeName(other)] = {Endpoint{lo, o->port()}};
    }
    svc->SetPeers(peers);
  }
}

PeerState StateOf(const HeartbeatService& s, const std::string& peer) {
  auto p = s.Peer(election::NodeName(peer));
  return p ? p->state : PeerState::kNeverHeard;
}

bool WaitUntil(const std::function<bool()>& cond, Duration limit) {
  const auto end = Steady::now() + limit;
  while (Steady::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return cond();
}

void PrintRow(const char* what, std::vector<double> ms, double bound_ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))];
  };
  std::printf("%-34s runs=%zu min=%.1f median=%.1f p90=%.1f max=%.1f ms (bound %.0f ms)\n", what,
              ms.size(), ms.front(), at(0.5), at(0.9), ms.back(), bound_ms);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 40;
  const Duration interval = std::chrono::milliseconds(argc > 2 ? std::atoi(argv[2]) : 100);
  const int miss = argc > 3 ? std::atoi(argv[3]) : 3;
  const double bound_ms = std::chrono::duration<double, std::milli>(interval * miss).count();
  pylon::log::SetLevel(pylon::log::Level::kError);
  const KeyRing key = *KeyRing::Create({"latency-bench-key-0123456789"});
  std::mt19937 rng(42);
  std::map<std::string, std::unique_ptr<HeartbeatService>> nodes;
  for (const char* n : {"a", "b", "c"}) nodes[n] = Make(n, key, interval, miss);
  Wire(nodes);

  std::vector<double> crash_first, crash_all, link_all, leave_all;
  auto all_alive = [&] {
    for (auto& [x, s] : nodes) {
      for (auto& [y, t] : nodes) {
        if (x != y && StateOf(*s, y) != PeerState::kAlive) return false;
      }
    }
    return true;
  };
  auto both_see_dead = [&] {
    return StateOf(*nodes["a"], "c") == PeerState::kDead &&
           StateOf(*nodes["b"], "c") == PeerState::kDead;
  };
  auto one_sees_dead = [&] {
    return StateOf(*nodes["a"], "c") == PeerState::kDead ||
           StateOf(*nodes["b"], "c") == PeerState::kDead;
  };
  for (int i = 0; i < runs; ++i) {
    const int scenario = i % 3;  // 0 crash, 1 link down, 2 graceful leave
    if (!WaitUntil(all_alive, std::chrono::seconds(5))) {
      std::fprintf(stderr, "run %d: nodes did not converge\n", i);
      return 1;
    }
    std::this_thread::sleep_for(
        std::chrono::microseconds(rng() % static_cast<unsigned>(interval.count() / 1000)));
    const auto t0 = Steady::now();
    if (scenario == 0) {
      nodes["c"]->Stop();
    } else if (scenario == 1) {
      nodes["c"]->SetLinkUp(false);
    } else {
      nodes["c"]->Leave();
    }
    double first = -1;
    WaitUntil(
        [&] {
          if (first < 0 && one_sees_dead()) {
            first = std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
          }
          return both_see_dead();
        },
        std::chrono::seconds(10));
    const double all = std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
    (scenario == 0 ? crash_all : scenario == 1 ? link_all : leave_all).push_back(all);
    if (scenario == 0) crash_first.push_back(first);
    // Restore: a fresh process for c (new boot id).
    nodes["c"] = Make("c", key, interval, miss);
    Wire(nodes);
  }
  std::printf("heartbeat detection latency over loopback: interval %lld ms, miss count %d\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(interval).count()),
              miss);
  PrintRow("crash, first peer to notice", crash_first, bound_ms);
  PrintRow("crash, both peers", crash_all, bound_ms);
  PrintRow("link down, both peers", link_all, bound_ms);
  PrintRow("graceful leave, both peers", leave_all, bound_ms);
  return 0;
}
