// `pylon-dev lab timing`: Service creation → the address answers on the client, and delete → it
// stops answering, measured from just before the API call (k8s client: POST / DELETE) to the first
// successful (resp. first failing) HTTP probe from the client; probes every 5 ms, 20 ms timeout.
//
// By default the Service asks for no address: the allocator picks the next one of each pool,
// which the agents probed ahead (docs/agent.md "Probe ahead"). The addresses are predicted from the
// ServiceGroup's status.probeAhead before each run and checked afterwards. `--requested` asks for
// the last address of each pool instead (purelb.io/addresses): the full duplicate-address probe
// before the first announcement, as every requested address gets it.
//
// Before the runs, two more ServiceGroups are applied (three pools on the three nodes) and the
// address-resolution traffic on the LAN is counted for `--cost-seconds` while nothing else
// happens: what probing ahead costs (lan_count.h).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "k8s/client_impl.h"
#include "k8s/resource.h"
#include "k8s/rest_config.h"
#include "lab/command.h"
#include "lab/lan_count.h"
#include "lab/measure.h"
#include "lab/netns.h"
#include "lab/responder.h"
#include "lab/service_state.h"

namespace pylon::lab {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// With --requested, the addresses the Service asks for (purelb.io/addresses), IPv4 then IPv6: the
// last of each pool of the ServiceGroup localdual.
const std::vector<std::string> kRequestedIps = {"192.0.2.229", "2001:db8:1:0:8000::7"};
constexpr double kTimingWindowS = 10;

// Two more pools on the nodes' subnets (LAN A and B), for the probing cost: three pools in all.
// spare2's IPv6 pool is half a /64: probed ahead all the same, the next few addresses only.
constexpr const char* kSpareGroups = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: spare1
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 192.0.2.230-192.0.2.239
      subnet: 192.0.2.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:1:0:8001::/112
      subnet: 2001:db8:1::/64
---
apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: spare2
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 198.51.100.100-198.51.100.120
      subnet: 198.51.100.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:f00d:0:8000::/65
      subnet: 2001:db8:f00d::/64
)";

struct TimingFlags {
  MeasureFlags measure;
  bool requested = false;
  int cost_seconds = 20;
};

nlohmann::json TimingService(const std::vector<std::string>& requested) {
  nlohmann::json annotations = {{"purelb.io/service-group", "localdual"}};
  if (!requested.empty()) annotations["purelb.io/addresses"] = requested[0] + "," + requested[1];
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", {{"name", "timing"}, {"namespace", "default"}, {"annotations", annotations}}},
      {"spec",
       {{"type", "LoadBalancer"},
        {"ipFamilyPolicy", "RequireDualStack"},
        {"ipFamilies", {"IPv4", "IPv6"}},
        {"selector", {{"app", "timing"}}},
        {"ports", {{{"port", 80}, {"protocol", "TCP"}, {"targetPort", 8080}}}}}}};
}

// Runs `action` while probing every address of `ips` from the client until each answers
// (`want_ok`) or fails to (!want_ok); returns the ms from just before `action` to that probe, per
// address (-1 when not within kTimingWindowS).
std::vector<double> TimeAddresses(const Lab& lab, const std::vector<std::string>& ips, bool want_ok,
                                  const std::function<void()>& action) {
  const std::vector<std::string>& kTimingIps = ips;
  std::vector<double> at(kTimingIps.size(), -1);
  std::atomic<bool> started{false};
  SteadyClock::time_point t0;
  std::thread prober([&] {
    (void)InNetns(lab.topology().ClientNetns(), [&]() -> int {
      while (!started) std::this_thread::sleep_for(Ms(1));
      while (!Stopping() && SinceMs(t0) < kTimingWindowS * 1000) {
        bool all = true;
        for (size_t i = 0; i < kTimingIps.size(); ++i) {
          if (at[i] >= 0) continue;
          double t = SinceMs(t0);
          if (ProbeOnce(kTimingIps[i], 80, Ms(20)).ok == want_ok) {
            at[i] = want_ok ? SinceMs(t0) : t;
          } else {
            all = false;
          }
        }
        if (all) break;
        std::this_thread::sleep_for(Ms(5));
      }
      return 0;
    });
  });
  t0 = SteadyClock::now();
  started = true;
  action();
  prober.join();
  return at;
}

