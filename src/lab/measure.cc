#include "lab/measure.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "common/duration.h"
#include "lab/netns.h"
#include "lab/responder.h"
#include "lab/service_state.h"

namespace pylon::lab {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

cli::App* AddMeasureCommand(cli::App& lab, const std::string& name, const std::string& description,
                            int runs, MeasureFlags* flags) {
  flags->build.name = name;
  flags->runs = runs;
  auto* sub = lab.add_subcommand(name, description);
  AddBuildFlags(*sub, &flags->build);
  sub->add_option("--runs", flags->runs, "runs per case")->check(CLI::Range(1, 100));
  return sub;
}

LabConfig MeasureLabConfig(const MeasureFlags& flags) {
  LabConfig cfg = ConfigFrom(flags.build, flags.kube_proxy);
  if (flags.address_lifetime > Duration::zero()) {
    cfg.agent_args.insert(cfg.agent_args.end(),
                          {"--address-lifetime", DurationText(flags.address_lifetime)});
  }
  if (cfg.kube_proxy) cfg.agent_args.push_back("--etp-local=elect");
  return cfg;
}

Duration AddressLifetime(const MeasureFlags& flags, const LabConfig& cfg) {
  if (flags.address_lifetime > Duration::zero()) return flags.address_lifetime;
  return ParseGoDuration(cfg.lease_duration).value_or(Duration::zero());
}

std::string DurationText(Duration d) {
  const auto ms = std::chrono::duration_cast<Ms>(d).count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

std::unique_ptr<Lab> StartMeasureLab(const LabConfig& cfg) {
  auto lab = std::make_unique<Lab>(cfg);
  Status s = lab->Up();
  if (s) s = lab->Apply(kDemoGroup);
  if (!s) {
    Say("lab up failed: " + s.error().message());
    return nullptr;
  }
  return lab;
}

int FinishMeasureLab(Lab& lab) {
  if (auto down = lab.Down(); !down) Say(down.error().message());
  return cli::kExitOk;
}

double SinceMs(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

Outage MeasureFailover(const Lab& lab, const std::string& ip, const std::function<void()>& fault,
                       Ms window) {
  std::vector<ProbeSample> samples;
  std::atomic<double> fault_ms{-1};
  std::atomic<bool> done{false};
  const auto t0 = SteadyClock::now();
  std::thread prober([&] {
    (void)InNetns(lab.topology().ClientNetns(), [&]() -> int {
      auto next = SteadyClock::now();
      double last_fail = -1;
      while (!Stopping()) {
        double t = SinceMs(t0);
        auto r = ProbeOnce(ip, 80, Ms(30));
        samples.push_back({t, r.ok, AnsweringNode(r.body)});
        const double f = fault_ms.load();
        if (!r.ok) last_fail = t;
        if (f >= 0) {
          if (t > f + static_cast<double>(window.count())) break;
          const bool failed_since_fault = last_fail >= f;
          if (r.ok && failed_since_fault && t - last_fail >= 300) break;
          if (r.ok && !failed_since_fault && t - f >= 1500 && !samples.empty() &&
              AnsweringNode(r.body) != samples.front().node) {
            break;
          }
        }
        next += Ms(10);
        std::this_thread::sleep_until(next);
        if (SteadyClock::now() > next) next = SteadyClock::now();
      }
      done = true;
      return 0;
    });
    done = true;
  });
  while (!done && SinceMs(t0) < 500) std::this_thread::sleep_for(Ms(5));
  if (!done) {
    fault_ms = SinceMs(t0);
    fault();
  }
  prober.join();
  Outage o;
  const double f = fault_ms.load();
  for (const auto& s : samples) {
    if (s.ok && s.t_ms < f) o.from = s.node;
    if (s.ok) o.to = s.node;
  }
  for (const auto& s : samples) {
    if (s.ok && s.t_ms >= f && s.node != o.from) {
      o.handover_ms = s.t_ms - f;
      break;
    }
  }
  if (samples.empty() || !samples.back().ok) return o;
  o.ms = LongestOutageMs(samples);
  return o;
}

std::string Stats(std::vector<double> v, int runs, double window_s, const std::string& missing) {
  std::vector<double> ok;
  for (double x : v) {
    if (x >= 0) ok.push_back(x);
  }
  std::string out;
  char buf[160];
  if (!ok.empty()) {
    std::sort(ok.begin(), ok.end());
    double median =
        ok.size() % 2 ? ok[ok.size() / 2] : (ok[ok.size() / 2 - 1] + ok[ok.size() / 2]) / 2;
    std::snprintf(buf, sizeof buf, "%8.0f %8.0f %8.0f", ok.front(), median, ok.back());
    out = buf;
  } else {
    out = "       -        -        -";
  }
  if (ok.size() < v.size()) {
    std::snprintf(buf, sizeof buf, "   %zu of %d runs: %s within %.0f s", v.size() - ok.size(),
                  runs, missing.c_str(), window_s);
    out += buf;
  }
  if (static_cast<int>(v.size()) < runs) {
    std::snprintf(buf, sizeof buf, "   (%zu of %d runs done)", v.size(), runs);
    out += buf;
  }
  return out;
}

}  // namespace pylon::lab
