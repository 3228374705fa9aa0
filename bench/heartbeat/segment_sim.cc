// Segment simulation: N agents on one segment in virtual time, to show what the failure detector
// costs and how fast and how safely addresses move, at sizes no lab can run.
//
// Real code: every node runs a heartbeat::Engine (wire format, key ring, replay guard, Detector,
// policy, split-brain yield), an election::Membership fed to Engine::Sync, and an
// agent::TakeoverGate (the successor's wire check). The election is the elector's rule (sticky;
// else the lowest SHA-256(node "#" address), election/hash.h) over rankings precomputed once.
// Simulated: the clock (a discrete-event queue), the network (latency, loss, a node cut off, the
// segment split in two), the lease API (an in-memory table of renewals at the lease pacing) and
// the wire check's probe (lost like a datagram; a crashed holder never answers).
//
// Simplifications (see docs/failover.md, "Simulating a segment"):
//   - a node's liveness view of X: the Membership override Engine::Sync set for X, else X's lease
//     (renewed within its duration, as this node last saw the API, from the simulation's table);
//     the Membership holds this node only (every other node has heartbeat endpoints, so Sync's
//     lease-only check finds none either way);
//   - every node sees the same node leases: one heartbeat::PeerTable shared by all engines
//     (Engine::UsePeers), so memory grows as N, not N^2;
//   - the recorded announcer of an address (stickiness, the takeover's holder) is known to every
//     node at once; watch events arrive at once;
//   - a pass re-elects only the addresses whose top-ranked nodes changed liveness in that node's
//     view (plus its pending takeovers and, when its own health changes, what it holds).
//
// Usage: pylon_heartbeat_segment_sim [--nodes 10,100,250,1000,5000] [--addresses 10000]
//          [--crashes 100[,per size...]] [--loss 0,1,5] [--seed 1] [--interval-ms 100]
//          [--lease loud|quiet] [--max-all-to-all 250] [--no-partitions]
//          [--max-partition-nodes 1000] [--quick]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/takeover.h"
#include "common/log.h"
#include "election/hash.h"
#include "election/membership.h"
#include "heartbeat/engine.h"
#include "heartbeat/wire.h"
#include "net/mac.h"

namespace pylon::sim {
namespace {

using election::NodeName;
using heartbeat::Endpoint;
using heartbeat::Engine;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::uint32_t kNone = ~std::uint32_t{0};
constexpr std::size_t kTopK = 8;  // ranked nodes kept per address
constexpr std::string_view kRingAnnotation = "purelb.io/heartbeat-ring";

double Ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// --- parameters ------------------------------------------------------------------------------

struct LeasePacing {
  const char* name;
  Duration renew;     // PURELB_RETRY_PERIOD
  Duration duration;  // leaseDurationSeconds
  Duration deadline;  // PURELB_RENEW_DEADLINE: withdraw when renewals fail this long
};
constexpr LeasePacing kLoud{"loud", seconds(2), seconds(10), seconds(7)};
constexpr LeasePacing kQuiet{"quiet", seconds(10), seconds(40), seconds(28)};

struct Params {
  std::vector<int> nodes = {10, 100, 250, 1000, 5000};
  int addresses = 10000;
  // Crashes per run, by position in `nodes` (the last one for the rest): 100,100,30 runs 30 at the
  // third size and after.
  std::vector<int> crashes = {100};
  std::vector<double> loss = {0, 1, 5};  // percent
  std::uint64_t seed = 1;
  Duration interval = milliseconds(100);
  LeasePacing lease = kLoud;
  int max_all_to_all = 250;
  bool partitions = true;
  int max_partition_nodes = 1000;  // the cut-off and split runs check every node each pass
};

struct NetModel {
  Duration base = std::chrono::microseconds(200);
  Duration jitter = milliseconds(1);
  double loss = 0;  // 0..1
};

// --- results ---------------------------------------------------------------------------------

struct RunResult {
  int n = 0;
  double loss = 0;
  double seconds = 0;  // measured window
  double sent_mean = 0, sent_max = 0, recv_mean = 0, recv_max = 0, rounds_mean = 0;
  // The same over 10 s at rest before the first crash (heartbeats only: what a segment costs).
  double idle_sent_mean = 0, idle_sent_max = 0;
  std::vector<double> latency_ms;  // crash -> new winner announcing, per address
  std::vector<double> crash_ms;    // per crash: the last of its addresses
  int crashes = 0;
  std::uint64_t not_taken = 0;        // addresses of a crashed node nobody took before it returned
  std::uint64_t false_takeovers = 0;  // an address taken while its holder was alive and reachable
  std::uint64_t false_dead = 0;       // detector verdicts kDead on an alive, reachable peer
  std::uint64_t wire_checks = 0;
  std::uint64_t deferred = 0;
  double cpu_wall_s = 0;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// --- the world -------------------------------------------------------------------------------

// Precomputed election order: per address, the kTopK nodes with the lowest digest (the elector's
// order), extended to every node on demand.
struct Rankings {
  std::vector<std::vector<std::uint32_t>> top;    // by address
  std::vector<std::vector<std::uint32_t>> index;  // by node: addresses where it is in `top`
  std::vector<bool> full;                         // top holds every node
};

class World {
 public:
  World(const Params& p, int n, const NetModel& net, const Rankings& ranks,
        const std::vector<net::IpAddress>& vips, std::uint64_t seed)
      : p_(p), n_(n), net_(net), ranks_(ranks), vips_(vips), rng_(seed), keys_(Keys()) {
    nodes_.resize(static_cast<std::size_t>(n));
    announced_.resize(vips_.size());
    mac_ = *net::MacAddress::Parse("02:00:00:00:00:01");
    for (int i = 0; i < n; ++i) {
      Node& x = node(i);
      x.name = NodeName(NameOf(i));
      x.ep = Endpoint{net::IpAddress::V4(0xc6130000u + static_cast<std::uint32_t>(i)), 7934};
      x.annotation = x.ep.ToString();
    }
    // The lease informer's view, the same on every node: every node lease with its annotations
    // (the ring capability included), in one table all engines share (copy on write).
    table_ = std::make_shared<heartbeat::PeerTable>();
    for (int i = 0; i < n; ++i) table_->Observe(node(i).name, node(i).annotation, false, true);
    table_->Rebuild(**election::Sha256Hasher::Create());
    for (int i = 0; i < n; ++i) StartAgent(i);
    // Every address starts with its first-ranked node announcing it (a settled segment).
    for (std::uint32_t a = 0; a < vips_.size(); ++a) {
      const std::uint32_t w = ranks_.top[a][0];
      SetAnnouncers(a, {w});
      node(static_cast<int>(w)).held.insert(a);
    }
    for (int i = 0; i < n; ++i) {
      PublishAnnounced(i);
      // Agents start at random phases of the interval.
      node(i).armed = Now() + Duration(static_cast<Duration::rep>(
                                  Uniform() * static_cast<double>(p_.interval.count())));
      Push(node(i).armed, Kind::kWake, i);
      // Renewals spread over one period.
      Push(Now() + Duration(static_cast<Duration::rep>(
                       Uniform() * static_cast<double>(p_.lease.renew.count()))),
           Kind::kRenew, i);
      node(i).last_renew = Now();
    }
  }