// Waits (10 s at most) until the Service is gone from the API.
void WaitDeleted(k8s::Client& client) {
  auto deadline = SteadyClock::now() + Ms(10000);
  while (SteadyClock::now() < deadline) {
    auto g = client.Get(k8s::resources::Services(), "default", "timing");
    if (!g && g.error().code() == ErrorCode::kNotFound) break;
    std::this_thread::sleep_for(Ms(20));
  }
}

// The first address of each family in the ServiceGroup localdual's status.probeAhead (what the
// allocator hands out next), once it shows both; empty after 10 s without.
std::vector<std::string> NextAddresses(const Lab& lab) {
  const auto deadline = SteadyClock::now() + Ms(10000);
  while (SteadyClock::now() < deadline && !Stopping()) {
    auto sg = GetJson(lab, {"get", "servicegroups.purelb.io", "-n", "purelb-system", "localdual"});
    if (sg) {
      try {
        const auto& next = sg->at("status").at("probeAhead");
        if (!next.at("ipv4").empty() && !next.at("ipv6").empty()) {
          return {next.at("ipv4")[0].get<std::string>(), next.at("ipv6")[0].get<std::string>()};
        }
      } catch (const std::exception&) {
      }
    }
    std::this_thread::sleep_for(Ms(100));
  }
  return {};
}

// Whether some live node lease lists every one of `ips` as probed free (purelb.io/probe-ahead);
// waits up to 10 s.
bool WaitProbedFree(const Lab& lab, const std::vector<std::string>& ips) {
  const auto deadline = SteadyClock::now() + Ms(10000);
  while (SteadyClock::now() < deadline && !Stopping()) {
    auto leases = GetJson(lab, {"get", "leases", "-n", "purelb-system"});
    std::string all;
    if (leases && leases->contains("items")) {
      for (const auto& l : (*leases)["items"]) all += Annotation(l, "purelb.io/probe-ahead") + ",";
    }
    bool ok = true;
    for (const auto& ip : ips) ok = ok && all.find(ip + " free ") != std::string::npos;
    if (ok) return true;
    std::this_thread::sleep_for(Ms(200));
  }
  return false;
}

// Counts the ARP / ND traffic on the LAN for `seconds` with three pools in force, and prints the
// rates. Nothing else happens on the lab meanwhile.
void MeasureProbingCost(const Lab& lab, int seconds) {
  if (auto s = lab.Apply(kSpareGroups); !s) {
    Say("probing cost: apply failed: " + s.error().message());
    return;
  }
  // Steady state first: the new pools' next addresses published, probed, re-probed once.
  std::this_thread::sleep_for(Ms(12000));
  LanCounter counter(lab.topology().ClientNetns());
  const auto t0 = SteadyClock::now();
  std::this_thread::sleep_for(Ms(1000L * seconds));
  const LanCounts c = counter.counts();
  const double secs = SinceMs(t0) / 1000;
  if (!counter.error().empty()) {
    Say("probing cost: capture failed: " + counter.error());
    return;
  }
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "probing cost, 3 nodes, 3 pools (IPv4 + IPv6 each), idle, %.0f s on the LAN:\n"
                "  ARP probes %.2f/s, DAD NS %.2f/s (all ARP %.2f/s, all NS+NA %.2f/s)",
                secs, c.arp_probes / secs, c.dad_ns / secs, c.arp / secs, c.nd / secs);
  Say(buf);
}

