// TakeoverGate (src/agent/takeover.h): the successor's wire check, as scenario tables with the
// checks answered by the test (no sockets, no clock).
#include "agent/takeover.h"

#include <gtest/gtest.h>

namespace pylon::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const net::IpAddress kIp = *net::IpAddress::Parse("192.0.2.50");
const NodeName kHolder("node1");
const net::MacAddress kHolderMac({2, 0, 0, 0, 0, 1});
const net::MacAddress kOtherMac({2, 0, 0, 0, 0, 9});
const SteadyTime kT0 = SteadyTime{} + seconds(1000);

TakeoverCandidate Candidate() { return TakeoverCandidate{kIp, "eth0", 2, kHolder}; }

// A holder that fell silent at kT0: a member whose lease is not released, not live.
HolderSigns Silent() {
  HolderSigns s;
  s.member = true;
  s.last_alive = kT0;
  s.macs = {kHolderMac};
  s.kube_proxy_url = "http://192.0.2.11:10256/healthz";
  return s;
}

WireCheckResult Answer(bool holder, bool kube_proxy, std::optional<net::MacAddress> mac) {
  return WireCheckResult{kIp, kHolder, holder, mac, kube_proxy, "test"};
}

struct Outcome {
  bool checked = false;               // a check was started on the first pass
  std::optional<MoveReason> allowed;  // the verdict after the check (or at once)
  bool deferred = false;              // withheld, with one deferral note
};

Outcome RunGate(const HolderSigns* signs, std::optional<WireCheckResult> result,
                WireCheckJob* job = nullptr) {
  TakeoverGate gate(TakeoverGateOptions{seconds(3), milliseconds(200), seconds(1)});
  std::map<NodeName, HolderSigns> holders;
  if (signs) holders[kHolder] = *signs;
  Outcome o;
  auto d = gate.Decide({Candidate()}, holders, kT0 + milliseconds(300));
  if (auto it = d.allowed.find(kIp); it != d.allowed.end()) {
    EXPECT_TRUE(d.start.empty());
    EXPECT_FALSE(d.withhold.count(kIp));
    o.allowed = it->second;
    return o;
  }
  EXPECT_EQ(d.start.size(), 1u);
  EXPECT_TRUE(d.withhold.count(kIp));
  o.checked = !d.start.empty();
  if (job && o.checked) *job = d.start.front();
  if (!result) return o;
  gate.Record(*result, kT0 + milliseconds(310));
  d = gate.Decide({Candidate()}, holders, kT0 + milliseconds(320));
  if (auto it = d.allowed.find(kIp); it != d.allowed.end()) {
    EXPECT_FALSE(d.withhold.count(kIp));
    o.allowed = it->second;
  } else {
    EXPECT_TRUE(d.withhold.count(kIp));
    o.deferred = d.deferred.size() == 1 && d.deferred[0].holder == kHolder;
    EXPECT_TRUE(d.start.empty()) << "a recheck before the recheck interval";
  }
  return o;
}

