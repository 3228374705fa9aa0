#include "agent/garp.h"

namespace pylon::agent {

void GarpScheduler::Schedule(const std::string& interface, int ifindex,
                             const net::IpAddress& address, SteadyTime now) {
  if (options_.count <= 0) return;
  bursts_[address] =
      Burst{Due{interface, ifindex, address}, options_.count, now + options_.initial_delay};
}

void GarpScheduler::Cancel(const net::IpAddress& address) { bursts_.erase(address); }

std::vector<GarpScheduler::Due> GarpScheduler::TakeDue(SteadyTime now) {
  std::vector<Due> out;
  for (auto it = bursts_.begin(); it != bursts_.end();) {
    Burst& b = it->second;
    if (b.next > now) {
      ++it;
      continue;
    }
    out.push_back(b.what);
    if (--b.remaining <= 0) {
      it = bursts_.erase(it);
    } else {
      b.next = now + options_.interval;
      ++it;
    }
  }
  return out;
}

std::optional<SteadyTime> GarpScheduler::NextDue() const {
  std::optional<SteadyTime> next;
  for (const auto& [a, b] : bursts_) next = Earliest(next, b.next);
  return next;
}

}  // namespace pylon::agent