  SteadyTime Now() const { return now_; }
  int size() const { return n_; }

  // Datagrams per round of node 0 so far (all-to-all: N - 1).
  double Fanout() {
    const Node& x = node(0);
    return x.rounds == 0 ? 0 : static_cast<double>(x.sent) / static_cast<double>(x.rounds);
  }
  // Addresses of node i's last crash that nobody took yet.
  std::uint64_t Untaken(int i) {
    const auto it = last_crash_.find(i);
    return it == last_crash_.end() ? 0 : crash_records_[it->second].pending;
  }

  void RunUntil(SteadyTime t) {
    while (!queue_.empty() && queue_.top().t <= t) {
      Event e = queue_.top();
      queue_.pop();
      now_ = e.t;
      Dispatch(e);
    }
    now_ = t;
  }

  // --- scenario actions ----------------------------------------------------------------------
  void Crash(int i) {
    Node& x = node(i);
    if (x.down) return;
    x.down = true;
    x.engine.reset();
    ++x.epoch;
    down_.insert(static_cast<std::uint32_t>(i));
    const std::uint64_t id = crash_records_.size();
    crash_records_.push_back(CrashRecord{i, now_, 0, now_});
    last_crash_[i] = id;
    for (std::uint32_t a : x.held) {
      watch_[a] = id;
      ++crash_records_[id].pending;
    }
  }
  void Restart(int i) {
    Node& x = node(i);
    if (!x.down) return;
    for (std::uint32_t a : x.held) {
      auto& v = announced_[a];
      std::vector<std::uint32_t> next = v;
      std::erase(next, static_cast<std::uint32_t>(i));
      SetAnnouncers(a, std::move(next));
      if (auto w = watch_.find(a); w != watch_.end()) {
        ++not_taken_;
        --crash_records_[w->second].pending;
        crash_records_[w->second].gave_up = true;
        watch_.erase(w);
      }
    }
    x.held.clear();
    x.down = false;
    down_.erase(static_cast<std::uint32_t>(i));
    StartAgent(i);
    x.started = true;
    PublishAnnounced(i);
    Arm(i);
    SchedulePass(i);
  }
  // Cut off: no datagram to or from the node, and no API.
  void Cut(int i, bool cut) {
    Node& x = node(i);
    x.cut = cut;
    x.api_cut = cut;
    if (cut) {
      x.api_cut_at = now_;
      down_.insert(static_cast<std::uint32_t>(i));
      SchedulePass(i, x.last_renew + p_.lease.deadline + milliseconds(1));
    } else {
      down_.erase(static_cast<std::uint32_t>(i));
      SchedulePass(i);
    }
  }
  // Splits the segment: nodes with group g hear only nodes of group g. The API stays reachable.
  void Split(const std::vector<int>& group) {
    for (int i = 0; i < n_; ++i) node(i).group = group[static_cast<std::size_t>(i)];
    split_ = true;
  }
  void Heal() {
    for (int i = 0; i < n_; ++i) node(i).group = 0;
    split_ = false;
  }
  bool IsDown(int i) { return node(i).down; }

  // Addresses served by nobody up and reachable / by more than one node.
  struct Coverage {
    std::size_t unserved = 0, doubled = 0;
  };
  Coverage Count() {
    Coverage c;
    for (const auto& v : announced_) {
      std::size_t up = 0;
      for (auto x : v) up += node(static_cast<int>(x)).down ? 0 : 1;
      if (up == 0) ++c.unserved;
      if (up > 1) ++c.doubled;
    }
    return c;
  }
  std::size_t HeldBy(int i) { return node(i).held.size(); }
  std::vector<std::uint32_t> Held(int i) { return {node(i).held.begin(), node(i).held.end()}; }
  std::size_t AnnouncedByOthers(const std::vector<std::uint32_t>& addrs, int i) {
    std::size_t k = 0;
    for (auto a : addrs) {
      for (auto x : announced_[a]) {
        if (static_cast<int>(x) != i && !node(static_cast<int>(x)).down) {
          ++k;
          break;
        }
      }
    }
    return k;
  }

  // --- counters ------------------------------------------------------------------------------
  void ResetTraffic() {
    for (auto& x : nodes_) x.sent = x.recv = x.rounds = 0;
    traffic_since_ = now_;
  }
  void Fill(RunResult& r) {
    const double secs = std::chrono::duration<double>(now_ - traffic_since_).count();
    r.seconds = secs;
    double s = 0, rv = 0, rd = 0;
    for (auto& x : nodes_) {
      s += static_cast<double>(x.sent);
      rv += static_cast<double>(x.recv);
      rd += static_cast<double>(x.rounds);
      r.sent_max = std::max(r.sent_max, static_cast<double>(x.sent) / secs);
      r.recv_max = std::max(r.recv_max, static_cast<double>(x.recv) / secs);
    }
    r.sent_mean = s / secs / n_;
    r.recv_mean = rv / secs / n_;
    r.rounds_mean = rd / secs / n_;
    for (const auto& c : crash_records_) {
      if (c.pending == 0 && !c.gave_up) r.crash_ms.push_back(Ms(c.last_taken - c.at));
    }
    r.latency_ms = latency_ms_;
    r.crashes = static_cast<int>(crash_records_.size());
    r.not_taken = not_taken_ + watch_.size();
    r.false_takeovers = false_takeovers_;
    r.false_dead = false_dead_;
    r.wire_checks = wire_checks_;
    r.deferred = deferred_;
  }
  std::uint64_t false_takeovers() const { return false_takeovers_; }
  std::uint64_t moves() const { return moves_; }

