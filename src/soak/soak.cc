#include "soak/soak.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "common/log.h"
#include "lab/command.h"
#include "soak/runner.h"

namespace pylon::soak {
namespace {

using lab::Say;

}  // namespace

void Soak::Log(const std::string& line) {
  const std::string l = "step " + std::to_string(step_) + ": " + line;
  for (unsigned char ch : l) {
    digest_ ^= ch;
    digest_ *= 1099511628211ull;
  }
  ++decision_count_;
  decisions_ << l << "\n";
  decisions_.flush();
}

void Soak::Violate(const std::string& what) {
  violations_.push_back({Elapsed(), what});
  Say("  VIOLATION t=" + std::to_string(static_cast<int>(Elapsed())) + "s seed " +
      std::to_string(o_.seed) + ": " + what);
}

void Soak::PrintTable(double setup_s) {
  std::printf(
      "\n== pylon-dev soak: seed %llu, %.0f s of phases (%d quiet phases, each but the first after "
      "a fault phase), lab set-up "
      "%.0f s ==\n",
      static_cast<unsigned long long>(o_.seed), Elapsed(), phases_, setup_s);
  std::printf("decisions: %d, digest %016llx (the same seed gives the same digest)\n",
              decision_count_, static_cast<unsigned long long>(digest_));
  std::printf("\n| fault / action | count |\n| --- | ---: |\n");
  for (const auto& [k, v] : faults_) std::printf("| %s | %d |\n", k.c_str(), v);
  for (const auto& [k, v] : restarts_) std::printf("| %s | %d |\n", k.c_str(), v);
  std::printf("\n| invariant check | made |\n| --- | ---: |\n");
  for (const auto& [k, v] : checks_) std::printf("| %s | %ld |\n", k.c_str(), v);
  double worst = 0;
  for (double c : convergence_s_) worst = std::max(worst, c);
  std::printf("\nquiet phases converged: %d of %d (slowest %.1f s, bound %lld s)\n",
              converged_phases_, phases_, worst, static_cast<long long>(o_.bound.count()));
  std::printf("\n| violation (t s) | seed | what |\n| ---: | ---: | --- |\n");
  for (const auto& v : violations_) {
    std::printf("| %.0f | %llu | %s |\n", v.t_s, static_cast<unsigned long long>(o_.seed),
                v.what.c_str());
  }
  if (violations_.empty())
    std::printf("| - | %llu | none |\n", static_cast<unsigned long long>(o_.seed));
  std::fflush(stdout);
}

ServiceState Soak::DrawService() {
  ServiceState s;
  s.exists = true;
  s.config = static_cast<int>(Draw(kConfigCount));
  s.v6_primary = Draw(4) == 0;
  s.policy = static_cast<int>(Draw(3));
  s.requested = Draw(4) == 0;
  s.share = static_cast<int>(Draw(3));
  s.local_etp = Draw(3) == 0;
  return s;
}

void Soak::CreateServices() {
  for (int i = 0; i < kServices; ++i) {
    const bool create = Draw(4) != 0;
    if (!create) continue;
    services_[i] = DrawService();
    ApplyService(i, "create", true);
  }
}

void Soak::FaultPhase() {
  Say("soak: t=" + std::to_string(static_cast<int>(Elapsed())) + "s fault phase");
  Log("fault phase");
  // A fixed number of steps per phase, whatever they take: phases hold the same decisions
  // on every run of a seed.
  const long steps = std::max<long>(
      1, static_cast<long>(std::chrono::duration_cast<Ms>(o_.fault_phase) / o_.step));
  auto next = SteadyClock::now();
  for (long k = 0; k < steps && !lab::Stopping(); ++k) {
    RunDue(false);
    Supervise();
    Decide();
    if (step_ % 2 == 0) ContinuousCheck();
    ++step_;
    next = std::max(next + o_.step, SteadyClock::now());
    std::this_thread::sleep_until(next);
  }
  // The faults stop.
  Log("quiet phase");
  RunDue(true);
  (void)proxy_->faults().Set({});
  for (int c = 0; c < kConfigCount; ++c) {
    if (!configs_[c].exists || !configs_[c].valid) ApplyConfig(c, true);
  }
}

Soak::QuietOutcome Soak::QuietPhase() {
  const auto q0 = SteadyClock::now();
  QuietOutcome r;
  std::vector<std::string>& last = r.left;
  while (SteadyClock::now() - q0 < o_.bound && !lab::Stopping()) {
    Supervise();
    ContinuousCheck();
    std::vector<std::string> now = SettledCheck();
    if (now != last) {
      const double at = std::chrono::duration<double>(SteadyClock::now() - q0).count();
      char head[64];
      std::snprintf(head, sizeof head, "t=%.0fs quiet +%.1f s: ", Elapsed(), at);
      quiet_log_ << head << (now.empty() ? std::string("settled") : now.front());
      if (now.size() > 1) quiet_log_ << " (and " << now.size() - 1 << " more)";
      quiet_log_ << "\n";
      quiet_log_.flush();
    }
    last = std::move(now);
    if (last.empty()) {
      r.converged = true;
      break;
    }
    std::this_thread::sleep_for(Ms(1000));
  }
  r.took_s = std::chrono::duration<double>(SteadyClock::now() - q0).count();
  return r;
}

int Soak::Run() {
  const auto setup_start = SteadyClock::now();
  Say("soak: seed " + std::to_string(o_.seed) + ", lab " + o_.name + ", setting up");
  if (auto s = SetUp(); !s) {
    std::fprintf(stderr, "pylon-dev soak: lab set-up failed: %s\n", s.error().message().c_str());
    return cli::kExitFailure;
  }
  CreateServices();
  const double setup_s = std::chrono::duration<double>(SteadyClock::now() - setup_start).count();
  t0_ = SteadyClock::now();
  const auto end = t0_ + o_.duration;
  // First a quiet phase: the initial state must converge too.
  bool quiet = true;
  while (!lab::Stopping()) {
    if (!quiet) {
      if (SteadyClock::now() + o_.fault_phase / 2 > end) break;
      FaultPhase();
    }
    quiet = false;
    ++phases_;
    const QuietOutcome q = QuietPhase();
    if (q.converged) {
      ++converged_phases_;
      convergence_s_.push_back(q.took_s);
      book_.ClearAsks();
      char line[96];
      std::snprintf(line, sizeof line, "soak: t=%.0fs converged in %.1f s", Elapsed(), q.took_s);
      Say(line);
    } else if (!lab::Stopping()) {
      for (const auto& f : q.left) {
        Violate("not settled " + std::to_string(o_.bound.count()) + " s after the faults: " + f);
      }
      book_.ClearAsks();
    }
    if (!o_.keep_going && !violations_.empty()) break;
    if (SteadyClock::now() + o_.fault_phase / 2 > end) break;
  }
  PrintTable(setup_s);
  if (!violations_.empty()) {
    std::printf("\nlogs (kept after the lab is torn down): %s\n", lab_->config().dir.c_str());
  }
  return violations_.empty() ? cli::kExitOk : cli::kExitFailure;
}

int RunSoak(const SoakOptions& options) {
  Soak soak(options);
  return soak.Run();
}

int SoakCommand(int argc, char** argv) {
  SoakOptions o;
  Duration duration = o.duration, fault = o.fault_phase, bound = o.bound, grace = o.grace,
           step = o.step;
  auto app = cli::NewCommand(
      "pylon-dev soak",
      "Random faults on a lab (kube-proxy, pods) for --duration from --seed, invariants checked\n"
      "against the API and the wire; one table per run; exit 1 on any violation\n"
      "(docs/reliability.md). Needs root.");
  app->add_option("--seed", o.seed, "seed of the decisions (the same seed, the same decisions)");
  cli::AddDuration(*app, "--duration", &duration, "fault and quiet phases, set-up excluded");
  cli::AddDuration(*app, "--fault-phase", &fault, "length of one fault phase");
  cli::AddDuration(*app, "--bound", &bound, "convergence allowed once the faults stop");
  cli::AddDuration(*app, "--grace", &grace, "an unshared duplicate tolerated this long in faults");
  cli::AddDuration(*app, "--step", &step, "one decision per step");
  app->add_option("--name", o.name, "the lab's name: 1-12 characters of [a-z0-9]");
  app->add_option("--nodes", o.nodes, "nodes in the lab")->check(CLI::Range(2, 6));
  app->add_option("--pylon,--binary", o.pylon, "the pylon binary (default: beside this one)")
      ->type_name("PATH");
  app->add_option("--k8s-bin-dir", o.k8s_bin_dir, "Kubernetes binaries (default: the build's)")
      ->type_name("DIR");
  bool stop_first = false;
  app->add_flag("--stop-at-first", stop_first, "stop at the first violation");
  if (auto code = cli::Parse(*app, argc, argv)) return *code;
  if (auto s = lab::ValidateLabName(o.name); !s) return cli::UsageError(*app, s.error().message());
  if (geteuid() != 0) return cli::UsageError(*app, "needs root (network namespaces)");
  using std::chrono::duration_cast;
  o.duration = duration_cast<std::chrono::seconds>(duration);
  o.fault_phase = duration_cast<std::chrono::seconds>(fault);
  o.bound = duration_cast<std::chrono::seconds>(bound);
  o.grace = duration_cast<std::chrono::seconds>(grace);
  o.step = duration_cast<Ms>(step);
  o.keep_going = !stop_first;
  log::SetComponent("soak");
  lab::InstallStopSignals();
  return RunSoak(o);
}

const cli::Command kSoakCommand = {
    "soak", "random faults on a lab for hours, invariants checked on the wire (root)", SoakCommand};

}  // namespace pylon::soak
