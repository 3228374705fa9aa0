#include "heartbeat/service.h"

#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <variant>

#include "common/log.h"

namespace pylon::heartbeat {

namespace {

constexpr Duration kBadMacLogEvery = std::chrono::seconds(60);

std::string Ms(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

std::uint64_t RandomBootId() {
  std::uint64_t id = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&id), sizeof(id)) != 1) {
    std::random_device rd;
    id = (std::uint64_t{rd()} << 32) ^ rd();
  }
  return id;
}

}  // namespace

std::uint64_t HeartbeatStats::dropped_total() const {
  std::uint64_t n = 0;
  for (auto d : dropped) n += d;
  return n;
}

Result<std::unique_ptr<HeartbeatService>> HeartbeatService::Create(ServiceOptions options,
                                                                   KeyRing keys, ServiceDeps deps,
                                                                   OnChange on_change) {
  if (deps.clock == nullptr) return Fail(ErrorCode::kInvalidArgument, "heartbeat: no clock");
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
  return std::unique_ptr<HeartbeatService>(
      new HeartbeatService(std::move(options), std::move(keys), std::move(deps),
                           std::move(on_change), std::move(*hasher)));
}

HeartbeatService::HeartbeatService(ServiceOptions options, KeyRing keys, ServiceDeps deps,
                                   OnChange on_change,
                                   std::unique_ptr<election::Sha256Hasher> hasher)
    : options_(std::move(options)),
      keys_(std::move(keys)),
      clock_(*deps.clock),
      netlink_(std::move(deps.netlink)),
      on_change_(std::move(on_change)),
      hasher_(std::move(hasher)),
      boot_id_(options_.boot_id.value_or(RandomBootId())),
      detector_(
          DetectorOptions{options_.node, options_.config.interval, options_.config.miss_count}) {}

HeartbeatService::~HeartbeatService() { Stop(); }

Status HeartbeatService::Start() {
  if (thread_.joinable()) return Fail(ErrorCode::kInternal, "heartbeat service already started");
  auto sock = UdpSocket::Open(options_.interface, options_.config.port);
  if (!sock) return Fail(sock.error());
  wake_fd_ = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_) return FailErrno(errno, "heartbeat eventfd");
  if (netlink_ && !options_.interface.empty()) {
    auto events = netlink_->Subscribe();
    if (!events) return Fail(events.error().Wrap("heartbeat link events"));
    link_events_ = std::move(*events);
    auto link = netlink_->GetLink(options_.interface);
    if (!link) return Fail(link.error().Wrap("heartbeat interface"));
    MutexLock lock(mu_);
    ifindex_ = link->index;
    ApplyLink(link->operational(), "initial state");
  }
  {
    MutexLock lock(mu_);
    socket_ = std::move(*sock);
  }
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
  log::Info("heartbeats started",
            {{"node", options_.node.str()},
             {"interface", options_.interface.empty() ? "(any)" : options_.interface},
             {"port", std::to_string(port())},
             {"interval_ms", Ms(options_.config.interval)},
             {"miss_count", std::to_string(options_.config.miss_count)},
             {"bound_ms", Ms(options_.config.bound())}});
  return Ok();
}

void HeartbeatService::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  Wake();
  thread_.join();
  MutexLock lock(mu_);
  socket_.reset();
  link_events_.reset();
  sent_cv_.notify_all();
}

void HeartbeatService::Wake() {
  if (!wake_fd_) return;
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof(one));
}

std::uint16_t HeartbeatService::port() const {
  MutexLock lock(mu_);
  return socket_ ? socket_->local_port() : options_.config.port;
}

// --- inputs ----------------------------------------------------------------------------------

void HeartbeatService::PeersChanged() {
  std::vector<election::NodeName> names;
  names.reserve(endpoints_.size());
  for (const auto& [name, eps] : endpoints_) names.push_back(name);
  detector_.SetPeers(names);
}

