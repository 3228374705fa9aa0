#include "heartbeat/engine.h"

#include <algorithm>
#include <utility>

#include "common/log.h"
#include "heartbeat/split_brain.h"

namespace pylon::heartbeat {

namespace {

constexpr Duration kBadMacLogEvery = std::chrono::seconds(60);

}  // namespace

std::uint64_t HeartbeatStats::dropped_total() const {
  std::uint64_t n = 0;
  for (auto d : dropped) n += d;
  return n;
}

Result<Engine> Engine::Create(EngineOptions options, KeyRing keys) {
  if (!ValidWireNodeName(options.node.str())) {
    return Fail(ErrorCode::kInvalidArgument,
                "heartbeat: node name \"" + options.node.str() + "\" cannot be sent");
  }
  if (options.config.max_datagram_bytes < kFixedBytes + options.node.str().size() + 16) {
    return Fail(ErrorCode::kInvalidArgument, "heartbeat: datagram limit too small for the name");
  }
  HeartbeatConfig checked = options.config;
  if (checked.port == 0) checked.port = kDefaultPort;  // 0: an ephemeral port (tests)
  if (auto st = ValidateHeartbeatConfig(checked); !st) return Fail(st.error());
  auto hasher = election::Sha256Hasher::Create();
  if (!hasher) return Fail(hasher.error());
  return Engine(std::move(options), std::move(keys), std::move(*hasher));
}

Engine::Engine(EngineOptions options, KeyRing keys, std::unique_ptr<election::Sha256Hasher> hasher)
    : options_(std::move(options)),
      keys_(std::move(keys)),
      hasher_(std::move(hasher)),
      detector_(
          DetectorOptions{options_.node, options_.config.interval, options_.config.miss_count}),
      peers_(std::make_shared<PeerTable>()),
      jitter_(options_.boot_id) {
  if (options_.ring) peers_->ring_self = options_.node;
}

Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

// --- inputs ----------------------------------------------------------------------------------

PeerTable::Change PeerTable::Observe(const election::NodeName& node, std::string_view annotation,
                                     bool deleted, bool ring_capable_now) {
  Change result;
  bool& changed = result.peers_changed;
  if (deleted || annotation.empty()) {
    changed = endpoints.erase(node) != 0;
    annotations.erase(node);
    result.endpoints_gone = true;
  } else {
    if (ring_capable_now != (ring_capable.count(node) != 0)) {
      if (ring_capable_now) {
        ring_capable.insert(node);
      } else {
        ring_capable.erase(node);
      }
      changed = true;
    }
    auto it = annotations.find(node);
    if (it == annotations.end() || it->second != annotation) {
      annotations[node] = std::string(annotation);
      ParsedEndpoints parsed = ParseEndpoints(annotation);
      result.issues = std::move(parsed.issues);
      if (parsed.endpoints.empty()) {
        changed = endpoints.erase(node) != 0 || changed;
        result.endpoints_gone = true;
      } else {
        endpoints[node] = std::move(parsed.endpoints);
        changed = true;
      }
    }
  }
  if (changed) stale = true;
  return result;
}

void PeerTable::Rebuild(election::ElectionHasher& hasher) {
  stale = false;
  std::erase_if(ring_capable, [&](const auto& n) { return endpoints.count(n) == 0; });
  std::erase_if(ring_keys, [&](const auto& e) {
    return e.first != ring_self && ring_capable.count(e.first) == 0;
  });
  std::vector<std::pair<election::Digest, election::NodeName>> keyed;
  keyed.reserve(ring_capable.size() + 1);
  auto add = [&](const election::NodeName& name) {
    auto it = ring_keys.find(name);
    if (it == ring_keys.end()) it = ring_keys.emplace(name, Ring::Key(name, hasher)).first;
    keyed.emplace_back(it->second, name);
  };
  for (const auto& name : ring_capable) add(name);
  if (ring_self && ring_capable.count(*ring_self) == 0) add(*ring_self);
  ring = Ring::FromKeys(std::move(keyed));
}

PeerTable& Engine::MutablePeers() {
  if (peers_.use_count() > 1) peers_ = std::make_shared<PeerTable>(*peers_);
  return *peers_;
}

const Ring& Engine::ring() const {
  static const Ring kNone;
  return options_.ring ? peers_->ring : kNone;
}

void Engine::Refresh() {
  if (!peers_dirty_) return;
  peers_dirty_ = false;
  if (peers_->stale) MutablePeers().Rebuild(*hasher_);
  const auto next = HeartbeatPeers();
  for (const auto& [name, status] : detector_.peers()) {
    if (std::find(next.begin(), next.end(), name) == next.end() &&
        peers_->endpoints.count(name) != 0) {
      lingering_[name] = last_now_ + kLingerAfterRingChange;
    }
  }
  for (const auto& name : next) lingering_.erase(name);
  detector_.SetPeers(next);
}

std::vector<election::NodeName> Engine::HeartbeatPeers() const {
  std::vector<election::NodeName> out;
  if (!options_.ring) {
    for (const auto& [name, eps] : peers_->endpoints) {
      if (name != options_.node) out.push_back(name);
    }
    return out;
  }
  out = peers_->ring.Neighbours(options_.node);
  for (const auto& [name, eps] : peers_->endpoints) {
    if (name != options_.node && peers_->ring_capable.count(name) == 0) out.push_back(name);
  }
  return out;
}

std::size_t Engine::legacy_peers() const {
  const PeerTable& t = *peers_;
  const bool self_legacy =
      t.endpoints.count(options_.node) != 0 && t.ring_capable.count(options_.node) == 0;
  return t.endpoints.size() - t.ring_capable.size() - (self_legacy ? 1 : 0);
}

Engine::LeaseUpdate Engine::ObservePeerLease(const election::NodeName& node,
                                             const Annotations& annotations, bool deleted) {
  if (deleted) return ObservePeerLease(node, std::string_view(), true);
  return ObservePeerLease(node, annotations(kHeartbeatAnnotation), false,
                          annotations(kRingAnnotation) == kRingVersion);
}

Engine::LeaseUpdate Engine::ObservePeerLease(const election::NodeName& node,
                                             std::string_view annotation, bool deleted, bool ring) {
  LeaseUpdate result;
  if (node == options_.node) return result;
  PeerTable::Change c = MutablePeers().Observe(node, annotation, deleted, ring);
  if (deleted || annotation.empty()) replay_.Forget(node);
  if (c.endpoints_gone) {
    gossip_.Forget(node);
    held_.erase(node);
  }
  result.peers_changed = c.peers_changed;
  result.issues = std::move(c.issues);
  if (result.peers_changed) PeersChanged();
  return result;
}

void Engine::SetPeers(std::map<election::NodeName, std::vector<Endpoint>> peers) {
  peers.erase(options_.node);
  for (auto it = peers.begin(); it != peers.end();) {
    it = it->second.empty() ? peers.erase(it) : std::next(it);
  }
  for (const auto& [name, eps] : peers_->endpoints) {
    if (peers.count(name) == 0) {
      replay_.Forget(name);
      gossip_.Forget(name);
      held_.erase(name);
    }
  }
  PeerTable& t = MutablePeers();
  t.endpoints = std::move(peers);
  t.annotations.clear();
  t.ring_capable.clear();
  t.stale = true;
  PeersChanged();
}

void Engine::UsePeers(std::shared_ptr<PeerTable> table) {
  if (!table || table == peers_) return;
  for (const auto& [name, eps] : peers_->endpoints) {
    if (table->endpoints.count(name) == 0) {
      replay_.Forget(name);
      gossip_.Forget(name);
      held_.erase(name);
    }
  }
  peers_ = std::move(table);
  const bool on_ring =
      peers_->ring_capable.count(options_.node) != 0 && peers_->endpoints.count(options_.node) != 0;
  if (options_.ring && !on_ring && peers_->ring_self != options_.node) {
    PeerTable& t = MutablePeers();
    t.ring_self = options_.node;
    t.stale = true;
  }
  PeersChanged();
}

bool Engine::SetAnnounced(std::vector<net::IpAddress> addresses) {
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  if (addresses == announced_) return false;
  announced_ = std::move(addresses);
  SplitWindows();
  send_now_ = true;
  return true;
}

bool Engine::SetEligible(bool eligible) {
  if (eligible_ == eligible) return false;
  eligible_ = eligible;
  send_now_ = true;
  return true;
}

bool Engine::SetLinkUp(bool up) {
  if (up == link_up_) return false;
  link_up_ = up;
  detector_.SetSelfLinkUp(up);
  if (up) send_now_ = true;
  return true;
}

void Engine::StartLeaving() {
  leaving_ = true;
  send_now_ = true;
}

// --- the wire --------------------------------------------------------------------------------

Heartbeat Engine::MakeHeartbeat(SteadyTime now) {
  Heartbeat hb;
  hb.node = options_.node;
  hb.boot_id = options_.boot_id;
  hb.sequence = ++sequence_;
  hb.interval_ms = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.config.interval).count());
  hb.flags = 0;
  if (link_up_) hb.flags |= flags::kLinkUp;
  if (leaving_) hb.flags |= flags::kLeaving;
  if (!eligible_) hb.flags |= flags::kNotEligible;
  if (starting_ && !leaving_) hb.flags |= flags::kStarting | flags::kNotEligible;
  if (!detector_.peers().empty() && !detector_.HearsAnyPeer(now)) hb.flags |= flags::kDeaf;
  const std::size_t n = windows_.size();
  hb.window = static_cast<std::uint8_t>(next_window_ % n);
  hb.windows = static_cast<std::uint8_t>(n);
  hb.addresses = windows_[hb.window];
  next_window_ = (next_window_ + 1) % n;
  return hb;
}

