// Gossip: what this node heard, through reports (wire.h Report), about ring members it does not
// monitor itself, and the verdict it draws. Pure; not thread-safe.
//
// Per subject X the book keeps X's boot id (the latest one reported), the highest sequence any
// report said X was heard at (`alive`), and the bad reports still standing:
//   - a dead report from monitor M with last-heard sequence s stands while s >= alive;
//   - an unhealthy or leaving report with sequence u stands while u >= alive.
// An alive report with a higher sequence supersedes them (X was heard after they were made); a
// report with another boot id starts X's entry afresh (X restarted, or the entry was stale).
//
// Verdict(X, monitors), counting only reports whose reporter is one of `monitors` (ring.h
// Neighbours(X), the nodes that actually hear X):
//   leaving report standing              -> kDead (X said so itself);
//   unhealthy report standing            -> kUnhealthy (X said so itself);
//   dead reports from at least min(2, |monitors|) distinct monitors -> kDead;
//   otherwise                            -> nullopt: no verdict (the lease decides).
// Two monitors, not one, because one monitor that lost three heartbeats in a row must not move
// an address: two independent misses of three datagrams each are what 0 false takeovers at 1 %
// loss rests on (the segment simulation measures it). A crashed node's monitors all stop
// hearing it at the same moment, so waiting for the second costs no time.
//
// Accept deduplicates reports by (reporter, reporter boot, id): a flood delivers each report to a
// node several times, and only the first copy is forwarded. The memory is bounded
// (kRememberedReports, oldest forgotten first).
//
// A new report is forwarded only if it is news here (IsNews): a dead report once two monitors'
// dead reports already condemn the subject, or a second alive report once the first cleared
// everything, changes no verdict. Every node forwards the reports that formed its verdict, to each
// of its fingers, and each node is a finger of about log2(N) others, so every node receives those
// over as many paths as before; the third and fourth monitors' floods are what is saved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "election/node_name.h"
#include "heartbeat/detector.h"
#include "heartbeat/wire.h"

namespace pylon::heartbeat {

inline constexpr std::size_t kRememberedReports = 4096;

class Gossip {
 public:
  // Records `report` unless this exact report was seen before. Returns whether it was new
  // (forward it then).
  bool Accept(const Report& report);
  // Whether `report`, not accepted yet, would change what this book says (call before Accept):
  //   about an unknown subject, or another boot of it     -> yes;
  //   alive: it clears a bad report standing               -> yes, else no;
  //   dead or leaving: Verdict(subject, monitors) is not kDead and it would stand -> yes, else no;
  //   unhealthy: no verdict yet and it would stand         -> yes, else no.
  bool IsNews(const Report& report, std::span<const election::NodeName> monitors) const;

  std::optional<PeerState> Verdict(const election::NodeName& subject,
                                   std::span<const election::NodeName> monitors) const;

  // The highest sequence of a dead report standing against `subject` (to refute one about this
  // node), or nullopt.
  std::optional<std::uint64_t> StandingDead(const election::NodeName& subject) const;

  // Drops what is known of `subject` (it left the membership).
  void Forget(const election::NodeName& subject) {
    subjects_.erase(subject);
    suspects_.erase(subject);
  }
  std::size_t subjects() const { return subjects_.size(); }
  // The subjects with a bad report standing (dead, unhealthy or leaving), by name: the only ones
  // Verdict can condemn.
  const std::set<election::NodeName>& suspects() const { return suspects_; }

 private:
  struct Subject {
    std::uint64_t boot = 0;
    std::uint64_t alive = 0;
    std::map<election::NodeName, std::uint64_t> dead;  // reporter -> last sequence heard
    // reporter -> (sequence, kind) of its unhealthy or leaving report
    std::map<election::NodeName, std::pair<std::uint64_t, ReportKind>> unwell;
  };
  using Key = std::tuple<election::NodeName, std::uint64_t, std::uint64_t>;

  std::map<election::NodeName, Subject> subjects_;
  std::set<election::NodeName> suspects_;  // subjects_ with a dead or unwell report standing
  std::set<Key> seen_;
  std::deque<Key> seen_order_;
};

}  // namespace pylon::heartbeat
