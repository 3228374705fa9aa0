#include "agent/takeover.h"

#include <algorithm>

namespace pylon::agent {

std::string_view MoveReasonName(MoveReason r) {
  switch (r) {
    case MoveReason::kCrash:
      return "crash";
    case MoveReason::kRestartAdopted:
      return "restart-adopted";
    case MoveReason::kPlanned:
      return "planned";
    case MoveReason::kKubeProxy:
      return "kube-proxy";
    case MoveReason::kElection:
      return "election";
  }
  return "crash";
}

MoveReason ClassifyMove(const HolderSigns* holder) {
  if (holder == nullptr || !holder->member || holder->leaving || holder->excluded) {
    return MoveReason::kPlanned;
  }
  if (holder->released) return MoveReason::kKubeProxy;
  if (holder->live) return MoveReason::kElection;
  return MoveReason::kCrash;
}

TakeoverGate::Decision TakeoverGate::Decide(const std::vector<TakeoverCandidate>& candidates,
                                            const std::map<NodeName, HolderSigns>& holders,
                                            SteadyTime now) {
  Decision d;
  std::set<net::IpAddress> seen;
  for (const TakeoverCandidate& c : candidates) {
    seen.insert(c.address);
    auto h = holders.find(c.holder);
    const HolderSigns* signs = h == holders.end() ? nullptr : &h->second;
    const MoveReason reason = ClassifyMove(signs);
    // Only a holder that fell silent may still carry the address; without its MAC the answer
    // cannot be told apart, and without its kube-proxy (unless it said it restarts) nobody can
    // vouch that its node still serves.
    const bool silent = reason == MoveReason::kCrash || reason == MoveReason::kKubeProxy;
    if (!silent || signs->macs.empty() || (!signs->restarting && signs->kube_proxy_url.empty())) {
      d.allowed[c.address] = reason;
      states_.erase(c.address);
      continue;
    }
    State& s = states_[c.address];
    if (s.holder != c.holder || s.first_seen == SteadyTime{}) {
      s = State{};
      s.holder = c.holder;
      s.first_seen = now;
    }
    const SteadyTime base = signs->last_alive.value_or(s.first_seen);
    const SteadyTime deadline = base + options_.lifetime + options_.margin;
    if (now >= deadline) {
      d.allowed[c.address] = reason;
      states_.erase(c.address);
      continue;
    }
    d.withhold.insert(c.address);
    if (s.in_flight) continue;
    auto start = [&] {
      d.start.push_back(WireCheckJob{c.address, c.interface, c.ifindex, c.holder, signs->macs,
                                     signs->restarting ? std::string() : signs->kube_proxy_url});
      s.in_flight = true;
    };
    if (!s.result) {
      start();
      continue;
    }
    const bool defer = s.result->holder_answers && (signs->restarting || s.result->kube_proxy_ok);
    if (!defer && s.deferred_reported && s.misses == 0) {
      // It answered before: one check without an answer (a lost packet, a busy node) must not
      // make two nodes answer. Confirmed by a second check at once.
      ++s.misses;
      start();
      continue;
    }
    if (!defer) {
      d.withhold.erase(c.address);
      d.allowed[c.address] = reason;
      states_.erase(c.address);
      continue;
    }
    s.deadline = deadline;
    s.misses = 0;
    if (!s.deferred_reported) {
      s.deferred_reported = true;
      std::string why = "node " + c.holder.str() + " still answers for " + c.address.ToString();
      why += signs->restarting ? " and its agent is restarting"
                               : " and its kube-proxy passes its health check";
      d.deferred.push_back(Deferral{c.address, c.holder, deadline, why});
    }
    if (now >= s.result_at + options_.recheck) start();
  }
  std::erase_if(states_, [&](const auto& kv) { return !seen.count(kv.first); });
  return d;
}

void TakeoverGate::Record(const WireCheckResult& result, SteadyTime now) {
  auto it = states_.find(result.address);
  if (it == states_.end() || !it->second.in_flight || it->second.holder != result.holder) return;
  it->second.in_flight = false;
  it->second.result = result;
  it->second.result_at = now;
}

std::optional<SteadyTime> TakeoverGate::NextWakeup() const {
  std::optional<SteadyTime> next;
  for (const auto& [ip, s] : states_) {
    if (s.in_flight || !s.result || !s.deadline) continue;
    const SteadyTime t = std::min(s.result_at + options_.recheck, *s.deadline);
    next = Earliest(next, t);
  }
  return next;
}

}  // namespace pylon::agent