void Engine::SplitWindows() {
  const std::size_t budget =
      options_.config.max_datagram_bytes - kFixedBytes - options_.node.str().size();
  windows_.assign(1, {});
  std::size_t used = 0;
  for (const auto& a : announced_) {
    const std::size_t size = a.is_v4() ? 4 : 16;
    if (used + size > budget) {
      if (windows_.size() == 255) {
        log::Error("announced address list too long for heartbeats; the rest is not sent",
                   {{"addresses", std::to_string(announced_.size())}});
        break;
      }
      windows_.emplace_back();
      used = 0;
    }
    windows_.back().push_back(a);
    used += size;
  }
  next_window_ = 0;
}

std::vector<Outgoing> Engine::Poll(SteadyTime now) {
  last_now_ = now;
  Refresh();
  std::vector<Outgoing> out;
  if (!pending_reports_.empty()) {
    if (link_up_) {
      stats_.reports_sent += pending_reports_.size();
      stats_.sent += pending_reports_.size();
      out = std::move(pending_reports_);
    }
    pending_reports_.clear();
  }
  if (next_send_ && now < *next_send_ && !send_now_) return out;
  send_now_ = false;
  // 0.9..1.0 x interval: gaps never exceed the interval the peers expect.
  const Duration interval = options_.config.interval;
  const auto spread = interval.count() / 10;
  const auto offset =
      spread > 0 ? static_cast<Duration::rep>(jitter_() % static_cast<std::uint64_t>(spread)) : 0;
  next_send_ = now + interval - Duration(offset);
  if (!link_up_) return out;  // the bound device is down: nothing would leave anyway
  Heartbeat hb = MakeHeartbeat(now);
  auto datagram = Encode(hb, keys_);
  if (!datagram) {
    log::Error("cannot encode a heartbeat", {{"error", datagram.error().message()}});
    return out;
  }
  ++stats_.rounds;
  if (leaving_) ++leaving_rounds_;
  std::size_t n = 0;
  auto send_to = [&](const election::NodeName& peer) {
    auto it = peers_->endpoints.find(peer);
    if (it == peers_->endpoints.end()) return;
    for (const auto& ep : it->second) {
      out.push_back(Outgoing{peer, ep, *datagram});
      ++n;
    }
  };
  for (const auto& [peer, status] : detector_.peers()) send_to(peer);
  std::erase_if(lingering_, [&](const auto& e) { return e.second <= now; });
  for (const auto& [peer, until] : lingering_) send_to(peer);
  stats_.sent += n;
  return out;
}