std::vector<std::string> HeartbeatService::ObservePeerLease(const election::NodeName& node,
                                                            std::string_view annotation,
                                                            bool deleted) {
  if (node == options_.node) return {};
  std::vector<std::string> issues;
  bool changed = false;
  {
    MutexLock lock(mu_);
    if (deleted || annotation.empty()) {
      changed = endpoints_.erase(node) != 0;
      annotations_.erase(node);
      replay_.Forget(node);
    } else {
      auto it = annotations_.find(node);
      if (it == annotations_.end() || it->second != annotation) {
        annotations_[node] = std::string(annotation);
        ParsedEndpoints parsed = ParseEndpoints(annotation);
        issues = std::move(parsed.issues);
        if (parsed.endpoints.empty()) {
          changed = endpoints_.erase(node) != 0;
        } else {
          endpoints_[node] = std::move(parsed.endpoints);
          changed = true;
        }
      }
    }
    if (changed) PeersChanged();
  }
  if (changed) Wake();
  return issues;
}

void HeartbeatService::SetPeers(std::map<election::NodeName, std::vector<Endpoint>> peers) {
  {
    MutexLock lock(mu_);
    peers.erase(options_.node);
    for (auto it = peers.begin(); it != peers.end();) {
      it = it->second.empty() ? peers.erase(it) : std::next(it);
    }
    for (const auto& [name, eps] : endpoints_) {
      if (peers.count(name) == 0) replay_.Forget(name);
    }
    endpoints_ = std::move(peers);
    annotations_.clear();
    PeersChanged();
  }
  Wake();
}

void HeartbeatService::SetAnnounced(std::vector<net::IpAddress> addresses) {
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  {
    MutexLock lock(mu_);
    if (addresses == announced_) return;
    announced_ = std::move(addresses);
    SplitWindows();
    send_now_ = true;
  }
  Wake();
}

void HeartbeatService::SetEligible(bool eligible) {
  {
    MutexLock lock(mu_);
    if (eligible_ == eligible) return;
    eligible_ = eligible;
    send_now_ = true;
  }
  Wake();
}

void HeartbeatService::SetLinkUp(bool up) {
  bool changed = false;
  {
    MutexLock lock(mu_);
    changed = ApplyLink(up, "set by the caller");
  }
  if (changed) {
    Wake();
    if (on_change_) on_change_();
  }
}

void HeartbeatService::Leave(Duration timeout) {
  MutexLock lock(mu_);
  leaving_ = true;
  send_now_ = true;
  if (!thread_.joinable() || !link_up_) return;  // nothing can be sent
  lock.Unlock();
  Wake();
  lock.Lock();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (leaving_rounds_ == 0 && !stop_ && link_up_) {
    if (lock.WaitUntil(sent_cv_, deadline) == std::cv_status::timeout) break;
  }
}

// --- outputs ---------------------------------------------------------------------------------