int Timing(const TimingFlags& tf) {
  const MeasureFlags& f = tf.measure;
  auto lab = StartMeasureLab(MeasureLabConfig(f));
  if (!lab) return cli::kExitFailure;
  auto rc = k8s::LoadKubeconfig(lab->Kubeconfig());
  if (!rc) {
    Say(rc.error().message());
    return cli::kExitFailure;
  }
  auto client = k8s::NewClient(*rc, std::string("pylon-lab/") + PYLON_VERSION);
  if (!client) {
    Say(client.error().message());
    return cli::kExitFailure;
  }
  if (tf.cost_seconds > 0) MeasureProbingCost(*lab, tf.cost_seconds);
  Say(tf.requested ? "addresses requested (purelb.io/addresses): full probe before announcing"
                   : "addresses chosen by the allocator, probed ahead");
  const nlohmann::json svc =
      TimingService(tf.requested ? kRequestedIps : std::vector<std::string>{});
  std::vector<std::vector<double>> create(2), del(2);
  for (int run = 0; run < f.runs && !Stopping(); ++run) {
    std::vector<std::string> ips = kRequestedIps;
    if (!tf.requested) {
      ips = NextAddresses(*lab);
      if (ips.empty()) {
        Say("  run " + std::to_string(run + 1) +
            ": the ServiceGroup shows no probeAhead addresses");
        break;
      }
      if (!WaitProbedFree(*lab, ips)) {
        Say("  run " + std::to_string(run + 1) + ": " + ips[0] + ", " + ips[1] +
            " not shown probed free on any lease within 10 s (timed anyway)");
      }
    }
    auto c = TimeAddresses(*lab, ips, true, [&] {
      if (auto r = (*client)->Create(k8s::resources::Services(), svc); !r) Say(r.error().message());
    });
    if (!tf.requested) {
      auto got = GetJson(*lab, {"get", "service", "-n", "default", "timing"});
      if (got && IngressIps(*got) != ips) {
        Say("  run " + std::to_string(run + 1) + ": the Service got " + got->dump() +
            ", not the predicted " + ips[0] + ", " + ips[1]);
      }
    }
    auto d = TimeAddresses(*lab, ips, false, [&] {
      if (auto s = (*client)->Delete(k8s::resources::Services(), "default", "timing"); !s) {
        Say(s.error().message());
      }
    });
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "  run %d: create -> reachable IPv4 %.0f ms, IPv6 %.0f ms; delete -> "
                  "withdrawn IPv4 %.0f ms, IPv6 %.0f ms",
                  run + 1, c[0], c[1], d[0], d[1]);
    Say(buf);
    for (int i = 0; i < 2; ++i) {
      create[i].push_back(c[i]);
      del[i].push_back(d[i]);
    }
    // The next run starts once the Service is gone from the API (and, probing ahead, once the
    // allocator published its next addresses: its status is written 1 s after a change).
    WaitDeleted(**client);
    if (!tf.requested) std::this_thread::sleep_for(Ms(1500));
  }
  Say("\nms over " + std::to_string(f.runs) + " runs       min   median      max");
  Say("create -> reachable IPv4 " + Stats(create[0], f.runs, kTimingWindowS));
  Say("create -> reachable IPv6 " + Stats(create[1], f.runs, kTimingWindowS));
  Say("delete -> withdrawn IPv4 " + Stats(del[0], f.runs, kTimingWindowS));
  Say("delete -> withdrawn IPv6 " + Stats(del[1], f.runs, kTimingWindowS));
  return FinishMeasureLab(*lab);
}

}  // namespace

Subcommand AddTiming(cli::App& lab) {
  auto f = std::make_shared<TimingFlags>();
  auto* sub = AddMeasureCommand(lab, "timing",
                                "Service create -> reachable, delete -> withdrawn, on the client",
                                /*runs=*/5, &f->measure);
  sub->add_flag("--requested", f->requested,
                "the Service requests its addresses (full duplicate-address probe) instead of "
                "taking the allocator's next ones, probed ahead");
  sub->add_option("--cost-seconds", f->cost_seconds,
                  "count ARP / ND packets on the LAN this long with three pools first (0 = skip)")
      ->check(CLI::Range(0, 600));
  return {sub, [f] { return Timing(*f); }};
}

}  // namespace pylon::lab
