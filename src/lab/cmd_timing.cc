// `pylon-dev lab timing`: Service creation → the address answers on the client, and delete → it
// stops answering, measured from just before the API call (k8s client: POST / DELETE) to the first
// successful (resp. first failing) HTTP probe from the client; probes every 5 ms, 20 ms timeout.
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
#include "lab/measure.h"
#include "lab/netns.h"
#include "lab/responder.h"

namespace pylon::lab {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// The addresses the Service asks for (purelb.io/addresses), IPv4 then IPv6: the last of each pool
// of the ServiceGroup localdual.
const std::vector<std::string> kTimingIps = {"192.0.2.229", "2001:db8:1:0:8000::7"};
constexpr double kTimingWindowS = 10;

nlohmann::json TimingService() {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", "timing"},
            {"namespace", "default"},
            {"annotations",
             {{"purelb.io/service-group", "localdual"},
              {"purelb.io/addresses", kTimingIps[0] + "," + kTimingIps[1]}}}}},
          {"spec",
           {{"type", "LoadBalancer"},
            {"ipFamilyPolicy", "RequireDualStack"},
            {"ipFamilies", {"IPv4", "IPv6"}},
            {"selector", {{"app", "timing"}}},
            {"ports", {{{"port", 80}, {"protocol", "TCP"}, {"targetPort", 8080}}}}}}};
}

// Runs `action` while probing every address of kTimingIps from the client until each answers
// (`want_ok`) or fails to (!want_ok); returns the ms from just before `action` to that probe, per
// address (-1 when not within kTimingWindowS).
std::vector<double> TimeAddresses(const Lab& lab, bool want_ok,
                                  const std::function<void()>& action) {
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

int Timing(const MeasureFlags& f) {
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
  const nlohmann::json svc = TimingService();
  std::vector<std::vector<double>> create(2), del(2);
  for (int run = 0; run < f.runs && !Stopping(); ++run) {
    auto c = TimeAddresses(*lab, true, [&] {
      if (auto r = (*client)->Create(k8s::resources::Services(), svc); !r) Say(r.error().message());
    });
    auto d = TimeAddresses(*lab, false, [&] {
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
    // The next run starts once the Service is gone from the API.
    WaitDeleted(**client);
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
  auto f = std::make_shared<MeasureFlags>();
  f->build.name = "timing";
  f->runs = 5;
  auto* sub = lab.add_subcommand("timing",
                                 "Service create -> reachable, delete -> withdrawn, on the client");
  AddMeasureFlags(*sub, f.get());
  return {sub, [f] { return Timing(*f); }};
}

}  // namespace pylon::lab