void Engine::RecordSendErrors(std::uint64_t failed) {
  stats_.sent -= std::min(stats_.sent, failed);
  stats_.send_errors += failed;
}

void Engine::Drop(DropReason r, const Endpoint& from, const std::string& detail, SteadyTime now) {
  ++stats_.dropped[static_cast<std::size_t>(r)];
  if (r == DropReason::kBadMac) {
    ++bad_mac_logged_;
    if (now >= last_bad_mac_log_ + kBadMacLogEvery || last_bad_mac_log_ == SteadyTime{}) {
      log::Warn("heartbeats with a wrong key ignored (check --heartbeat-key-file on every node)",
                {{"from", from.ToString()},
                 {"count_since_last_report", std::to_string(bad_mac_logged_)}});
      last_bad_mac_log_ = now;
      bad_mac_logged_ = 0;
    }
  } else {
    log::Debug("heartbeat dropped",
               {{"from", from.ToString()}, {"reason", DropReasonName(r)}, {"detail", detail}});
  }
}

bool Engine::OnDatagram(std::span<const std::uint8_t> datagram, const Endpoint& from,
                        SteadyTime now) {
  Refresh();
  ++stats_.received;
  if (LooksLikeReport(datagram)) return OnReport(datagram, from, now);
  auto hb = Decode(datagram, keys_);
  if (!hb) {
    Drop(hb.error().reason, from, hb.error().detail, now);
    return false;
  }
  if (hb->node == options_.node) {
    Drop(DropReason::kSelf, from, "", now);
    return false;
  }
  if (!detector_.IsPeer(hb->node)) {
    Drop(DropReason::kUnknownSender, from, hb->node.str(), now);
    return false;
  }
  const auto verdict = replay_.Check(hb->node, hb->boot_id, hb->sequence);
  if (verdict == ReplayGuard::Verdict::kDuplicate) {
    ++stats_.dropped[static_cast<std::size_t>(DropReason::kDuplicate)];
    return false;
  }
  if (verdict == ReplayGuard::Verdict::kReplay) {
    Drop(DropReason::kReplay, from, hb->node.str() + " seq " + std::to_string(hb->sequence), now);
    return false;
  }
  const PeerStatus* p = detector_.Find(hb->node);
  const auto before_addresses = p->addresses;  // listed peer: found
  const auto before_flags = p->flags;
  const auto before_boot = p->boot_id;
  detector_.OnHeartbeat(*hb, now);
  ++stats_.accepted;
  p = detector_.Find(hb->node);
  return p->addresses != before_addresses || p->flags != before_flags || p->boot_id != before_boot;
}