 private:
  enum class Kind : std::uint8_t { kWake, kDeliver, kPass, kRenew, kLeaseExpiry, kCheckDone };
  struct Event {
    SteadyTime t;
    std::uint64_t seq;
    Kind kind;
    int node;
    std::uint64_t epoch;
    std::uint32_t from;
    std::uint32_t slot;  // payload / check result
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct Node {
    NodeName name;
    Endpoint ep;
    std::string annotation;
    std::optional<Engine> engine;
    std::unique_ptr<election::Membership> membership;
    agent::TakeoverGate gate;
    std::vector<std::uint32_t> overridden;  // nodes the engine's last Sync overrode
    std::set<std::uint32_t> held;           // addresses announced
    std::set<std::uint32_t> pending;        // won, not held: takeover candidates
    std::set<std::uint32_t> believed_dead;  // nodes this node's view calls dead
    bool healthy = true;
    bool down = false, cut = false, api_cut = false;
    int group = 0;
    SteadyTime api_cut_at{};
    SteadyTime last_renew{};
    bool lease_expired = false;
    SteadyTime armed = SteadyTime::max();
    SteadyTime pass_at = SteadyTime::max();
    int contested = 0;  // held addresses another node announces too
    bool started = false;
    std::uint64_t epoch = 0;
    std::uint64_t boot = 0;
    std::uint64_t sent = 0, recv = 0, rounds = 0;
  };
  struct CrashRecord {
    int node;
    SteadyTime at;
    std::uint64_t pending;
    SteadyTime last_taken;
    bool gave_up = false;
  };

  static heartbeat::KeyRing Keys() {
    return *heartbeat::KeyRing::Create({"segment-sim-key-0123456789abcdef"});
  }
  static std::string NameOf(int i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "node-%05d", i);
    return buf;
  }
  Node& node(int i) { return nodes_[static_cast<std::size_t>(i)]; }
  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  bool Lost() { return net_.loss > 0 && Uniform() < net_.loss; }
  Duration Latency() {
    return net_.base + Duration(static_cast<Duration::rep>(
                           Uniform() * static_cast<double>(net_.jitter.count())));
  }
  bool Reachable(int a, int b) {
    const Node& x = node(a);
    const Node& y = node(b);
    return !x.cut && !y.cut && !y.down && x.group == y.group;
  }

  void Push(SteadyTime t, Kind k, int i, std::uint32_t from = 0, std::uint32_t slot = 0) {
    queue_.push(Event{t, seq_++, k, i, node(i).epoch, from, slot});
  }

  void StartAgent(int i) {
    Node& x = node(i);
    heartbeat::EngineOptions o;
    o.node = x.name;
    o.config.interval = p_.interval;
    o.config.miss_count = 3;
    o.boot_id = rng_();
    auto e = Engine::Create(o, keys_);
    if (!e) {
      std::fprintf(stderr, "engine: %s\n", e.error().message().c_str());
      std::exit(1);
    }
    x.engine.emplace(std::move(*e));
    x.membership = std::make_unique<election::Membership>();
    x.gate = agent::TakeoverGate();
    x.overridden.clear();
    x.believed_dead.clear();
    x.pending.clear();
    x.healthy = true;
    x.pass_at = SteadyTime::max();
    x.armed = SteadyTime::max();
    x.engine->UsePeers(table_);
    // The Membership holds this node only: every other node publishes heartbeat endpoints, so
    // Sync's lease-only check finds the same (none), and the sim reads leases from its own table
    // (LeaseLive) where the Membership has no override.
    election::LeaseObservation self;
    self.node = x.name;
    self.holder_identity = self.node.str();
    self.lease_duration_seconds = std::chrono::duration_cast<seconds>(p_.lease.duration).count();
    self.renew_time = "1";
    x.membership->Observe(self, now_);
  }

  static std::uint32_t IndexOf(const NodeName& name) {
    return static_cast<std::uint32_t>(std::strtoul(name.str().c_str() + 5, nullptr, 10));
  }

  void PublishAnnounced(int i) {
    Node& x = node(i);
    std::vector<net::IpAddress> list;
    list.reserve(x.held.size());
    for (auto a : x.held) list.push_back(vips_[a]);
    if (x.engine->SetAnnounced(std::move(list))) Arm(i);
  }

  void Arm(int i) {
    Node& x = node(i);
    if (x.down || !x.started) return;  // the first round comes at the agent's start
    SteadyTime w = x.engine->NextWake();
    if (w <= now_) w = now_;
    if (w < x.armed) {
      x.armed = w;
      Push(w, Kind::kWake, i);
    }
  }

  // One pending pass per node: the earliest asked for.
  void SchedulePass(int i, std::optional<SteadyTime> at = std::nullopt) {
    Node& x = node(i);
    const SteadyTime t = std::max(at.value_or(now_), now_);
    if (x.down || t >= x.pass_at) return;
    x.pass_at = t;
    Push(t, Kind::kPass, i);
  }

  void AfterEvaluate(int i, const std::vector<heartbeat::Transition>& ts, bool changed) {
    for (const auto& t : ts) {
      if (t.to == heartbeat::PeerState::kDead) {
        const int j = static_cast<int>(IndexOf(t.node));
        if (!node(j).down && Reachable(i, j) && Reachable(j, i) &&
            (node(j).engine && !node(j).engine->leaving())) {
          ++false_dead_;
        }
      }
    }
    // As the agent: a pass on a transition or on what the engine says changed (a peer's list or
    // flags, a report about a node that is not a peer).
    if (!ts.empty() || changed) SchedulePass(i);
  }

