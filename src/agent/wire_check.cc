#include "agent/wire_check.h"

#include <algorithm>

namespace pylon::agent {

WireCheckResult RunWireCheck(packet::Announcer& announcer, const HttpStatusFn& http,
                             const WireCheckJob& job, net::MacAddress own_mac,
                             const WireCheckOptions& options) {
  WireCheckResult r;
  r.address = job.address;
  r.holder = job.holder;
  auto owner =
      announcer.ProbeOwner(packet::Interface{job.ifindex, own_mac}, job.address, options.arp_wait);
  if (!owner) {
    r.detail = "probe failed: " + owner.error().message();
    return r;
  }
  if (!*owner) {
    r.detail = "no answer";
    return r;
  }
  r.answered_by = **owner;
  r.holder_answers =
      std::find(job.holder_macs.begin(), job.holder_macs.end(), **owner) != job.holder_macs.end();
  if (!r.holder_answers) {
    r.detail = "answered by " + (*owner)->ToString() + ", not the holder";
    return r;
  }
  if (job.kube_proxy_url.empty() || !http) {
    r.detail = "the holder answers";
    return r;
  }
  auto status = http(job.kube_proxy_url, options.http_timeout);
  if (!status) {
    r.detail = "the holder answers; kube-proxy: " + status.error().message();
  } else {
    r.kube_proxy_ok = *status == 200;
    r.detail = "the holder answers; kube-proxy: HTTP " + std::to_string(*status);
  }
  return r;
}

ThreadWireChecker::ThreadWireChecker(packet::Announcer& announcer, HttpStatusFn http,
                                     std::function<void()> on_done, WireCheckOptions options,
                                     int workers)
    : announcer_(announcer),
      http_(std::move(http)),
      on_done_(std::move(on_done)),
      options_(options) {
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { Work(); });
}

ThreadWireChecker::~ThreadWireChecker() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadWireChecker::Start(WireCheckJob job, net::MacAddress own_mac) {
  {
    MutexLock lock(mu_);
    jobs_.emplace_back(std::move(job), own_mac);
  }
  cv_.notify_one();
}

std::vector<WireCheckResult> ThreadWireChecker::TakeResults() {
  MutexLock lock(mu_);
  std::vector<WireCheckResult> out;
  out.swap(results_);
  return out;
}

void ThreadWireChecker::Work() {
  MutexLock lock(mu_);
  while (true) {
    while (!stop_ && jobs_.empty()) lock.Wait(cv_);
    if (stop_) return;
    auto [job, mac] = std::move(jobs_.front());
    jobs_.pop_front();
    lock.Unlock();
    WireCheckResult r = RunWireCheck(announcer_, http_, job, mac, options_);
    lock.Lock();
    results_.push_back(std::move(r));
    if (on_done_) {
      lock.Unlock();
      on_done_();
      lock.Lock();
    }
  }
}

}  // namespace pylon::agent