TEST(TakeoverGate, FirstVerdicts) {
  HolderSigns gone;  // no lease
  HolderSigns leaving = Silent();
  leaving.leaving = true;
  HolderSigns excluded = Silent();
  excluded.excluded = true;
  HolderSigns released = Silent();
  released.released = true;
  HolderSigns live = Silent();
  live.live = true;
  HolderSigns no_mac = Silent();
  no_mac.macs.clear();
  HolderSigns no_kube_proxy = Silent();
  no_kube_proxy.kube_proxy_url.clear();
  HolderSigns restarting = Silent();
  restarting.restarting = true;
  restarting.kube_proxy_url.clear();
  const HolderSigns silent = Silent();
  struct Case {
    const char* name;
    const HolderSigns* signs;
    std::optional<WireCheckResult> result;
    Outcome want;
  };
  // Answers: nobody; the holder's kernel with its kube-proxy failing; both; another host; none.
  const auto nobody = Answer(false, false, std::nullopt);
  const auto no_proxy = Answer(true, false, kHolderMac);
  const auto serving = Answer(true, true, kHolderMac);
  const auto other_host = Answer(false, false, kOtherMac);
  const WireCheckResult failed{kIp, kHolder, false, std::nullopt, false, "probe failed"};
  // Outcomes: allowed at once (no check), allowed after the check, deferred after it.
  auto at_once = [](MoveReason r) { return Outcome{false, r, false}; };
  auto checked = [](MoveReason r) { return Outcome{true, r, false}; };
  const Outcome defer{true, std::nullopt, true};
  // clang-format off
  const std::vector<Case> cases = {
      {"holder unknown (no lease)", nullptr, {}, at_once(MoveReason::kPlanned)},
      {"lease deleted", &gone, {}, at_once(MoveReason::kPlanned)},
      {"heartbeat said leaving", &leaving, {}, at_once(MoveReason::kPlanned)},
      {"holder excluded (being deleted)", &excluded, {}, at_once(MoveReason::kPlanned)},
      {"released (its kube-proxy fails): withdrawn, nobody answers", &released, nobody, checked(MoveReason::kKubeProxy)},
      {"released, answers, its kube-proxy fails", &released, no_proxy, checked(MoveReason::kKubeProxy)},
      {"released by a restarted agent not checked yet, node serving: defer", &released, serving, defer},
      {"holder alive: an election input changed", &live, {}, at_once(MoveReason::kElection)},
      {"holder's MACs unknown", &no_mac, {}, at_once(MoveReason::kCrash)},
      {"holder's kube-proxy cannot be checked", &no_kube_proxy, {}, at_once(MoveReason::kCrash)},
      {"silent, nobody answers (frozen / crashed node)", &silent, nobody, checked(MoveReason::kCrash)},
      {"silent, another host answers", &silent, other_host, checked(MoveReason::kCrash)},
      {"silent, the probe could not run", &silent, failed, checked(MoveReason::kCrash)},
      {"silent, holder answers, kube-proxy healthy: defer", &silent, serving, defer},
      {"silent, holder answers, kube-proxy fails", &silent, no_proxy, checked(MoveReason::kCrash)},
      {"restarting, holder answers: defer without kube-proxy", &restarting, no_proxy, defer},
      {"restarting, nobody answers", &restarting, nobody, checked(MoveReason::kCrash)},
  };
  // clang-format on
  for (const auto& c : cases) {
    const Outcome o = RunGate(c.signs, c.result);
    EXPECT_EQ(o.checked, c.want.checked) << c.name;
    EXPECT_EQ(o.allowed, c.want.allowed) << c.name;
    EXPECT_EQ(o.deferred, c.want.deferred) << c.name;
  }
}

TEST(TakeoverGate, JobCarriesTheHolderAndItsKubeProxy) {
  const HolderSigns silent = Silent();
  WireCheckJob job;
  RunGate(&silent, std::nullopt, &job);
  EXPECT_EQ(job.address, kIp);
  EXPECT_EQ(job.interface, "eth0");
  EXPECT_EQ(job.holder, kHolder);
  EXPECT_EQ(job.holder_macs, std::vector<net::MacAddress>{kHolderMac});
  EXPECT_EQ(job.kube_proxy_url, "http://192.0.2.11:10256/healthz");
  HolderSigns restarting = Silent();
  restarting.restarting = true;
  RunGate(&restarting, std::nullopt, &job);
  EXPECT_EQ(job.kube_proxy_url, "") << "a restarting holder vouches for its node";
}

// One address deferred to a holder that still answers, pass after pass, as the agent runs it.
class Episode {
 public:
  explicit Episode(HolderSigns signs) { holders_[kHolder] = std::move(signs); }
  // One pass at kT0 + `ms`, the holder a candidate or not; returns the decision.
  TakeoverGate::Decision Pass(int ms, bool candidate = true) {
    std::vector<TakeoverCandidate> c;
    if (candidate) c.push_back(Candidate());
    auto d = gate_.Decide(c, holders_, kT0 + milliseconds(ms));
    deferred_notes_ += static_cast<int>(d.deferred.size());
    checks_ += static_cast<int>(d.start.size());
    return d;
  }
  void Answered(int ms, const WireCheckResult& r) { gate_.Record(r, kT0 + milliseconds(ms)); }
  // `r` recorded at kT0 + `ms`, then a pass 10 ms later.
  TakeoverGate::Decision AnswerThenPass(int ms, const WireCheckResult& r) {
    Answered(ms, r);
    return Pass(ms + 10);
  }
  std::optional<SteadyTime> Wakeup() const { return gate_.NextWakeup(); }
  int deferred_notes_ = 0;
  int checks_ = 0;

 private:
  TakeoverGate gate_{TakeoverGateOptions{seconds(3), milliseconds(200), seconds(1)}};
  std::map<NodeName, HolderSigns> holders_;
};

