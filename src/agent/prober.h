// Duplicate-address probes (packet::Announcer::Probe) as the agent loop sees them: it starts a
// probe and picks its result up on a later pass. The step (RunProbe) and InlineProber (tests) are
// here; ThreadProber, which runs them off the loop, is in worker_threads.h.
#pragma once

#include <vector>

#include "agent/conflicts.h"
#include "packet/announcer.h"

namespace pylon::agent {

struct ProbeJob {
  ProbeTarget target;
  packet::Interface iface;
  packet::ProbeOptions options;
};

class Prober {
 public:
  virtual ~Prober() = default;
  // Never waits for the probe. Thread: the agent loop.
  virtual void Start(ProbeJob job) = 0;
  // The probes finished since the last call. Thread: the agent loop.
  virtual std::vector<ProbeResult> TakeResults() = 0;
};

// Runs each probe inside Start (for tests with packet::FakeAnnouncer, which answers at once).
class InlineProber final : public Prober {
 public:
  explicit InlineProber(packet::Announcer& announcer) : announcer_(announcer) {}
  void Start(ProbeJob job) override;
  std::vector<ProbeResult> TakeResults() override;
  const std::vector<ProbeJob>& started() const { return started_; }

 private:
  packet::Announcer& announcer_;
  std::vector<ProbeResult> results_;
  std::vector<ProbeJob> started_;
};

// One job's result (shared by both probers).
ProbeResult RunProbe(packet::Announcer& announcer, const ProbeJob& job);

}  // namespace pylon::agent
