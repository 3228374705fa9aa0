#include "heartbeat/gossip.h"

#include <algorithm>

namespace pylon::heartbeat {

bool Gossip::Accept(const Report& report) {
  Key key{report.reporter, report.reporter_boot, report.id};
  if (!seen_.insert(key).second) return false;
  seen_order_.push_back(std::move(key));
  if (seen_order_.size() > kRememberedReports) {
    seen_.erase(seen_order_.front());
    seen_order_.pop_front();
  }

  Subject& s = subjects_[report.subject];
  if (s.boot != report.subject_boot) s = Subject{report.subject_boot, 0, {}, {}};
  const std::uint64_t seq = report.subject_sequence;
  switch (report.kind) {
    case ReportKind::kAlive:
      s.alive = std::max(s.alive, seq);
      std::erase_if(s.dead, [&](const auto& e) { return e.second < s.alive; });
      std::erase_if(s.unwell, [&](const auto& e) { return e.second.first < s.alive; });
      break;
    case ReportKind::kDead:
      if (seq >= s.alive) s.dead[report.reporter] = seq;
      break;
    case ReportKind::kUnhealthy:
    case ReportKind::kLeaving:
      if (seq >= s.alive) s.unwell[report.reporter] = {seq, report.kind};
      break;
  }
  if (s.dead.empty() && s.unwell.empty()) {
    suspects_.erase(report.subject);
  } else {
    suspects_.insert(report.subject);
  }
  return true;
}

bool Gossip::IsNews(const Report& report, std::span<const election::NodeName> monitors) const {
  auto it = subjects_.find(report.subject);
  if (it == subjects_.end() || it->second.boot != report.subject_boot) return true;
  const Subject& s = it->second;
  const std::uint64_t seq = report.subject_sequence;
  switch (report.kind) {
    case ReportKind::kAlive:
      return std::any_of(s.dead.begin(), s.dead.end(),
                         [&](const auto& e) { return e.second < seq; }) ||
             std::any_of(s.unwell.begin(), s.unwell.end(),
                         [&](const auto& e) { return e.second.first < seq; });
    case ReportKind::kDead:
    case ReportKind::kLeaving:
      return seq >= s.alive && Verdict(report.subject, monitors) != PeerState::kDead;
    case ReportKind::kUnhealthy:
      return seq >= s.alive && !Verdict(report.subject, monitors);
  }
  return true;
}

std::optional<PeerState> Gossip::Verdict(const election::NodeName& subject,
                                         std::span<const election::NodeName> monitors) const {
  auto it = subjects_.find(subject);
  if (it == subjects_.end() || monitors.empty()) return std::nullopt;
  const Subject& s = it->second;
  auto is_monitor = [&](const election::NodeName& n) {
    return std::find(monitors.begin(), monitors.end(), n) != monitors.end();
  };
  bool unhealthy = false;
  for (const auto& [reporter, entry] : s.unwell) {
    if (!is_monitor(reporter)) continue;
    if (entry.second == ReportKind::kLeaving) return PeerState::kDead;
    unhealthy = true;
  }
  if (unhealthy) return PeerState::kUnhealthy;
  const std::size_t needed = std::min<std::size_t>(2, monitors.size());
  const auto dead = static_cast<std::size_t>(std::count_if(
      s.dead.begin(), s.dead.end(), [&](const auto& e) { return is_monitor(e.first); }));
  if (dead >= needed) return PeerState::kDead;
  return std::nullopt;
}

std::optional<std::uint64_t> Gossip::StandingDead(const election::NodeName& subject) const {
  auto it = subjects_.find(subject);
  if (it == subjects_.end() || it->second.dead.empty()) return std::nullopt;
  std::uint64_t highest = 0;
  for (const auto& [reporter, seq] : it->second.dead) highest = std::max(highest, seq);
  return highest;
}

}  // namespace pylon::heartbeat
