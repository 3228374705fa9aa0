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

Result<std::unique_ptr<HeartbeatService>> HeartbeatService::Create(ServiceOptions options,
                                                                   KeyRing keys, ServiceDeps deps,
                                                                   OnChange on_change) {
  if (deps.clock == nullptr) return Fail(ErrorCode::kInvalidArgument, "heartbeat: no clock");
  auto engine = Engine::Create(
      EngineOptions{options.node, options.config, options.boot_id.value_or(RandomBootId())},
      std::move(keys));
  if (!engine) return Fail(engine.error());
  return std::unique_ptr<HeartbeatService>(new HeartbeatService(
      std::move(options), std::move(deps), std::move(on_change), std::move(*engine)));
}

HeartbeatService::HeartbeatService(ServiceOptions options, ServiceDeps deps, OnChange on_change,
                                   Engine engine)
    : options_(std::move(options)),
      clock_(*deps.clock),
      netlink_(std::move(deps.netlink)),
      on_change_(std::move(on_change)),
      boot_id_(engine.boot_id()),
      engine_(std::move(engine)) {}

HeartbeatService::~HeartbeatService() { Stop(); }

Status HeartbeatService::Start() {
  if (worker_.Running()) return Fail(ErrorCode::kInternal, "heartbeat service already started");
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
  worker_.SetWaker([this] { Wake(); });  // Stop interrupts the poll
  worker_.Start([this] { Run(); });
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
  if (!worker_.Running()) return;
  worker_.Stop();
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

std::vector<std::string> HeartbeatService::ObservePeerLease(const election::NodeName& node,
                                                            std::string_view annotation,
                                                            bool deleted, bool ring) {
  Engine::LeaseUpdate update;
  {
    MutexLock lock(mu_);
    update = engine_.ObservePeerLease(node, annotation, deleted, ring);
  }
  if (update.peers_changed) Wake();
  return std::move(update.issues);
}

void HeartbeatService::SetPeers(std::map<election::NodeName, std::vector<Endpoint>> peers) {
  {
    MutexLock lock(mu_);
    engine_.SetPeers(std::move(peers));
  }
  Wake();
}

void HeartbeatService::SetAnnounced(std::vector<net::IpAddress> addresses) {
  {
    MutexLock lock(mu_);
    if (!engine_.SetAnnounced(std::move(addresses))) return;
  }
  Wake();
}

void HeartbeatService::SetEligible(bool eligible) {
  {
    MutexLock lock(mu_);
    if (!engine_.SetEligible(eligible)) return;
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
  engine_.StartLeaving();
  if (!worker_.Running() || !engine_.link_up()) return;  // nothing can be sent
  lock.Unlock();
  Wake();
  lock.Lock();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (engine_.leaving_rounds() == 0 && !worker_.Stopping() && engine_.link_up()) {
    if (lock.WaitUntil(sent_cv_, deadline) == std::cv_status::timeout) break;
  }
}

// --- outputs ---------------------------------------------------------------------------------

HeartbeatService::PassResult HeartbeatService::Sync(election::Membership& membership,
                                                    const PassInputs& in) {
  const SteadyTime now = clock_.Now();
  PassResult result;
  bool wake = false;
  {
    MutexLock lock(mu_);
    result = engine_.Sync(membership, in, now);
    wake = engine_.NextWake() <= now;  // the eligible flag changed: send it at once
  }
  if (wake) Wake();
  return result;
}

SelfHealth HeartbeatService::JudgeSelf(bool lease_healthy, bool lease_only_members) const {
  const SteadyTime now = clock_.Now();
  MutexLock lock(mu_);
  return engine_.JudgeSelf(lease_healthy, lease_only_members, now);
}

std::vector<net::IpAddress> HeartbeatService::AddressesToYield(
    std::span<const net::IpAddress> mine) {
  const SteadyTime now = clock_.Now();
  MutexLock lock(mu_);
  return engine_.AddressesToYield(mine, now);
}

std::vector<Endpoint> HeartbeatService::LocalEndpoints(
    std::span<const net::IpAddress> node_addresses) const {
  return Engine::LocalEndpoints(node_addresses, port());
}

bool HeartbeatService::link_up() const {
  MutexLock lock(mu_);
  return engine_.link_up();
}

HeartbeatStats HeartbeatService::stats() const {
  MutexLock lock(mu_);
  return engine_.stats();
}

std::vector<PeerStatus> HeartbeatService::Peers() const {
  MutexLock lock(mu_);
  return engine_.Peers();
}

std::size_t HeartbeatService::LegacyPeers() const {
  MutexLock lock(mu_);
  return engine_.legacy_peers();
}

std::optional<PeerStatus> HeartbeatService::Peer(const election::NodeName& node) const {
  MutexLock lock(mu_);
  return engine_.Peer(node);
}

// --- the thread ------------------------------------------------------------------------------

bool HeartbeatService::ApplyLink(bool up, std::string why) {
  if (!engine_.SetLinkUp(up)) return false;
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

void HeartbeatService::SendRound(SteadyTime now) {
  if (!socket_) return;
  const std::vector<Outgoing> out = engine_.Poll(now);
  std::uint64_t failed = 0;
  for (const auto& d : out) {
    auto st = socket_->SendTo(d.bytes, d.to);
    if (!st) {
      ++failed;
      log::Debug("heartbeat send failed",
                 {{"peer", d.peer.str()}, {"error", st.error().message()}});
    }
  }
  if (failed > 0) engine_.RecordSendErrors(failed);
  sent_cv_.notify_all();
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
    // A truncated oversized datagram is still longer than kMaxDatagramBytes: Decode says so.
    const std::span<const std::uint8_t> data(rx_buffer_.data(),
                                             std::min((*got)->size, rx_buffer_.size()));
    notify |= engine_.OnDatagram(data, (*got)->from, now);
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
  while (!worker_.Stopping()) {
    bool notify = false;
    std::vector<Transition> transitions;
    SteadyTime wake_at;
    int sock_fd = -1;
    int link_fd = -1;
    {
      MutexLock lock(mu_);
      SendRound(clock_.Now());
      wake_at = engine_.NextWake();
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
      transitions = engine_.Evaluate(now);
    }
    LogTransitions(transitions);
    if ((notify || !transitions.empty()) && on_change_) on_change_();
  }
}

}  // namespace pylon::heartbeat