HeartbeatService::PassResult HeartbeatService::Sync(election::Membership& membership,
                                                    const PassInputs& in) {
  const SteadyTime now = clock_.Now();
  PassResult result;
  bool lease_only = in.lease_only_members;
  {
    MutexLock lock(mu_);
    for (const auto& [name, member] : membership.members()) {
      if (name != options_.node && !member.released() && endpoints_.count(name) == 0) {
        lease_only = true;
        break;
      }
    }
  }
  result.health = JudgeSelf(in.lease_healthy, lease_only);
  SetEligible(result.health == SelfHealth::kHealthy && in.ready);
  MutexLock lock(mu_);
  // The detector's verdicts, kAlive with the safety slack (see kAliveOverrideSlack).
  std::set<election::NodeName> now_set;
  for (const auto& [name, peer] : detector_.peers()) {
    auto want = OverrideFor(peer);
    if (!want) continue;
    if (want->until) *want->until += kAliveOverrideSlack;
    now_set.insert(name);
    auto existing = membership.OverrideFor(name, SteadyTime::min());
    if (!existing || existing->state != want->state) result.overrides_changed = true;
    if (!existing || existing->state != want->state || existing->until != want->until) {
      membership.SetOverride(name, *want);
    }
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

SelfHealth HeartbeatService::JudgeSelf(bool lease_healthy, bool lease_only_members) const {
  const SteadyTime now = clock_.Now();
  MutexLock lock(mu_);
  SelfInputs in;
  in.heartbeats_enabled = true;
  in.link_up = link_up_;
  in.leaving = leaving_;
  in.lease_healthy = lease_healthy;
  in.peers_settled = detector_.AllPeersSettled(now);
  in.lease_only_members = lease_only_members;
  return heartbeat::JudgeSelf(in);
}

std::vector<net::IpAddress> HeartbeatService::AddressesToYield(
    std::span<const net::IpAddress> mine) {
  const SteadyTime now = clock_.Now();
  MutexLock lock(mu_);
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

std::vector<Endpoint> HeartbeatService::LocalEndpoints(
    std::span<const net::IpAddress> node_addresses) const {
  const std::uint16_t p = port();
  std::vector<Endpoint> out;
  for (const auto& a : node_addresses) out.push_back(Endpoint{a, p});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool HeartbeatService::link_up() const {
  MutexLock lock(mu_);
  return link_up_;
}

HeartbeatStats HeartbeatService::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

std::vector<PeerStatus> HeartbeatService::Peers() const {
  MutexLock lock(mu_);
  std::vector<PeerStatus> out;
  for (const auto& [name, p] : detector_.peers()) out.push_back(p);
  return out;
}

std::optional<PeerStatus> HeartbeatService::Peer(const election::NodeName& node) const {
  MutexLock lock(mu_);
  const PeerStatus* p = detector_.Find(node);
  if (p == nullptr) return std::nullopt;
  return *p;
}

// --- the thread ------------------------------------------------------------------------------

bool HeartbeatService::ApplyLink(bool up, std::string why) {
  if (up == link_up_) return false;
  link_up_ = up;
  detector_.SetSelfLinkUp(up);
  if (up) send_now_ = true;
  log::Write(up ? log::Level::kInfo : log::Level::kWarn,
             up ? "announcing link up: heartbeats resume" : "announcing link down: heartbeats stop",
             {{"interface", options_.interface}, {"why", std::move(why)}});
  return true;
}

bool HeartbeatService::DrainLinkEvents() {
  if (!link_events_) return false;
  auto events = link_events_->Poll(std::chrono::milliseconds(0));
  if (!events) {
    log::Warn("heartbeat link events", {{"error", events.error().message()}});
    return false;
  }
  bool changed = false;
  bool resync = false;
  for (const auto& ev : *events) {
    if (const auto* le = std::get_if<netlink::LinkEvent>(&ev)) {
      if (le->link.index != ifindex_ && le->link.name != options_.interface) continue;
      if (le->kind == netlink::ChangeKind::kDeleted) {
        changed |= ApplyLink(false, "interface deleted");
      } else {
        ifindex_ = le->link.index;
        changed |= ApplyLink(le->link.operational(),
                             le->link.admin_up() ? (le->link.lower_up() ? "operstate" : "carrier")
                                                 : "administratively down");
      }
    } else if (std::holds_alternative<netlink::ResyncEvent>(ev)) {
      resync = true;
    }
  }
  if (resync && netlink_) {
    auto link = netlink_->GetLink(options_.interface);
    changed |= ApplyLink(link && link->operational(), "resync");
    if (link) ifindex_ = link->index;
  }
  return changed;
}

Heartbeat HeartbeatService::MakeHeartbeat(SteadyTime now) {
  Heartbeat hb;
  hb.node = options_.node;
  hb.boot_id = boot_id_;
  hb.sequence = ++sequence_;
  hb.interval_ms = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.config.interval).count());
  hb.flags = 0;
  if (link_up_) hb.flags |= flags::kLinkUp;
  if (leaving_) hb.flags |= flags::kLeaving;
  if (!eligible_) hb.flags |= flags::kNotEligible;
  if (!detector_.peers().empty() && !detector_.HearsAnyPeer(now)) hb.flags |= flags::kDeaf;
  const std::size_t n = windows_.size();
  hb.window = static_cast<std::uint8_t>(next_window_ % n);
  hb.windows = static_cast<std::uint8_t>(n);
  hb.addresses = windows_[hb.window];
  next_window_ = (next_window_ + 1) % n;
  return hb;
}

void HeartbeatService::SplitWindows() {
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

bool HeartbeatService::SendRound(SteadyTime now) {
  if (!socket_) return false;
  if (!link_up_) return false;  // the bound device is down: nothing would leave anyway
  Heartbeat hb = MakeHeartbeat(now);
  auto datagram = Encode(hb, keys_);
  if (!datagram) {
    log::Error("cannot encode a heartbeat", {{"error", datagram.error().message()}});
    return false;
  }
  ++stats_.rounds;
  if (leaving_) ++leaving_rounds_;
  for (const auto& [peer, eps] : endpoints_) {
    for (const auto& ep : eps) {
      auto st = socket_->SendTo(*datagram, ep);
      if (st) {
        ++stats_.sent;
      } else {
        ++stats_.send_errors;
        log::Debug("heartbeat send failed",
                   {{"peer", peer.str()}, {"error", st.error().message()}});
      }
    }
  }
  sent_cv_.notify_all();
  return true;
}

bool HeartbeatService::DrainSocket(SteadyTime now) {
  if (!socket_) return false;
  bool notify = false;
  // One byte more than the largest accepted datagram, so an oversized one is seen as such.
  if (rx_buffer_.empty()) rx_buffer_.resize(kMaxDatagramBytes + 1);
  for (int budget = 1024; budget > 0; --budget) {
    auto got = socket_->Receive(rx_buffer_);
    if (!got) {
      log::Warn("heartbeat receive", {{"error", got.error().message()}});
      break;
    }
    if (!*got) break;
    ++stats_.received;
    // A truncated oversized datagram is still longer than kMaxDatagramBytes: Decode says so.
    const std::span<const std::uint8_t> data(rx_buffer_.data(),
                                             std::min((*got)->size, rx_buffer_.size()));
    auto hb = Decode(data, keys_);
    // Runs with mu_ held, as DrainSocket does (the analysis needs it said for a lambda).
    auto drop = [&](DropReason r, const std::string& detail) PYLON_REQUIRES(mu_) {
      ++stats_.dropped[static_cast<std::size_t>(r)];
      if (r == DropReason::kBadMac) {
        ++bad_mac_logged_;
        if (now >= last_bad_mac_log_ + kBadMacLogEvery || last_bad_mac_log_ == SteadyTime{}) {
          log::Warn(
              "heartbeats with a wrong key ignored (check --heartbeat-key-file on every node)",
              {{"from", (*got)->from.ToString()},
               {"count_since_last_report", std::to_string(bad_mac_logged_)}});
          last_bad_mac_log_ = now;
          bad_mac_logged_ = 0;
        }
      } else {
        log::Debug(
            "heartbeat dropped",
            {{"from", (*got)->from.ToString()}, {"reason", DropReasonName(r)}, {"detail", detail}});
      }
    };
    if (!hb) {
      drop(hb.error().reason, hb.error().detail);
      continue;
    }
    if (hb->node == options_.node) {
      drop(DropReason::kSelf, "");
      continue;
    }
    if (!detector_.IsPeer(hb->node)) {
      drop(DropReason::kUnknownSender, hb->node.str());
      continue;
    }
    const auto verdict = replay_.Check(hb->node, hb->boot_id, hb->sequence);
    if (verdict == ReplayGuard::Verdict::kDuplicate) {
      ++stats_.dropped[static_cast<std::size_t>(DropReason::kDuplicate)];
      continue;
    }
    if (verdict == ReplayGuard::Verdict::kReplay) {
      drop(DropReason::kReplay, hb->node.str() + " seq " + std::to_string(hb->sequence));
      continue;
    }
    const PeerStatus* p = detector_.Find(hb->node);
    const auto before_addresses = p->addresses;  // listed peer: found
    const auto before_flags = p->flags;
    const auto before_boot = p->boot_id;
    detector_.OnHeartbeat(*hb, now);
    ++stats_.accepted;
    p = detector_.Find(hb->node);
    notify |=
        p->addresses != before_addresses || p->flags != before_flags || p->boot_id != before_boot;
  }
  return notify;
}

void HeartbeatService::LogTransitions(const std::vector<Transition>& transitions) const {
  for (const auto& t : transitions) {
    const bool bad = t.to == PeerState::kDead || t.to == PeerState::kUnhealthy;
    log::Write(bad ? log::Level::kWarn : log::Level::kInfo, "heartbeat peer state",
               {{"peer", t.node.str()},
                {"from", PeerStateName(t.from)},
                {"to", PeerStateName(t.to)},
                {"reason", t.reason}});
  }
}

void HeartbeatService::Run() {
  std::mt19937_64 jitter(boot_id_);
  SteadyTime next_send = clock_.Now();
  const Duration interval = options_.config.interval;
  while (!stop_) {
    bool notify = false;
    std::vector<Transition> transitions;
    SteadyTime wake_at;
    int sock_fd = -1;
    int link_fd = -1;
    {
      MutexLock lock(mu_);
      const SteadyTime now = clock_.Now();
      if (now >= next_send || send_now_) {
        SendRound(now);
        send_now_ = false;
        // 0.9..1.0 x interval: gaps never exceed the interval the peers expect.
        const auto spread = interval.count() / 10;
        const auto offset =
            spread > 0 ? static_cast<Duration::rep>(jitter() % static_cast<std::uint64_t>(spread))
                       : 0;
        next_send = now + interval - Duration(offset);
      }
      wake_at = next_send;
      if (auto d = detector_.NextDeadline(); d && *d < wake_at) wake_at = *d;
      sock_fd = socket_ ? socket_->fd() : -1;
      link_fd = link_events_ ? link_events_->fd() : -1;
      if (link_events_ && link_fd < 0) {
        // A pollable-less event source (the fake): check it at least every interval.
        notify |= DrainLinkEvents();
      }
    }
    const Duration wait = std::max<Duration>(wake_at - clock_.Now(), Duration::zero());
    pollfd fds[3] = {{wake_fd_.get(), POLLIN, 0}, {sock_fd, POLLIN, 0}, {link_fd, POLLIN, 0}};
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(wait).count());
    ts.tv_nsec = static_cast<long>((wait - std::chrono::seconds(ts.tv_sec)).count());
    const int rc = ::ppoll(fds, link_fd >= 0 ? 3 : 2, &ts, nullptr);
    if (rc < 0 && errno != EINTR) {
      log::Error("heartbeat poll", {{"error", Error::FromErrno(errno, "ppoll").message()}});
    }
    if (rc > 0 && (fds[0].revents & POLLIN) != 0) {
      std::uint64_t v = 0;
      (void)!::read(wake_fd_.get(), &v, sizeof(v));
    }
    {
      MutexLock lock(mu_);
      const SteadyTime now = clock_.Now();
      if (rc > 0 && link_fd >= 0 && (fds[2].revents & POLLIN) != 0) notify |= DrainLinkEvents();
      if (rc > 0 && (fds[1].revents & POLLIN) != 0) notify |= DrainSocket(now);
      transitions = detector_.Evaluate(now);
      for (const auto& t : transitions) {
        if (t.from == PeerState::kSilent && t.to == PeerState::kAlive) ++stats_.rejoined;
      }
    }
    LogTransitions(transitions);
    if ((notify || !transitions.empty()) && on_change_) on_change_();
  }
}

}  // namespace pylon::heartbeat
