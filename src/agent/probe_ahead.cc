#include "agent/probe_ahead.h"

#include <algorithm>

namespace pylon::agent {

void ProbeAhead::SetTargets(std::span<const ProbeTarget> targets, SteadyTime now) {
  std::set<net::IpAddress> wanted;
  for (const ProbeTarget& t : targets) {
    wanted.insert(t.address);
    auto [it, added] = states_.try_emplace(t.address);
    State& s = it->second;
    if (added) {
      s.target = t;
    } else if (s.target.interface != t.interface) {
      // Another segment: what was found on the old one says nothing here.
      s = State{};
      s.target = t;
    }
    s.target_now = true;
  }
  for (auto it = states_.begin(); it != states_.end();) {
    State& s = it->second;
    if (wanted.count(it->first)) {
      ++it;
      continue;
    }
    s.target_now = false;
    const bool hold = s.verdict == Verdict::kTaken && now < s.verdict_at + options_.taken_hold;
    // A free verdict stays usable until it ages out: the address usually leaves the targets
    // because a Service just got it, and its winner is about to ask Fresh().
    const bool fresh = s.verdict == Verdict::kFree && now < s.verdict_at + options_.fresh_for;
    if (hold || fresh || s.running) {
      ++it;
    } else {
      it = states_.erase(it);
    }
  }
}

SteadyTime ProbeAhead::DueAt(const State& s) const {
  switch (s.verdict) {
    case Verdict::kNone:
      return SteadyTime::min();
    case Verdict::kFree:
      return s.last_probe + options_.refresh;
    case Verdict::kTaken:
      return s.last_probe + options_.taken_recheck;
  }
  return SteadyTime::max();
}

void ProbeAhead::Refill(SteadyTime now) {
  if (tokens_ < 0) {
    tokens_ = options_.burst;
    refilled_ = now;
    return;
  }
  if (now <= refilled_) return;
  const double secs = std::chrono::duration<double>(now - refilled_).count();
  tokens_ = std::min<double>(options_.burst, tokens_ + secs * options_.rate);
  refilled_ = now;
}

std::vector<ProbeTarget> ProbeAhead::Due(SteadyTime now) {
  Refill(now);
  std::vector<std::pair<SteadyTime, State*>> due;
  for (auto& [ip, s] : states_) {
    if (s.running || !s.target_now) continue;
    const SteadyTime at = DueAt(s);
    if (at <= now) due.emplace_back(at, &s);
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ProbeTarget> out;
  for (auto& [at, s] : due) {
    if (tokens_ < 1) break;
    tokens_ -= 1;
    s->running = true;
    ++probes_started_;
    out.push_back(s->target);
  }
  return out;
}

void ProbeAhead::Record(const ProbeResult& r, SteadyTime now, WallTime wall) {
  auto it = states_.find(r.target.address);
  if (it == states_.end() || !it->second.running) return;
  State& s = it->second;
  s.running = false;
  s.last_probe = now;
  if (r.target.interface != s.target.interface) return;  // moved meanwhile: probe again
  if (r.error) {
    s.verdict = Verdict::kNone;
    s.last_probe = now;
    return;
  }
  const Verdict v = r.owner ? Verdict::kTaken : Verdict::kFree;
  const std::string mac = r.owner ? r.owner->ToString() : std::string();
  if (v != s.verdict || mac != s.mac) {
    s.since = wall;
    if (v == Verdict::kTaken) ++conflicts_found_;
  }
  s.verdict = v;
  s.mac = mac;
  s.verdict_at = now;
}

bool ProbeAhead::Fresh(const net::IpAddress& address, const std::string& interface,
                       SteadyTime now) const {
  auto it = states_.find(address);
  if (it == states_.end()) return false;
  const State& s = it->second;
  return s.verdict == Verdict::kFree && s.target.interface == interface &&
         now < s.verdict_at + options_.fresh_for;
}

std::set<net::IpAddress> ProbeAhead::FreshAddresses(SteadyTime now) const {
  std::set<net::IpAddress> out;
  for (const auto& [ip, s] : states_) {
    if (s.verdict == Verdict::kFree && now < s.verdict_at + options_.fresh_for) out.insert(ip);
  }
  return out;
}

std::vector<model::ProbedAddress> ProbeAhead::Published(SteadyTime now) const {
  std::vector<model::ProbedAddress> out;
  for (const auto& [ip, s] : states_) {
    if (s.verdict == Verdict::kFree && s.target_now && now < s.verdict_at + options_.fresh_for) {
      out.push_back({ip, false, "", s.since});
    } else if (s.verdict == Verdict::kTaken && now < s.verdict_at + options_.taken_hold) {
      out.push_back({ip, true, s.mac, s.since});
    }
  }
  return out;
}

std::vector<ProbeTarget> ProbeAhead::Taken() const {
  std::vector<ProbeTarget> out;
  for (const auto& [ip, s] : states_) {
    if (s.verdict == Verdict::kTaken) out.push_back(s.target);
  }
  return out;
}

std::optional<SteadyTime> ProbeAhead::NextWakeup(SteadyTime now) const {
  std::optional<SteadyTime> next;
  auto consider = [&](SteadyTime t) { next = Earliest(next, t); };
  bool waiting_for_token = false;
  for (const auto& [ip, s] : states_) {
    if (!s.running && s.target_now) {
      const SteadyTime at = DueAt(s);
      if (at <= now) {
        waiting_for_token = true;
      } else {
        consider(at);
      }
    }
    // Published entries age out (fresh_for, taken_hold): the annotation changes then.
    if (s.verdict == Verdict::kFree) consider(s.verdict_at + options_.fresh_for);
    if (s.verdict == Verdict::kTaken) consider(s.verdict_at + options_.taken_hold);
  }
  if (waiting_for_token && options_.rate > 0) {
    const double missing = std::max(0.0, 1.0 - std::max(tokens_, 0.0));
    consider(std::max(now, refilled_) +
             std::chrono::duration_cast<Duration>(
                 std::chrono::duration<double>(missing / options_.rate)));
  }
  if (next && *next < now) next = now;
  return next;
}

}  // namespace pylon::agent