  void Dispatch(const Event& e) {
    Node& x = node(e.node);
    switch (e.kind) {
      case Kind::kWake: {
        if (x.down || e.epoch != x.epoch || e.t != x.armed) return;
        x.armed = SteadyTime::max();
        x.started = true;
        auto out = x.engine->Poll(now_);
        if (!out.empty()) ++x.rounds;
        for (auto& d : out) {
          ++x.sent;
          const auto j = static_cast<int>(IndexOf(d.peer));
          if (Lost() || !Reachable(e.node, j)) continue;
          const std::uint32_t slot = Store(std::move(d.bytes));
          Push(now_ + Latency(), Kind::kDeliver, j, static_cast<std::uint32_t>(e.node), slot);
        }
        AfterEvaluate(e.node, x.engine->Evaluate(now_), false);
        Arm(e.node);
        return;
      }
      case Kind::kDeliver: {
        std::vector<std::uint8_t> bytes = Take(e.slot);
        if (x.down || e.epoch != x.epoch) return;
        // A partition that started while the datagram was in flight drops it too.
        if (!Reachable(static_cast<int>(e.from), e.node)) return;
        ++x.recv;
        const bool changed = x.engine->OnDatagram(bytes, node(static_cast<int>(e.from)).ep, now_);
        AfterEvaluate(e.node, x.engine->Evaluate(now_), changed);
        Arm(e.node);
        return;
      }
      case Kind::kPass:
        if (e.epoch != x.epoch || e.t != x.pass_at) return;
        x.pass_at = SteadyTime::max();
        Pass(e.node);
        return;
      case Kind::kRenew: {
        Push(now_ + p_.lease.renew, Kind::kRenew, e.node);
        if (x.down || x.api_cut) return;
        x.last_renew = now_;
        if (!x.healthy) SchedulePass(e.node);
        Push(now_ + p_.lease.duration, Kind::kLeaseExpiry, e.node);
        if (x.lease_expired) {
          x.lease_expired = false;
          for (int j = 0; j < n_; ++j) SchedulePass(j);
        }
        return;
      }
      case Kind::kLeaseExpiry:
        if (x.lease_expired || x.last_renew + p_.lease.duration > now_) return;
        x.lease_expired = true;
        for (int j = 0; j < n_; ++j) SchedulePass(j);
        return;
      case Kind::kCheckDone: {
        const agent::WireCheckResult r = checks_[e.slot];
        free_checks_.push_back(e.slot);
        if (x.down || e.epoch != x.epoch) return;
        x.gate.Record(r, now_);
        SchedulePass(e.node);
        return;
      }
    }
  }

  std::uint32_t Store(std::vector<std::uint8_t> bytes) {
    if (!free_slots_.empty()) {
      const std::uint32_t s = free_slots_.back();
      free_slots_.pop_back();
      payloads_[s] = std::move(bytes);
      return s;
    }
    payloads_.push_back(std::move(bytes));
    return static_cast<std::uint32_t>(payloads_.size() - 1);
  }
  std::vector<std::uint8_t> Take(std::uint32_t s) {
    free_slots_.push_back(s);
    return std::move(payloads_[s]);
  }

  // Lease liveness of j as node i last saw the API.
  bool LeaseLive(int i, int j) {
    const Node& x = node(i);
    SteadyTime renewed = node(j).last_renew;
    if (x.api_cut) renewed = std::min(renewed, x.api_cut_at);
    return now_ < renewed + p_.lease.duration;
  }
  // Node i's view of j: the override Sync set (heartbeats), else the lease.
  bool Live(int i, int j) {
    Node& x = node(i);
    if (i == j) return x.healthy;
    if (auto ov = x.membership->OverrideFor(node(j).name, now_)) {
      return ov->state == election::Liveness::kAlive;
    }
    return LeaseLive(i, j);
  }

  std::uint32_t Holder(std::uint32_t a) {
    const auto& v = announced_[a];
    return v.empty() ? kNone : v.front();
  }

  const std::vector<std::uint32_t>& Ranking(std::uint32_t a) { return ranks_.top[a]; }

  // The elector's rule in node i's view: the recorded announcer keeps the address while live;
  // else the first live node in election order.
  std::uint32_t Winner(int i, std::uint32_t a) {
    const std::uint32_t h = Holder(a);
    if (h != kNone && Live(i, static_cast<int>(h))) return h;
    for (auto j : Ranking(a)) {
      if (Live(i, static_cast<int>(j))) return j;
    }
    return Extended(i, a);
  }
  std::uint32_t Extended(int i, std::uint32_t a);

  void Pass(int i) {
    Node& x = node(i);
    if (x.down) return;
    const bool lease_ok = now_ < x.last_renew + p_.lease.deadline;
    const auto r = x.engine->Sync(*x.membership, {lease_ok, false, true}, now_);
    Arm(i);  // the eligible flag may have changed
    const bool healthy = r.health == heartbeat::SelfHealth::kHealthy;
    const bool health_changed = healthy != x.healthy;
    x.healthy = healthy;
    // Whose liveness may have changed in this node's view: the nodes it believed dead, the nodes
    // crashed or cut off (their leases lapse), and the nodes the engine overrode before this Sync
    // or overrides now; every node while split or cut from the API (leases seen as lapsing).
    std::set<std::uint32_t> check = x.believed_dead;
    check.insert(down_.begin(), down_.end());
    check.insert(x.overridden.begin(), x.overridden.end());
    x.overridden.clear();
    for (const auto& name : x.engine->overridden()) x.overridden.push_back(IndexOf(name));
    check.insert(x.overridden.begin(), x.overridden.end());
    if (split_ || x.api_cut) {
      for (int j = 0; j < n_; ++j) check.insert(static_cast<std::uint32_t>(j));
    }
    std::set<std::uint32_t> affected = x.pending;
    for (auto j : check) {
      if (static_cast<int>(j) == i) continue;
      const bool live = Live(i, static_cast<int>(j));
      const bool was = x.believed_dead.count(j) == 0;
      if (live == was) continue;
      if (live) {
        x.believed_dead.erase(j);
      } else {
        x.believed_dead.insert(j);
      }
      for (auto a : ranks_.index[j]) affected.insert(a);
      // And what j holds though it ranks low (stickiness after earlier moves).
      const auto& held = node(static_cast<int>(j)).held;
      affected.insert(held.begin(), held.end());
    }
    if (health_changed) affected.insert(x.held.begin(), x.held.end());
    bool announced_changed = false;
    for (auto a : affected) {
      const bool wins = healthy && Winner(i, a) == static_cast<std::uint32_t>(i);
      if (wins) {
        if (x.held.count(a) == 0) x.pending.insert(a);
      } else {
        x.pending.erase(a);
        if (x.held.count(a) != 0) {
          Withdraw(i, a);
          announced_changed = true;
        }
      }
    }
    if (!healthy) x.pending.clear();
    // The successor's wire check.
    std::vector<agent::TakeoverCandidate> cands;
    std::map<NodeName, agent::HolderSigns> holders;
    std::vector<std::uint32_t> direct;
    for (auto a : x.pending) {
      const std::uint32_t h = Holder(a);
      if (h == kNone || h == static_cast<std::uint32_t>(i)) {
        direct.push_back(a);
        continue;
      }
      const Node& hn = node(static_cast<int>(h));
      cands.push_back(agent::TakeoverCandidate{vips_[a], "eth0", 2, hn.name});
      if (holders.count(hn.name) == 0) {
        agent::HolderSigns s;
        s.member = true;
        s.live = Live(i, static_cast<int>(h));
        if (auto p = x.engine->Peer(hn.name); p && p->last_heard) {
          s.last_alive = p->last_heard;
        } else {
          s.last_alive = hn.last_renew;
        }
        s.macs = {mac_};
        s.kube_proxy_url = "http://" + hn.ep.address.ToString() + ":10256/healthz";
        holders[hn.name] = s;
      }
    }
    for (auto a : direct) {
      TakeOver(i, a);
      announced_changed = true;
    }
    const auto d = x.gate.Decide(cands, holders, now_);
    deferred_ += d.deferred.size();
    for (const auto& job : d.start) StartCheck(i, job);
    for (const auto& [ip, why] : d.allowed) {
      TakeOver(i, AddressIndex(ip));
      announced_changed = true;
    }
    if (auto w = x.gate.NextWakeup()) SchedulePass(i, *w);
    // Cut from the API: the pass that finds the lease unhealthy.
    if (x.api_cut && lease_ok) SchedulePass(i, x.last_renew + p_.lease.deadline + milliseconds(1));
    // Split-brain resolution from the peers' heartbeats, where another node announces a held
    // address too (elsewhere it has nothing to resolve but a peer's stale list, ignored here).
    if (x.contested > 0) {
      std::vector<net::IpAddress> mine;
      for (auto a : x.held) mine.push_back(vips_[a]);
      for (const auto& ip : x.engine->AddressesToYield(mine, now_)) {
        Withdraw(i, AddressIndex(ip));
        announced_changed = true;
      }
    }
    if (announced_changed) PublishAnnounced(i);
  }

