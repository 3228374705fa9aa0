#include "heartbeat/detector.h"

#include <algorithm>

namespace pylon::heartbeat {

namespace {

bool LiveIsh(PeerState s) { return Heard(s) || s == PeerState::kSilent; }

std::string Ms(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

bool Heard(PeerState s) {
  return s == PeerState::kAlive || s == PeerState::kUnhealthy || s == PeerState::kStarting;
}

const char* PeerStateName(PeerState s) {
  switch (s) {
    case PeerState::kNeverHeard:
      return "never_heard";
    case PeerState::kAlive:
      return "alive";
    case PeerState::kUnhealthy:
      return "unhealthy";
    case PeerState::kStarting:
      return "starting";
    case PeerState::kSilent:
      return "silent";
    case PeerState::kDead:
      return "dead";
  }
  return "unknown";
}

std::optional<election::LivenessOverride> OverrideFor(const PeerStatus& peer) {
  switch (peer.state) {
    case PeerState::kAlive:
      return election::LivenessOverride{election::Liveness::kAlive, *peer.last_heard + peer.bound};
    case PeerState::kUnhealthy:
    case PeerState::kDead:
      return election::LivenessOverride{election::Liveness::kDead, std::nullopt};
    case PeerState::kNeverHeard:
    case PeerState::kStarting:
    case PeerState::kSilent:
      return std::nullopt;
  }
  return std::nullopt;
}

Detector::Detector(DetectorOptions options) : options_(std::move(options)) {
  if (options_.miss_count < 1) options_.miss_count = 1;
  if (options_.interval <= Duration::zero()) options_.interval = std::chrono::milliseconds(100);
}

Duration Detector::IntervalOf(std::uint32_t advertised_ms) const {
  return std::max<Duration>(options_.interval, std::chrono::milliseconds(advertised_ms));
}

void Detector::SetState(PeerStatus& p, PeerState s, std::string reason) {
  if (LiveIsh(p.state)) --live_ish_;
  if (LiveIsh(s)) ++live_ish_;
  if (p.state != s) pending_.push_back(Transition{p.node, p.state, s, reason});
  p.state = s;
  p.reason = std::move(reason);
}

void Detector::SetPeers(std::span<const election::NodeName> peers) {
  std::set<election::NodeName> wanted;
  for (const auto& n : peers) {
    if (n != options_.self && !n.empty()) wanted.insert(n);
  }
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (wanted.count(it->first) != 0) {
      ++it;
      continue;
    }
    PeerStatus& p = it->second;
    Forget(p);
    if (LiveIsh(p.state)) --live_ish_;
    it = peers_.erase(it);
  }
  for (const auto& n : wanted) {
    if (peers_.count(n) == 0) {
      PeerStatus p;
      p.node = n;
      p.reason = "listed; no heartbeat yet: the lease decides";
      peers_.emplace(n, std::move(p));
    }
  }
}

bool Detector::OnHeartbeat(const Heartbeat& hb, SteadyTime now) {
  if (hb.node == options_.self) return false;
  auto it = peers_.find(hb.node);
  if (it == peers_.end()) return false;
  PeerStatus& p = it->second;
  Forget(p);
  if (p.last_heard && now < *p.last_heard) now = *p.last_heard;  // never backwards
  p.last_heard = now;
  p.interval = IntervalOf(hb.interval_ms);
  p.bound = p.interval * options_.miss_count;
  if (hb.boot_id != p.boot_id || p.windows.size() != hb.windows) {
    p.windows.assign(std::max<std::size_t>(hb.windows, 1), {});
  }
  p.boot_id = hb.boot_id;
  p.sequence = hb.sequence;
  p.flags = hb.flags;
  if (hb.windows <= 1) {
    p.windows[0] = hb.addresses;
    p.addresses = hb.addresses;
  } else {
    p.windows[std::min<std::size_t>(hb.window, p.windows.size() - 1)] = hb.addresses;
    p.addresses.clear();
    for (const auto& w : p.windows) p.addresses.insert(p.addresses.end(), w.begin(), w.end());
    std::sort(p.addresses.begin(), p.addresses.end());
    p.addresses.erase(std::unique(p.addresses.begin(), p.addresses.end()), p.addresses.end());
  }
  if (!latest_ || now > *latest_) latest_ = now;

  if (hb.leaving()) {
    SetState(p, PeerState::kDead, "leaving (graceful shutdown)");
    return true;
  }
  if (!hb.link_up()) {
    SetState(p, PeerState::kUnhealthy, "reports its announcing link down");
  } else if (hb.starting()) {
    SetState(p, PeerState::kStarting, "starting: has not judged itself yet, its lease decides");
  } else if (!hb.eligible()) {
    SetState(p, PeerState::kUnhealthy, "reports itself not eligible to announce");
  } else {
    SetState(p, PeerState::kAlive, "heard");
  }
  deadlines_.insert({now + p.bound, p.node});
  return true;
}

void Detector::Forget(PeerStatus& p) {
  if (p.last_heard && Heard(p.state)) {
    deadlines_.erase({*p.last_heard + p.bound, p.node});
  }
  if (p.grace) graces_.erase({*p.grace, p.node});
  p.grace.reset();
  silent_.erase(p.node);
}

bool Detector::Condemned(const PeerStatus& p) const {
  return HeardSince(p) || (self_link_up_ && LastStanding(p));
}

bool Detector::HeardSince(const PeerStatus& p) const {
  return latest_ && p.last_heard && *latest_ > *p.last_heard + p.interval * 3 / 2;
}

bool Detector::LastStanding(const PeerStatus& p) const {
  return live_ish_ - (LiveIsh(p.state) ? 1 : 0) == 0;
}

std::vector<Transition> Detector::Evaluate(SteadyTime now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    auto [deadline, node] = *deadlines_.begin();
    deadlines_.erase(deadlines_.begin());
    PeerStatus& p = peers_.at(node);
    const std::string quiet = "not heard for " + Ms(p.bound);
    if (HeardSince(p)) {
      SetState(p, PeerState::kDead, quiet + " while other peers are heard");
    } else if (self_link_up_ && LastStanding(p)) {
      SetState(p, PeerState::kDead, quiet + "; it was the last peer heard and the link is up");
    } else {
      SetState(p, PeerState::kSilent, quiet + ", nor any other peer since: the lease decides");
      silent_.insert(node);
    }
  }
  // Grace periods that ran out: dead if the evidence still holds, else silent again.
  while (!graces_.empty() && graces_.begin()->first <= now) {
    auto [grace, node] = *graces_.begin();
    graces_.erase(graces_.begin());
    PeerStatus& p = peers_.at(node);
    p.grace.reset();
    if (Condemned(p)) {
      silent_.erase(node);
      SetState(p, PeerState::kDead,
               "still not heard " + Ms(p.bound) + " after this node could hear again");
    }
  }
  // Silent peers for which (a) or (b) now holds get their grace period (one bound to speak).
  for (const auto& node : silent_) {
    PeerStatus& p = peers_.at(node);
    if (p.grace || !Condemned(p)) continue;
    p.grace = now + p.bound;
    graces_.insert({*p.grace, node});
  }
  return std::exchange(pending_, {});
}

std::optional<SteadyTime> Detector::NextDeadline() const {
  std::optional<SteadyTime> out;
  if (!deadlines_.empty()) out = deadlines_.begin()->first;
  if (!graces_.empty() && (!out || graces_.begin()->first < *out)) out = graces_.begin()->first;
  return out;
}

bool Detector::HearsAnyPeer(SteadyTime now) const {
  return !deadlines_.empty() && deadlines_.rbegin()->first > now;
}

bool Detector::AllPeersSettled(SteadyTime now) const {
  for (const auto& [name, p] : peers_) {
    switch (p.state) {
      case PeerState::kDead:
        break;
      case PeerState::kAlive:
      case PeerState::kUnhealthy:
      case PeerState::kStarting:
        if (now >= *p.last_heard + p.bound) return false;
        break;
      case PeerState::kNeverHeard:
      case PeerState::kSilent:
        return false;
    }
  }
  return true;
}

const PeerStatus* Detector::Find(const election::NodeName& node) const {
  auto it = peers_.find(node);
  return it == peers_.end() ? nullptr : &it->second;
}

std::size_t Detector::CountIn(PeerState s) const {
  return static_cast<std::size_t>(std::count_if(
      peers_.begin(), peers_.end(), [s](const auto& e) { return e.second.state == s; }));
}

}  // namespace pylon::heartbeat
