#include "agent/conflicts.h"

namespace pylon::agent {

ProbeGate::Decision ProbeGate::Decide(std::span<const ProbeTarget> candidates, SteadyTime now,
                                      const std::set<net::IpAddress>* preprobed) {
  Decision d;
  std::set<net::IpAddress> wanted;
  for (const ProbeTarget& c : candidates) {
    wanted.insert(c.address);
    auto it = states_.find(c.address);
    if (it == states_.end() && preprobed != nullptr && preprobed->count(c.address)) {
      states_[c.address] = State{Phase::kVerifying, c, {}, now, false, false};
      d.verify.push_back(c);
      continue;
    }
    if (it == states_.end()) {
      states_[c.address] = State{Phase::kProbing, c, {}, now, false, false};
      d.start.push_back(c);
      d.withhold.insert(c.address);
      continue;
    }
    State& s = it->second;
    switch (s.phase) {
      case Phase::kProbing:
        d.withhold.insert(c.address);
        break;
      case Phase::kVerifying:
        break;
      case Phase::kFree:
        if (s.target.interface != c.interface) {
          // Moved to another interface: that segment has not been probed.
          s = State{Phase::kProbing, c, {}, now, false, s.was_conflict};
          d.start.push_back(c);
          d.withhold.insert(c.address);
          break;
        }
        if (s.was_conflict) {
          d.cleared.push_back(c.address);
          s.was_conflict = false;
        }
        break;
      case Phase::kConflict:
        if (!s.reported) {
          d.reported.push_back(FoundConflict{c.address, s.target.interface, s.owner});
          s.reported = true;
        }
        d.withhold.insert(c.address);
        if (now >= s.since + options_.conflict_recheck) {
          State next{Phase::kProbing, c, s.owner, now, true, true};
          s = next;
          d.start.push_back(c);
        }
        break;
    }
  }
  for (auto it = states_.begin(); it != states_.end();) {
    if (wanted.count(it->first) || it->second.phase == Phase::kProbing ||
        it->second.phase == Phase::kVerifying) {
      ++it;
    } else {
      it = states_.erase(it);
    }
  }
  return d;
}

void ProbeGate::Record(const ProbeResult& r, SteadyTime now) {
  auto it = states_.find(r.target.address);
  if (it == states_.end() ||
      (it->second.phase != Phase::kProbing && it->second.phase != Phase::kVerifying)) {
    return;
  }
  State& s = it->second;
  if (r.owner && !r.error) {
    // The same owner again (a recheck) was reported already.
    const bool same = s.was_conflict && s.reported && s.owner == *r.owner;
    s.phase = Phase::kConflict;
    s.owner = *r.owner;
    s.since = now;
    s.reported = same;
    s.was_conflict = true;
    return;
  }
  s.phase = Phase::kFree;
  s.since = now;
  s.reported = false;
}

bool ProbeGate::Tracks(const net::IpAddress& address) const {
  auto it = states_.find(address);
  return it != states_.end() &&
         (it->second.phase == Phase::kVerifying || it->second.phase == Phase::kConflict);
}

std::vector<FoundConflict> ProbeGate::Conflicts() const {
  std::vector<FoundConflict> out;
  for (const auto& [ip, s] : states_) {
    if (s.phase == Phase::kConflict) out.push_back({ip, s.target.interface, s.owner});
  }
  return out;
}

std::optional<SteadyTime> ProbeGate::NextWakeup() const {
  std::optional<SteadyTime> next;
  for (const auto& [ip, s] : states_) {
    if (s.phase != Phase::kConflict) continue;
    const SteadyTime t = s.since + options_.conflict_recheck;
    next = Earliest(next, t);
  }
  return next;
}

ClaimTracker::Decision ClaimTracker::Observe(std::span<const SeenClaim> claims,
                                             const std::set<net::IpAddress>& held,
                                             const std::set<std::string>& known, SteadyTime now) {
  Decision d;
  for (const SeenClaim& c : claims) {
    if (!held.count(c.address) || known.count(c.mac.ToString())) continue;
    last_seen_[c.address] = now;
    auto key = std::make_pair(c.address, c.mac);
    auto r = last_report_.find(key);
    if (r == last_report_.end() || now >= r->second + options_.report_interval) {
      last_report_[key] = now;
      d.report.push_back(c);
    }
    auto f = last_defend_.find(c.address);
    if (f == last_defend_.end() || now >= f->second + options_.defend_interval) {
      last_defend_[c.address] = now;
      d.defend.push_back(c.address);
    }
  }
  // Forget what no longer matters (bounded memory).
  std::erase_if(last_report_, [&](const auto& kv) {
    return !held.count(kv.first.first) && now >= kv.second + options_.report_interval;
  });
  std::erase_if(last_defend_, [&](const auto& kv) { return !held.count(kv.first); });
  std::erase_if(last_seen_, [&](const auto& kv) {
    return !held.count(kv.first) || now >= kv.second + options_.active_for;
  });
  return d;
}

std::size_t ClaimTracker::ActiveCount(SteadyTime now) const {
  std::size_t n = 0;
  for (const auto& [ip, t] : last_seen_) n += now < t + options_.active_for ? 1 : 0;
  return n;
}

}  // namespace pylon::agent