  std::uint32_t AddressIndex(const net::IpAddress& ip) {
    return static_cast<std::uint32_t>(ip.value() - vips_.front().value());
  }

  void StartCheck(int i, const agent::WireCheckJob& job) {
    ++wire_checks_;
    const int h = static_cast<int>(IndexOf(job.holder));
    agent::WireCheckResult r;
    r.address = job.address;
    r.holder = job.holder;
    // One ARP probe, answers collected for 50 ms; then, if the holder answered, its kube-proxy.
    const bool answers = !node(h).down && Reachable(i, h) && Reachable(h, i) && !Lost() && !Lost();
    r.holder_answers = answers;
    if (answers) r.answered_by = mac_;
    r.kube_proxy_ok = answers && !Lost();
    std::uint32_t slot;
    if (!free_checks_.empty()) {
      slot = free_checks_.back();
      free_checks_.pop_back();
      checks_[slot] = r;
    } else {
      checks_.push_back(r);
      slot = static_cast<std::uint32_t>(checks_.size() - 1);
    }
    Push(now_ + milliseconds(50) + (answers ? Latency() * 2 : Duration::zero()), Kind::kCheckDone,
         i, 0, slot);
  }

  void TakeOver(int i, std::uint32_t a) {
    Node& x = node(i);
    x.pending.erase(a);
    if (x.held.count(a) != 0) return;
    auto& v = announced_[a];
    for (auto h : v) {
      const int hi = static_cast<int>(h);
      if (hi != i && !node(hi).down && Reachable(i, hi) && Reachable(hi, i)) ++false_takeovers_;
    }
    // A crashed holder's record is replaced.
    std::vector<std::uint32_t> next = v;
    std::erase_if(next, [&](std::uint32_t h) { return node(static_cast<int>(h)).down; });
    next.push_back(static_cast<std::uint32_t>(i));
    SetAnnouncers(a, std::move(next));
    x.held.insert(a);
    ++moves_;
    if (auto w = watch_.find(a); w != watch_.end()) {
      CrashRecord& c = crash_records_[w->second];
      latency_ms_.push_back(Ms(now_ - c.at));
      c.last_taken = now_;
      --c.pending;
      watch_.erase(w);
    }
  }

  // Replaces the announcers of `a`, keeping each node's count of contested addresses.
  void SetAnnouncers(std::uint32_t a, std::vector<std::uint32_t> next) {
    auto& v = announced_[a];
    if (v.size() > 1) {
      for (auto x : v) --node(static_cast<int>(x)).contested;
    }
    v = std::move(next);
    if (v.size() > 1) {
      for (auto x : v) ++node(static_cast<int>(x)).contested;
    }
  }

  void Withdraw(int i, std::uint32_t a) {
    node(i).held.erase(a);
    std::vector<std::uint32_t> next = announced_[a];
    std::erase(next, static_cast<std::uint32_t>(i));
    SetAnnouncers(a, std::move(next));
  }

  const Params& p_;
  const int n_;
  NetModel net_;
  const Rankings& ranks_;
  const std::vector<net::IpAddress>& vips_;
  std::mt19937_64 rng_;
  heartbeat::KeyRing keys_;
  net::MacAddress mac_;
  std::vector<Node> nodes_;
  std::shared_ptr<heartbeat::PeerTable> table_;
  std::vector<std::vector<std::uint32_t>> announced_;  // by address: announcers, recorded first
  std::set<std::uint32_t> down_;                       // crashed or cut off
  bool split_ = false;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  SteadyTime now_ = SteadyTime{} + std::chrono::hours(1);
  std::vector<std::vector<std::uint8_t>> payloads_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<agent::WireCheckResult> checks_;
  std::vector<std::uint32_t> free_checks_;
  std::map<std::uint32_t, std::uint64_t> watch_;  // address of a crashed holder -> crash record
  std::map<int, std::uint64_t> last_crash_;       // node -> its last crash record
  std::vector<CrashRecord> crash_records_;
  std::vector<double> latency_ms_;
  SteadyTime traffic_since_ = now_;

