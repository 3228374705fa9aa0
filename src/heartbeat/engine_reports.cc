// The heartbeat Engine's reports (engine.h): a death, unhealth, leave or revival of a ring
// neighbour told to the other nodes. Received (OnReport), made (MakeReport), kept among the
// subject's monitors while one alone suspects it (SendToMonitors, FloodHeld), and flooded over the
// ring's fingers (Flood). The rest of the Engine is in engine.cc.
#include <algorithm>
#include <utility>

#include "common/log.h"
#include "heartbeat/engine.h"

namespace pylon::heartbeat {

bool Engine::OnReport(std::span<const std::uint8_t> datagram, const Endpoint& from,
                      SteadyTime now) {
  auto report = DecodeReport(datagram, keys_);
  if (!report) {
    Drop(report.error().reason, from, report.error().detail, now);
    return false;
  }
  if (report->reporter == options_.node) {  // our own report, back through the flood
    ++stats_.dropped[static_cast<std::size_t>(DropReason::kDuplicate)];
    return false;
  }
  const election::NodeName& x = report->subject;
  const auto monitors = ring().Neighbours(x);
  const bool news = options_.ring && gossip_.IsNews(*report, monitors);
  const bool verdict_before = options_.ring && gossip_.Verdict(x, monitors).has_value();
  if (!options_.ring || !gossip_.Accept(*report)) {
    ++stats_.dropped[static_cast<std::size_t>(DropReason::kDuplicate)];
    return false;
  }
  ++stats_.reports_received;
  log::Debug("heartbeat report", {{"reporter", report->reporter.str()},
                                  {"subject", x.str()},
                                  {"kind", ReportKindName(report->kind)}});
  std::vector<std::uint8_t> bytes(datagram.begin(), datagram.end());
  const bool monitor = std::find(monitors.begin(), monitors.end(), options_.node) != monitors.end();
  if (report->kind == ReportKind::kDead && monitor && news &&
      gossip_.Verdict(x, monitors) != PeerState::kDead) {
    // A fellow monitor's suspicion this node does not share (yet): kept, not flooded (see
    // held_). If this node's own detector condemns X too, both go out then.
    held_[x].reports.push_back(std::move(bytes));
  } else if (report->kind == ReportKind::kDead && monitor && news) {
    FloodHeld(x);  // this report confirmed a held one: the verdict formed here
    Flood(bytes);
  } else if (report->kind == ReportKind::kAlive && monitor && news && !verdict_before) {
    // It clears only suspicions that were never flooded: the fellow monitors that kept them have
    // it directly.
    ++stats_.reports_not_forwarded;
  } else if (news) {
    Flood(bytes);
  } else {
    ++stats_.reports_not_forwarded;
  }
  if (gossip_.suspects().count(x) == 0) held_.erase(x);
  if (report->subject == options_.node && report->kind == ReportKind::kDead &&
      report->subject_boot == options_.boot_id) {
    // Refute: this node is alive, at a sequence above anything its monitors heard.
    PeerStatus self;
    self.node = options_.node;
    self.boot_id = options_.boot_id;
    self.sequence = sequence_ + 1;
    MakeReport(self, ReportKind::kAlive);
  }
  return true;
}

void Engine::MakeReport(const PeerStatus& subject, ReportKind kind) {
  Report r{options_.node,   options_.boot_id, ++sequence_, subject.node,
           subject.boot_id, subject.sequence, kind};
  auto bytes = EncodeReport(r, keys_);
  if (!bytes) {
    log::Error("cannot encode a heartbeat report", {{"error", bytes.error().message()}});
    return;
  }
  const election::NodeName& x = subject.node;
  const auto held = held_.find(x);
  const bool unconfirmed = held != held_.end() && held->second.own;
  gossip_.Accept(r);
  ++stats_.reports_made;
  const auto monitors = ring().Neighbours(x);
  const bool monitor = std::find(monitors.begin(), monitors.end(), options_.node) != monitors.end();
  if (monitor && kind == ReportKind::kDead && gossip_.Verdict(x, monitors) != PeerState::kDead) {
    // A suspicion no other monitor shares yet: to the fellow monitors only, kept (held_).
    Held& h = held_[x];
    h.reports.push_back(*bytes);
    h.own = true;
    SendToMonitors(x, monitors, *bytes);
    return;
  }
  if (monitor && kind == ReportKind::kAlive && unconfirmed) {
    // The end of a suspicion that was never flooded: to the fellow monitors only.
    held_.erase(x);
    SendToMonitors(x, monitors, *bytes);
    return;
  }
  FloodHeld(x);
  Flood(*bytes);
}

void Engine::FloodHeld(const election::NodeName& subject) {
  auto it = held_.find(subject);
  if (it == held_.end()) return;
  for (const auto& bytes : it->second.reports) Flood(bytes);
  held_.erase(it);
}

void Engine::SendToMonitors(const election::NodeName& subject,
                            std::span<const election::NodeName> monitors,
                            const std::vector<std::uint8_t>& bytes) {
  for (const auto& m : monitors) {
    if (m == options_.node || m == subject) continue;
    auto it = peers_->endpoints.find(m);
    if (it != peers_->endpoints.end() && !it->second.empty()) {
      pending_reports_.push_back(Outgoing{m, it->second.front(), bytes});
    }
  }
}

void Engine::Flood(const std::vector<std::uint8_t>& bytes) {
  for (const auto& finger : ring().Fingers(options_.node)) {
    auto it = peers_->endpoints.find(finger);
    if (it == peers_->endpoints.end()) continue;
    // One endpoint is enough: each report reaches every member over about log2(N) paths.
    if (!it->second.empty())
      pending_reports_.push_back(Outgoing{finger, it->second.front(), bytes});
  }
}

}  // namespace pylon::heartbeat
