#include "agent/prober.h"

namespace pylon::agent {

ProbeResult RunProbe(packet::Announcer& announcer, const ProbeJob& job) {
  ProbeResult r;
  r.target = job.target;
  auto owner = announcer.Probe(job.iface, job.target.address, job.options);
  if (!owner) {
    r.error = owner.error().message();
  } else {
    r.owner = *owner;
  }
  return r;
}

ThreadProber::ThreadProber(packet::Announcer& announcer, std::function<void()> on_done, int workers)
    : announcer_(announcer), on_done_(std::move(on_done)) {
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { Work(); });
}

ThreadProber::~ThreadProber() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadProber::Start(ProbeJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::vector<ProbeResult> ThreadProber::TakeResults() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProbeResult> out;
  out.swap(results_);
  return out;
}

void ThreadProber::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    ProbeJob job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    ProbeResult r = RunProbe(announcer_, job);
    lock.lock();
    results_.push_back(std::move(r));
    if (on_done_) {
      lock.unlock();
      on_done_();
      lock.lock();
    }
  }
}

void InlineProber::Start(ProbeJob job) {
  started_.push_back(job);
  results_.push_back(RunProbe(announcer_, job));
}

std::vector<ProbeResult> InlineProber::TakeResults() {
  std::vector<ProbeResult> out;
  out.swap(results_);
  return out;
}

}  // namespace pylon::agent