 public:
 private:
  std::uint64_t not_taken_ = 0, false_takeovers_ = 0, false_dead_ = 0, wire_checks_ = 0,
                deferred_ = 0, moves_ = 0;
};

// All top-ranked nodes of `a` are dead in i's view: the rest of the order (rare; computed on
// demand, not cached).
std::uint32_t World::Extended(int i, std::uint32_t a) {
  static std::unique_ptr<election::Sha256Hasher> hasher = *election::Sha256Hasher::Create();
  std::vector<std::pair<std::uint64_t, std::uint32_t>> all;
  const std::string text = vips_[a].ToString();
  for (int j = 0; j < n_; ++j) {
    all.emplace_back(election::DigestRank(hasher->Hash(NameOf(j), text)),
                     static_cast<std::uint32_t>(j));
  }
  std::sort(all.begin(), all.end());
  for (const auto& [rank, j] : all) {
    if (Live(i, static_cast<int>(j))) return j;
  }
  return kNone;
}

Rankings Rank(int n, const std::vector<net::IpAddress>& vips) {
  auto hasher = *election::Sha256Hasher::Create();
  Rankings r;
  r.top.resize(vips.size());
  r.index.resize(static_cast<std::size_t>(n));
  std::vector<std::pair<std::uint64_t, std::uint32_t>> all(static_cast<std::size_t>(n));
  std::vector<std::string> names;
  for (int j = 0; j < n; ++j) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "node-%05d", j);
    names.emplace_back(buf);
  }
  for (std::uint32_t a = 0; a < vips.size(); ++a) {
    const std::string text = vips[a].ToString();
    for (int j = 0; j < n; ++j) {
      all[static_cast<std::size_t>(j)] = {
          election::DigestRank(hasher->Hash(names[static_cast<std::size_t>(j)], text)),
          static_cast<std::uint32_t>(j)};
    }
    const std::size_t k = std::min<std::size_t>(kTopK, all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
    for (std::size_t t = 0; t < k; ++t) {
      r.top[a].push_back(all[t].second);
      r.index[all[t].second].push_back(a);
    }
  }
  return r;
}

// --- cost of the wire ------------------------------------------------------------------------

struct CodecCost {
  double encode_us = 0, decode_us = 0;
};

CodecCost MeasureCodec(std::size_t addresses) {
  const auto keys = *heartbeat::KeyRing::Create({"segment-sim-key-0123456789abcdef"});
  heartbeat::Heartbeat hb;
  hb.node = NodeName("node-00042");
  hb.boot_id = 7;
  for (std::size_t i = 0; i < std::min<std::size_t>(addresses, 300); ++i) {
    hb.addresses.push_back(net::IpAddress::V4(0xc6120000u + static_cast<std::uint32_t>(i)));
  }
  // Thread CPU time, the best of several batches (the box is shared).
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::duration<double, std::micro>(std::chrono::seconds(ts.tv_sec) +
                                                     std::chrono::nanoseconds(ts.tv_nsec));
  };
  constexpr int kRounds = 4000;
  CodecCost c{1e9, 1e9};
  std::vector<std::uint8_t> bytes;
  for (int batch = 0; batch < 7; ++batch) {
    const auto t0 = cpu_now();
    for (int i = 0; i < kRounds; ++i) {
      hb.sequence = static_cast<std::uint64_t>(i) + 1;
      bytes = *heartbeat::Encode(hb, keys);
    }
    const auto t1 = cpu_now();
    std::size_t ok = 0;
    for (int i = 0; i < kRounds; ++i) ok += heartbeat::Decode(bytes, keys) ? 1 : 0;
    const auto t2 = cpu_now();
    if (ok != kRounds) std::fprintf(stderr, "decode failed\n");
    c.encode_us = std::min(c.encode_us, (t1 - t0).count() / kRounds);
    c.decode_us = std::min(c.decode_us, (t2 - t1).count() / kRounds);
  }
  return c;
}

// Resident memory of this process (kB) from /proc/self/status: "VmRSS" now, "VmHWM" the peak.
long StatusKb(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  const std::size_t len = std::strlen(field);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') {
      kb = std::strtol(line + len + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb;
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// --- scenarios -------------------------------------------------------------------------------

std::vector<net::IpAddress> Vips(int count) {
  std::vector<net::IpAddress> v;
  for (int a = 0; a < count; ++a) {
    v.push_back(net::IpAddress::V4(0xc6120000u + static_cast<std::uint32_t>(a)));  // 198.18/15
  }
  return v;
}

// Crashes `crashes` nodes one after the other (one every `gap`); each comes back once its
// addresses are served elsewhere or after the lease duration plus 5 s.
RunResult CrashRun(const Params& p, int n, double loss, const Rankings& ranks,
                   const std::vector<net::IpAddress>& vips, int crashes) {
  const auto wall0 = std::chrono::steady_clock::now();
  NetModel net;
  net.loss = loss / 100.0;
  World w(p, n, net, ranks, vips, p.seed * 1000003u + static_cast<std::uint64_t>(n));
  RunResult r;
  r.n = n;
  r.loss = loss;
  const SteadyTime start = w.Now();
  w.RunUntil(start + seconds(6));  // every detector hears its peers; the start-up linger is over
  w.ResetTraffic();
  w.RunUntil(w.Now() + seconds(10));
  {
    RunResult idle;
    w.Fill(idle);
    r.idle_sent_mean = idle.sent_mean;
    r.idle_sent_max = idle.sent_max;
  }
  w.ResetTraffic();
  std::mt19937_64 pick(p.seed + 17);
  const Duration gap = milliseconds(1000);
  // A crashed node comes back once its addresses are served elsewhere (at least half a gap
  // later), or after its lease duration plus 5 s; at most max(1, N/10) nodes are down at once.
  // Crashes come half a gap after restarts: a crash right as its successor restarts would leave
  // the successor to the lease (it never heard the crashed node), which is real but rare.
  const Duration give_up = p.lease.duration + seconds(5);
  const std::size_t max_down = static_cast<std::size_t>(std::max(1, n / 10));
  std::vector<std::pair<int, SteadyTime>> down;
  SteadyTime t = w.Now();
  int done = 0;
  while (done < crashes || !down.empty()) {
    if (done < crashes && down.size() < max_down) {
      int victim = 0;
      do {
        victim = static_cast<int>(pick() % static_cast<std::uint64_t>(n));
      } while (w.IsDown(victim) || w.HeldBy(victim) == 0);
      w.Crash(victim);
      down.emplace_back(victim, t);
      ++done;
    }
    t += gap / 2;
    w.RunUntil(t);
    std::erase_if(down, [&](const auto& d) {
      const Duration since = t - d.second;
      if ((w.Untaken(d.first) == 0 && since >= gap / 2) || since >= give_up) {
        w.Restart(d.first);
        return true;
      }
      return false;
    });
    t += gap / 2;
    w.RunUntil(t);
  }
  w.RunUntil(t + seconds(1));
  w.Fill(r);
  r.cpu_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

// Runs `w` for 10 s in 10 ms steps and returns when, after `since`, every address first had
// exactly one announcer again (ms), or nullopt.
std::optional<double> UntilSingle(World& w, SteadyTime since) {
  std::optional<double> single;
  for (int step = 0; step < 1000; ++step) {
    w.RunUntil(w.Now() + milliseconds(10));
    const auto cov = w.Count();
    if (!single && cov.doubled == 0 && cov.unserved == 0) single = Ms(w.Now() - since);
  }
  return single;
}

void PartitionRuns(const Params& p, int n, const Rankings& ranks,
                   const std::vector<net::IpAddress>& vips) {
  const NetModel net;
  // One node cut off (segment and API) for 20 s, or its renew deadline + 5 s if longer.
  {
    World w(p, n, net, ranks, vips, p.seed * 7 + static_cast<std::uint64_t>(n));
    w.RunUntil(w.Now() + seconds(2));
    const int c = 0;
    const auto addrs = w.Held(c);
    const SteadyTime t0 = w.Now();
    const Duration cut_for = std::max<Duration>(seconds(20), p.lease.deadline + seconds(5));
    w.Cut(c, true);
    std::optional<double> others_all, withdrew;
    const std::uint64_t ft0 = w.false_takeovers();
    while (w.Now() < t0 + cut_for) {
      w.RunUntil(w.Now() + milliseconds(10));
      if (!others_all && w.AnnouncedByOthers(addrs, c) == addrs.size()) {
        others_all = Ms(w.Now() - t0);
      }
      if (!withdrew && w.HeldBy(c) == 0) withdrew = Ms(w.Now() - t0);
    }
    const SteadyTime t1 = w.Now();
    const std::size_t doubled_at_heal = w.Count().doubled;
    w.Cut(c, false);
    const std::optional<double> single = UntilSingle(w, t1);
    std::printf(
        "  N=%-5d one node cut off for %.0f s (it held %zu addresses): others announce them "
        "all after %.0f ms; the cut node withdrew after %.0f ms%s; at the heal %zu "
        "addresses doubled, %s; false takeovers elsewhere %" PRIu64 "\n",
        n, Ms(cut_for) / 1000, addrs.size(), others_all.value_or(NAN), withdrew.value_or(NAN),
        withdrew ? "" : " (never, still announcing at the heal)", doubled_at_heal,
        single ? ("every address single again " + std::to_string(static_cast<long>(*single)) +
                  " ms later")
                     .c_str()
               : "still doubled or unserved 10 s later",
        w.false_takeovers() - ft0);
  }
  // The segment split in two halves for 5 s (the API reachable from both), then healed.
  {
    World w(p, n, net, ranks, vips, p.seed * 11 + static_cast<std::uint64_t>(n));
    w.RunUntil(w.Now() + seconds(2));
    std::vector<int> group(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) group[static_cast<std::size_t>(i)] = i < n / 2 ? 0 : 1;
    const std::uint64_t moves0 = w.moves();
    const SteadyTime t0 = w.Now();
    w.Split(group);
    std::optional<double> all_doubled;
    std::size_t peak = 0;
    for (int step = 0; step < 500; ++step) {
      w.RunUntil(w.Now() + milliseconds(10));
      const auto cov = w.Count();
      peak = std::max(peak, cov.doubled);
      if (!all_doubled && cov.doubled == vips.size()) all_doubled = Ms(w.Now() - t0);
    }
    const std::uint64_t moves_split = w.moves() - moves0;
    const SteadyTime t1 = w.Now();
    w.Heal();
    const std::optional<double> single = UntilSingle(w, t1);
    std::printf(
        "  N=%-5d split in two for 5 s: each half took the other's addresses (%zu of %zu served "
        "on both sides at the peak%s, %" PRIu64
        " takeovers); healed: %s; moves after the heal %" PRIu64 "\n",
        n, peak, vips.size(),
        all_doubled
            ? (", all after " + std::to_string(static_cast<long>(*all_doubled)) + " ms").c_str()
            : "",
        moves_split,
        single ? ("every address single again after " + std::to_string(static_cast<long>(*single)) +
                  " ms")
                     .c_str()
               : "still doubled or unserved after 10 s",
        w.moves() - moves0 - moves_split);
  }
}

// --- command line ----------------------------------------------------------------------------

std::vector<double> ParseList(const char* s) {
  std::vector<double> v;
  std::string t(s);
  std::size_t pos = 0;
  while (pos <= t.size()) {
    const auto comma = t.find(',', pos);
    const std::string part =
        t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!part.empty()) v.push_back(std::strtod(part.c_str(), nullptr));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

int Main(int argc, char** argv) {
  Params p;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--nodes") {
      p.nodes.clear();
      for (double d : ParseList(value())) p.nodes.push_back(static_cast<int>(d));
    } else if (a == "--addresses") {
      p.addresses = std::atoi(value());
    } else if (a == "--crashes") {
      p.crashes.clear();
      for (double d : ParseList(value())) p.crashes.push_back(static_cast<int>(d));
      if (p.crashes.empty()) p.crashes = {100};
    } else if (a == "--loss") {
      p.loss = ParseList(value());
    } else if (a == "--seed") {
      p.seed = std::strtoull(value(), nullptr, 10);
    } else if (a == "--interval-ms") {
      p.interval = milliseconds(std::atoi(value()));
    } else if (a == "--lease") {
      const std::string v = value();
      p.lease = v == "quiet" ? kQuiet : kLoud;
    } else if (a == "--max-all-to-all") {
      p.max_all_to_all = std::atoi(value());
    } else if (a == "--no-partitions") {
      p.partitions = false;
    } else if (a == "--max-partition-nodes") {
      p.max_partition_nodes = std::atoi(value());
    } else if (a == "--quick") {
      p.nodes = {10, 100};
      p.crashes = {20};
      p.addresses = 2000;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--nodes 10,100,250,1000,5000] [--addresses 10000] "
                   "[--crashes 100[,per size...]] [--loss 0,1,5] [--seed 1] [--interval-ms 100] "
                   "[--lease loud|quiet] [--max-all-to-all 250] [--no-partitions] "
                   "[--max-partition-nodes 1000] [--quick]\n",
                   argv[0]);
      return 2;
    }
  }
  log::SetLevel(log::Level::kError);
  const auto vips = Vips(p.addresses);
  std::printf(
      "segment simulation: %d addresses, interval %.0f ms, miss count 3, lease %s (renew "
      "%.0f s, duration %.0f s), latency 0.2 ms + up to 1 ms, seed %" PRIu64 "\n",
      p.addresses, Ms(p.interval), p.lease.name, Ms(p.lease.renew) / 1000,
      Ms(p.lease.duration) / 1000, p.seed);
  const double rounds_per_s = 1000.0 / Ms(p.interval) / 0.95;  // 0.9..1.0 x interval
  std::printf("\nlease API load per agent (every agent watches every node lease):\n");
  std::printf("  %-6s %-22s %-22s\n", "N", "loud 2 s/10 s", "quiet 10 s/40 s");
  for (int n : p.nodes) {
    std::printf("  %-6d %5.2f writes/s %6.0f watch/s  %5.2f writes/s %6.0f watch/s\n", n, 1.0 / 2,
                (n - 1) / 2.0, 1.0 / 10, (n - 1) / 10.0);
  }

  // The engine's fan-out, measured on a small segment: all-to-all sends N - 1 datagrams a round.
  constexpr int kProbeNodes = 20;
  double probe_fanout = 0;
  {
    const auto pv = Vips(100);
    const auto pr = Rank(kProbeNodes, pv);
    World w(p, kProbeNodes, NetModel{}, pr, pv, 1);
    w.RunUntil(w.Now() + seconds(1));
    probe_fanout = w.Fanout();
  }
  std::printf("\nengine fan-out on a %d-node segment: %.1f datagrams per round (%s)\n", kProbeNodes,
              probe_fanout, probe_fanout + 1.5 >= kProbeNodes ? "all-to-all" : "bounded");
  for (const int& n : p.nodes) {
    const CodecCost codec = MeasureCodec(static_cast<std::size_t>(p.addresses / n));
    const bool all_to_all = probe_fanout + 1.5 >= kProbeNodes;
    const double fanout = all_to_all ? n - 1 : probe_fanout;
    (void)fanout;
    if (all_to_all && n > p.max_all_to_all) {
      const double dps = static_cast<double>(n - 1) * rounds_per_s;
      std::printf(
          "\nN=%d: all-to-all above --max-all-to-all %d: not simulated (the simulation would "
          "decode %.0f million datagrams per simulated second); implied per node: %.0f datagrams/s "
          "sent and received, %.0f us CPU/s (encode %.2f us, decode %.2f us)\n",
          n, p.max_all_to_all, static_cast<double>(n) * dps / 1e6, dps,
          rounds_per_s * codec.encode_us + dps * codec.decode_us, codec.encode_us, codec.decode_us);
      continue;
    }
    const auto n_wall0 = std::chrono::steady_clock::now();
    const double n_cpu0 = ProcessCpuSeconds();
    const auto ranks = Rank(n, vips);
    std::printf("\nN=%d: encode %.2f us, decode %.2f us per datagram\n", n, codec.encode_us,
                codec.decode_us);
    std::printf("  %-5s %-7s %-15s %-15s %-15s %-9s %-26s %-8s %-9s %-8s %-8s %-6s\n", "loss",
                "crashes", "idle sent/s", "sent/s mean max", "recv/s mean max", "CPU us/s",
                "crash->announce p50 p99 max", "per-crash", "not taken", "false-dead", "false-take",
                "wall s");
    for (double loss : p.loss) {
      const std::size_t at = static_cast<std::size_t>(&n - p.nodes.data());
      RunResult r =
          CrashRun(p, n, loss, ranks, vips, p.crashes[std::min(at, p.crashes.size() - 1)]);
      const double cpu = r.rounds_mean * codec.encode_us + r.recv_mean * codec.decode_us;
      std::printf(
          "  %4.0f%% %-7d %6.0f %7.0f  %6.0f %7.0f  %6.0f %7.0f  %8.0f  %7.0f %7.0f %7.0f ms   "
          "%6.0f "
          "ms %-9" PRIu64 " %-10" PRIu64 " %-10" PRIu64 " %.0f\n",
          loss, r.crashes, r.idle_sent_mean, r.idle_sent_max, r.sent_mean, r.sent_max, r.recv_mean,
          r.recv_max, cpu, Percentile(r.latency_ms, 0.5), Percentile(r.latency_ms, 0.99),
          Percentile(r.latency_ms, 1.0), Percentile(r.crash_ms, 0.99), r.not_taken, r.false_dead,
          r.false_takeovers, r.cpu_wall_s);
      std::fflush(stdout);
    }
    if (p.partitions && n <= p.max_partition_nodes) PartitionRuns(p, n, ranks, vips);
    std::printf("  N=%d: %.0f s wall, %.0f s CPU; memory: %.0f MB resident, %.0f MB peak so far\n",
                n,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - n_wall0).count(),
                ProcessCpuSeconds() - n_cpu0, static_cast<double>(StatusKb("VmRSS")) / 1024,
                static_cast<double>(StatusKb("VmHWM")) / 1024);
    std::fflush(stdout);
  }
  std::printf(
      "\ncolumns: idle sent/s = datagrams sent per node per second over 10 s at rest before the "
      "crashes (heartbeats only); sent/recv = heartbeat and report datagrams per node per second "
      "over the crash run, one crash a second (crashed nodes included); CPU = rounds x encode + "
      "received x decode (HMAC included); "
      "crash->announce = from the crash to a new node announcing, per address; per-crash = p99 "
      "over crashes of the last address served; not taken = addresses of a crashed node nobody "
      "took before it came back; false-dead = detector verdicts kDead on a live, reachable peer; "
      "false-take = addresses taken while their holder was alive and reachable\n");
  return 0;
}

}  // namespace
}  // namespace pylon::sim

int main(int argc, char** argv) { return pylon::sim::Main(argc, argv); }