TEST(TakeoverGate, DefersUntilTheHolderStopsAnswering) {
  const auto serving = Answer(true, true, kHolderMac);
  const auto nobody = Answer(false, false, std::nullopt);
  Episode e(Silent());
  EXPECT_TRUE(e.Pass(300).withhold.count(kIp));
  EXPECT_TRUE(e.AnswerThenPass(310, serving).withhold.count(kIp));
  EXPECT_EQ(e.Wakeup(), kT0 + milliseconds(510)) << "recheck 200 ms after the answer";
  // The recheck starts at its time, and the address stays withheld while it runs.
  auto d = e.Pass(510);
  EXPECT_EQ(d.start.size(), 1u);
  EXPECT_TRUE(d.withhold.count(kIp));
  EXPECT_EQ(e.Wakeup(), std::nullopt) << "the checker wakes the loop";
  EXPECT_TRUE(e.AnswerThenPass(520, serving).withhold.count(kIp));
  e.Pass(720);
  // One check without an answer: confirmed at once by another, still withheld.
  d = e.AnswerThenPass(730, nobody);
  EXPECT_TRUE(d.withhold.count(kIp));
  EXPECT_EQ(d.start.size(), 1u);
  // It answers again (a lost packet): still deferred.
  EXPECT_TRUE(e.AnswerThenPass(750, serving).withhold.count(kIp));
  e.Pass(950);
  // The holder's lifetime ended: its kernel no longer answers, twice in a row. Taken.
  d = e.AnswerThenPass(960, nobody);
  EXPECT_TRUE(d.withhold.count(kIp));
  EXPECT_EQ(d.start.size(), 1u);
  d = e.AnswerThenPass(980, nobody);
  EXPECT_FALSE(d.withhold.count(kIp));
  EXPECT_EQ(d.allowed.at(kIp), MoveReason::kCrash);
  EXPECT_EQ(e.deferred_notes_, 1) << "one log line per deferral";
  EXPECT_EQ(e.checks_, 6);
}

TEST(TakeoverGate, TakesOverAtTheDeadlineEvenIfTheHolderStillAnswers) {
  Episode e(Silent());  // last alive kT0, lifetime 3 s, margin 1 s: deadline kT0 + 4 s
  e.Pass(300);
  e.Answered(310, Answer(true, true, kHolderMac));
  int t = 320;
  for (; t < 4000; t += 100) {
    auto d = e.Pass(t);
    ASSERT_TRUE(d.withhold.count(kIp)) << t;
    for (size_t i = 0; i < d.start.size(); ++i) e.Answered(t + 5, Answer(true, true, kHolderMac));
  }
  auto d = e.Pass(4000);
  EXPECT_FALSE(d.withhold.count(kIp));
  EXPECT_EQ(d.allowed.at(kIp), MoveReason::kCrash);
  EXPECT_EQ(e.deferred_notes_, 1);
}

TEST(TakeoverGate, HolderComesBackThenFallsSilentAgain) {
  Episode e(Silent());
  e.Pass(300);
  e.Answered(310, Answer(true, true, kHolderMac));
  EXPECT_TRUE(e.Pass(320).withhold.count(kIp));
  // Its agent is back: the election gives the address back to it; nothing is withheld or due.
  auto d = e.Pass(400, /*candidate=*/false);
  EXPECT_TRUE(d.withhold.empty());
  EXPECT_EQ(e.Wakeup(), std::nullopt);
  // A late result of the forgotten check is dropped.
  e.Answered(410, Answer(false, false, std::nullopt));
  // Silent again: a fresh check, a fresh deferral.
  d = e.Pass(500);
  EXPECT_EQ(d.start.size(), 1u);
  EXPECT_TRUE(d.withhold.count(kIp));
  e.Answered(510, Answer(true, true, kHolderMac));
  EXPECT_TRUE(e.Pass(520).withhold.count(kIp));
  EXPECT_EQ(e.deferred_notes_, 2);
}

TEST(TakeoverGate, ResultOfAnotherHolderIsDropped) {
  Episode e(Silent());
  e.Pass(300);
  e.Answered(310, WireCheckResult{kIp, NodeName("node2"), true, kHolderMac, true, "other"});
  auto d = e.Pass(320);
  EXPECT_TRUE(d.withhold.count(kIp)) << "still waiting for its own check";
  EXPECT_TRUE(d.start.empty());
  e.Answered(330, Answer(false, false, std::nullopt));
  EXPECT_EQ(e.Pass(340).allowed.at(kIp), MoveReason::kCrash);
}

TEST(MoveReason, Names) {
  std::set<std::string> names;
  for (auto r : kMoveReasons) names.insert(std::string(MoveReasonName(r)));
  EXPECT_EQ(names, (std::set<std::string>{"crash", "restart-adopted", "planned", "kube-proxy",
                                          "election"}));
}

}  // namespace
}  // namespace pylon::agent
