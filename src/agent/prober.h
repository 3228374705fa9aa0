// Runs duplicate-address probes (packet::Announcer::Probe) off the agent loop: the loop starts a
// probe and picks its result up on a later pass (the prober wakes it), so a probe of one address
// (~240 ms by default) never delays the others or the loop.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "agent/conflicts.h"
#include "common/mutex.h"
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

// `workers` threads run the probes (several Services created at once are probed in parallel);
// `on_done` (may be empty) is called from a worker after each result is queued.
class ThreadProber final : public Prober {
 public:
  ThreadProber(packet::Announcer& announcer, std::function<void()> on_done, int workers = 4);
  ~ThreadProber() override;
  ThreadProber(const ThreadProber&) = delete;
  ThreadProber& operator=(const ThreadProber&) = delete;

  void Start(ProbeJob job) override;
  std::vector<ProbeResult> TakeResults() override;

 private:
  void Work();

  packet::Announcer& announcer_;
  std::function<void()> on_done_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<ProbeJob> jobs_ PYLON_GUARDED_BY(mu_);
  std::vector<ProbeResult> results_ PYLON_GUARDED_BY(mu_);
  bool stop_ PYLON_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
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