std::vector<Transition> Engine::Evaluate(SteadyTime now) {
  Refresh();
  auto transitions = detector_.Evaluate(now);
  for (const auto& t : transitions) {
    if (t.from == PeerState::kSilent && t.to == PeerState::kAlive) ++stats_.rejoined;
    if (!options_.ring || peers_->ring_capable.count(t.node) == 0) continue;
    const PeerStatus* p = detector_.Find(t.node);
    if (p == nullptr) continue;
    // From kStarting too: a restarted node that a report called dead is alive again only once it
    // judged itself (one report per start).
    const bool was_bad = t.from == PeerState::kDead || t.from == PeerState::kUnhealthy ||
                         t.from == PeerState::kStarting;
    if (t.to == PeerState::kDead) {
      MakeReport(*p, (p->flags & flags::kLeaving) != 0 ? ReportKind::kLeaving : ReportKind::kDead);
    } else if (t.to == PeerState::kUnhealthy) {
      MakeReport(*p, ReportKind::kUnhealthy);
    } else if (t.to == PeerState::kAlive && was_bad) {
      MakeReport(*p, ReportKind::kAlive);
    }
  }
  return transitions;
}

SteadyTime Engine::NextWake() const {
  if (send_now_ || !next_send_ || !pending_reports_.empty() || peers_dirty_) return SteadyTime{};
  SteadyTime wake = *next_send_;
  if (auto d = detector_.NextDeadline(); d && *d < wake) wake = *d;
  return wake;
}

// --- outputs ---------------------------------------------------------------------------------

