// The Prober and the WireChecker the running agent hands its Reconciler: each a JobPool
// (common/job_pool.h) whose workers run the pure step (RunProbe, RunWireCheck) off the agent loop
// and wake the loop after each result (`on_done`). The loop starts a job and picks its result up
// on a later pass, so a probe of one address (~240 ms by default) or a wire check never delays
// the others or the loop. Part of pylon_agent_io (threads); tests hand the Reconciler
// InlineProber or a fake checker instead.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "agent/prober.h"
#include "agent/wire_check.h"
#include "common/job_pool.h"

namespace pylon::agent {

class ThreadProber final : public Prober {
 public:
  // `workers` threads run the probes (several Services created at once are probed in parallel).
  ThreadProber(packet::Announcer& announcer, std::function<void()> on_done, int workers = 4)
      : pool_([&announcer](const ProbeJob& job) { return RunProbe(announcer, job); },
              std::move(on_done), workers) {}
  void Start(ProbeJob job) override { pool_.Submit(std::move(job)); }
  std::vector<ProbeResult> TakeResults() override { return pool_.Take(); }

 private:
  JobPool<ProbeJob, ProbeResult> pool_;
};

class ThreadWireChecker final : public WireChecker {
 public:
  ThreadWireChecker(packet::Announcer& announcer, HttpStatusFn http, std::function<void()> on_done,
                    WireCheckOptions options = {}, int workers = kWireCheckWorkers)
      : pool_(
            [&announcer, http = std::move(http), options](const Job& j) {
              return RunWireCheck(announcer, http, j.first, j.second, options);
            },
            std::move(on_done), workers) {}
  void Start(WireCheckJob job, net::MacAddress own_mac) override {
    pool_.Submit({std::move(job), own_mac});
  }
  std::vector<WireCheckResult> TakeResults() override { return pool_.Take(); }

 private:
  using Job = std::pair<WireCheckJob, net::MacAddress>;
  JobPool<Job, WireCheckResult> pool_;
};

}  // namespace pylon::agent
