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
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadProber::Start(ProbeJob job) {
  {
    MutexLock lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::vector<ProbeResult> ThreadProber::TakeResults() {
  MutexLock lock(mu_);
  std::vector<ProbeResult> out;
  out.swap(results_);
  return out;
}

void ThreadProber::Work() {
  MutexLock lock(mu_);
  while (true) {
    while (!stop_ && jobs_.empty()) lock.Wait(cv_);
    if (stop_) return;
    ProbeJob job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.Unlock();
    ProbeResult r = RunProbe(announcer_, job);
    lock.Lock();
    results_.push_back(std::move(r));
    if (on_done_) {
      lock.Unlock();
      on_done_();
      lock.Lock();
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