Engine::PassResult Engine::Sync(election::Membership& membership, const PassInputs& in,
                                SteadyTime now) {
  Refresh();
  PassResult result;
  bool lease_only = in.lease_only_members;
  for (const auto& [name, member] : membership.members()) {
    if (name != options_.node && !member.released() && peers_->endpoints.count(name) == 0) {
      lease_only = true;
      break;
    }
  }
  result.health = JudgeSelf(in.lease_healthy, lease_only, now);
  const bool eligible = result.health == SelfHealth::kHealthy && in.ready;
  SetEligible(eligible);
  if (starting_ && in.ready && (in.lease_healthy || eligible)) {
    starting_ = false;
    send_now_ = true;
  }
  std::set<election::NodeName> now_set;
  auto apply = [&](const election::NodeName& name, const election::LivenessOverride& want) {
    now_set.insert(name);
    auto existing = membership.OverrideFor(name, SteadyTime::min());
    if (!existing || existing->state != want.state) result.overrides_changed = true;
    if (!existing || existing->state != want.state || existing->until != want.until) {
      membership.SetOverride(name, want);
    }
  };
  // The detector's verdicts, kAlive with the safety slack (see kAliveOverrideSlack).
  for (const auto& [name, peer] : detector_.peers()) {
    auto want = OverrideFor(peer);
    if (!want) continue;
    if (want->until) *want->until += kAliveOverrideSlack;
    apply(name, *want);
  }
  // Ring members this node does not hear, or has not heard yet: what their monitors reported
  // (GossipOverride). With a healthy lease only the members a bad report stands against can have
  // one: a pass costs the suspects, not the segment's size.
  auto gossip_override = [&](const election::NodeName& name) {
    if (name == options_.node || now_set.count(name) != 0) return;
    if (peers_->ring_capable.count(name) == 0) return;
    if (auto want = GossipOverride(name, !in.lease_healthy && !detector_.IsPeer(name), now)) {
      apply(name, *want);
    }
  };
  if (in.lease_healthy) {
    for (const auto& name : gossip_.suspects()) gossip_override(name);
  } else {
    for (const auto& name : peers_->ring_capable) gossip_override(name);
  }
  for (const auto& name : overridden_) {
    if (now_set.count(name) == 0) {
      membership.ClearOverride(name);
      result.overrides_changed = true;
    }
  }
  overridden_ = std::move(now_set);
  result.overrides_changed |=
      SyncSelfOverride(membership, options_.node, result.health, now, kAliveOverrideSlack);
  return result;
}

std::optional<election::LivenessOverride> Engine::GossipOverride(const election::NodeName& node,
                                                                 bool keep_alive,
                                                                 SteadyTime now) const {
  if (gossip_.Verdict(node, ring().Neighbours(node))) {
    return election::LivenessOverride{election::Liveness::kDead, std::nullopt};
  }
  // This node cannot see leases move (an API outage): the member's monitors would have reported
  // it if it had stopped, so it stays live (as heartbeat peers do, see policy.h CombinedLiveness).
  if (keep_alive) {
    return election::LivenessOverride{election::Liveness::kAlive, now + kAliveOverrideSlack};
  }
  return std::nullopt;
}

SelfHealth Engine::JudgeSelf(bool lease_healthy, bool lease_only_members, SteadyTime now) const {
  SelfInputs in;
  in.heartbeats_enabled = true;
  in.link_up = link_up_;
  in.leaving = leaving_;
  in.lease_healthy = lease_healthy;
  in.peers_settled = detector_.AllPeersSettled(now);
  in.lease_only_members = lease_only_members;
  return heartbeat::JudgeSelf(in);
}

std::vector<net::IpAddress> Engine::AddressesToYield(std::span<const net::IpAddress> mine,
                                                     SteadyTime now) {
  Refresh();
  std::vector<Claim> claims;
  for (const auto& [name, peer] : detector_.peers()) {
    if (peer.state != PeerState::kAlive || !peer.last_heard) continue;
    if (now >= *peer.last_heard + peer.bound || peer.addresses.empty()) continue;
    claims.push_back(Claim{name, (peer.flags & flags::kDeaf) != 0, peer.addresses});
  }
  Claim self{options_.node, !detector_.peers().empty() && !detector_.HearsAnyPeer(now),
             std::vector<net::IpAddress>(mine.begin(), mine.end())};
  return heartbeat::AddressesToYield(self, claims, *hasher_);
}

std::vector<Endpoint> Engine::LocalEndpoints(std::span<const net::IpAddress> node_addresses,
                                             std::uint16_t port) {
  std::vector<Endpoint> out;
  for (const auto& a : node_addresses) out.push_back(Endpoint{a, port});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<PeerStatus> Engine::Peers() const {
  std::vector<PeerStatus> out;
  for (const auto& [name, p] : detector_.peers()) out.push_back(p);
  return out;
}

std::optional<PeerStatus> Engine::Peer(const election::NodeName& node) const {
  const PeerStatus* p = detector_.Find(node);
  if (p == nullptr) return std::nullopt;
  return *p;
}

}  // namespace pylon::heartbeat
