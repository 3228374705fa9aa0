#include "agent/claim_monitor.h"

#include <optional>

#include "common/log.h"
#include "packet/claim_listener.h"

namespace pylon::agent {

namespace {
constexpr std::size_t kMaxQueued = 1024;
constexpr Duration kPollSlice = std::chrono::milliseconds(100);
constexpr Duration kRetryOpen = std::chrono::seconds(5);
}  // namespace

ClaimMonitor::ClaimMonitor(const Clock& clock, std::function<void()> on_claim)
    : clock_(clock), on_claim_(std::move(on_claim)) {}

ClaimMonitor::~ClaimMonitor() { Stop(); }

void ClaimMonitor::Start() {
  worker_.Start([this] { Run(); });
}

void ClaimMonitor::Stop() { worker_.Stop(); }

void ClaimMonitor::SetWatched(std::map<int, std::set<net::IpAddress>> by_ifindex) {
  MutexLock lock(mu_);
  watched_ = std::move(by_ifindex);
}

std::vector<SeenClaim> ClaimMonitor::TakeClaims() {
  MutexLock lock(mu_);
  std::vector<SeenClaim> out;
  out.swap(claims_);
  return out;
}

void ClaimMonitor::Run() {
  std::map<int, packet::ClaimListener> listeners;
  std::map<int, SteadyTime> failed;  // ifindex -> when opening last failed
  while (!worker_.Stopping()) {
    std::map<int, std::set<net::IpAddress>> watched;
    {
      MutexLock lock(mu_);
      watched = watched_;
    }
    const SteadyTime now = clock_.Now();
    std::erase_if(listeners, [&](const auto& kv) { return !watched.count(kv.first); });
    for (const auto& [ifindex, ips] : watched) {
      if (listeners.count(ifindex) || ips.empty()) continue;
      auto f = failed.find(ifindex);
      if (f != failed.end() && now < f->second + kRetryOpen) continue;
      auto l = packet::ClaimListener::Open(ifindex);
      if (!l) {
        if (f == failed.end()) {
          log::Warn("cannot watch for address conflicts",
                    {{"ifindex", std::to_string(ifindex)}, {"error", l.error().message()}});
        }
        failed[ifindex] = now;
        continue;
      }
      failed.erase(ifindex);
      listeners.emplace(ifindex, std::move(*l));
    }
    if (listeners.empty()) {
      worker_.SleepFor(kPollSlice);  // real time; ends early on Stop
      continue;
    }
    const Duration slice = kPollSlice / static_cast<int>(listeners.size());
    bool queued = false;
    std::vector<int> broken;
    for (auto& [ifindex, listener] : listeners) {
      auto claims = listener.Poll(clock_, clock_.Now() + slice);
      if (!claims) {
        log::Warn("address conflict watch",
                  {{"ifindex", std::to_string(ifindex)}, {"error", claims.error().message()}});
        broken.push_back(ifindex);
        continue;
      }
      const auto& ips = watched[ifindex];
      MutexLock lock(mu_);
      for (const auto& c : *claims) {
        if (!ips.count(c.address) || claims_.size() >= kMaxQueued) continue;
        claims_.push_back(SeenClaim{c.address, c.mac, ifindex});
        queued = true;
      }
    }
    for (int ifindex : broken) {
      listeners.erase(ifindex);
      failed[ifindex] = clock_.Now();
    }
    if (queued && on_claim_) on_claim_();
  }
}

}  // namespace pylon::agent
