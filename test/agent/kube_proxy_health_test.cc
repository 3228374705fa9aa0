// kube-proxy eligibility (docs/agent.md "kube-proxy health"): the hysteresis as a scenario table,
// the flags, the checker with an injected probe and clock, and the real HTTP adapter against a
// local server (200 passes; 503, a refused connection and a timeout fail).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/kube_proxy_check.h"
#include "agent/kube_proxy_health.h"
#include "agent/options.h"
#include "common/cli.h"
#include "common/clock.h"
#include "http/server.h"

namespace pylon::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

char Letter(KubeProxyState s) {
  switch (s) {
    case KubeProxyState::kUnknown:
      return 'U';
    case KubeProxyState::kHealthy:
      return 'H';
    case KubeProxyState::kUnhealthy:
      return 'X';
  }
  return '?';
}

// One character per check result: 'P' pass, 'F' fail. Expected state after each: 'U' unknown,
// 'H' healthy, 'X' unhealthy. The hysteresis is 3 failures to leave, 2 passes to return, unless
// a row says otherwise.
struct Scenario {
  std::string name;
  std::string results;
  std::string states;
  int fail_count = 3;
  int pass_count = 2;
};

TEST(KubeProxyHealth, ScenarioTable) {
  const std::vector<Scenario> cases = {
      {"start: not eligible until pass_count passes", "PP", "UH"},
      {"start: one pass is not enough", "PFPP", "UUUH"},
      {"start: kube-proxy never comes up", "FFFF", "UUXX"},
      {"one slow answer does not flap", "PPFPFFPP", "UHHHHHHH"},
      {"two failures in a row are not enough", "PPFFPFF", "UHHHHHH"},
      {"fail_count in a row leaves", "PPFFF", "UHHHX"},
      {"a pass between failures restarts the count", "PPFFPFFF", "UHHHHHHX"},
      {"one pass does not return", "PPFFFPF", "UHHHXXX"},
      {"pass_count in a row returns", "PPFFFPP", "UHHHXXH"},
      {"leave and return twice", "PPFFFPPFFFPP", "UHHHXXHHHXXH"},
      {"fail_count 1: every failure leaves", "PFPF", "HXHX", 1, 1},
      {"pass_count 3", "PPPFFPPFP", "UUHHXXXXX", 2, 3},
      {"long outage then recovery", "PPFFFFFFFFPP", "UHHXXXXXXXXH", 2, 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.results.size(), c.states.size());
    KubeProxyHealth h(c.fail_count, c.pass_count);
    SteadyTime t{seconds(100)};
    std::string got;
    std::optional<SteadyTime> last_change;
    for (char r : c.results) {
      t += seconds(1);
      const KubeProxyState before = h.state();
      auto changed = h.Record(r == 'P', t);
      got += Letter(h.state());
      if (changed) {
        EXPECT_NE(*changed, before);
        EXPECT_EQ(*changed, h.state());
        last_change = t;
      } else {
        EXPECT_EQ(h.state(), before);
      }
      EXPECT_EQ(h.eligible(), h.state() == KubeProxyState::kHealthy);
    }
    EXPECT_EQ(got, c.states);
    EXPECT_EQ(h.since(), last_change);
  }
}

TEST(KubeProxyHealth, Flags) {
  struct Case {
    std::vector<std::string> args;
    bool ok;
    std::string error;  // substring
  };
  const std::vector<Case> cases = {
      {{}, true, ""},
      {{"--kube-proxy-check=off"}, true, ""},
      {{"--kube-proxy-check", "on"}, true, ""},
      {{"--kube-proxy-check=maybe"}, false, "--kube-proxy-check"},
      {{"--kube-proxy-healthz=http://[::1]:10256/healthz"}, true, ""},
      {{"--kube-proxy-healthz=127.0.0.1:10256"}, false, "--kube-proxy-healthz"},
      {{"--kube-proxy-check-interval=500ms", "--kube-proxy-check-timeout=200ms"}, true, ""},
      {{"--kube-proxy-check-interval=10ms"}, false, "--kube-proxy-check-interval"},
      {{"--kube-proxy-check-timeout=2s"}, false, "--kube-proxy-check-timeout"},
      {{"--kube-proxy-check-timeout=soon"}, false, "--kube-proxy-check-timeout"},
      {{"--kube-proxy-fail-count=0"}, false, "--kube-proxy-fail-count"},
      {{"--kube-proxy-pass-count=21"}, false, "--kube-proxy-pass-count"},
      {{"--kube-proxy-pass-count=x"}, false, "--kube-proxy-pass-count"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--node-name", "n1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto o = ParseAgentOptions(args);
    SCOPED_TRACE(args.back());
    ASSERT_EQ(o.has_value(), c.ok) << (o ? "" : o.error().message());
    if (!c.ok) {
      EXPECT_NE(o.error().message().find(c.error), std::string::npos) << o.error().message();
    }
  }
  // Defaults: on, kube-proxy's own health port on the node.
  auto d = ParseAgentOptions({"--node-name", "n1"});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->kube_proxy.enabled);
  EXPECT_EQ(d->kube_proxy.url, "http://127.0.0.1:10256/healthz");
  EXPECT_EQ(d->kube_proxy.interval, seconds(1));
  EXPECT_EQ(d->kube_proxy.timeout, seconds(1));
  EXPECT_EQ(d->kube_proxy.fail_count, 3);
  EXPECT_EQ(d->kube_proxy.pass_count, 2);
  auto s = ParseAgentOptions({"--node-name", "n1", "--kube-proxy-check=off",
                              "--kube-proxy-fail-count", "5", "--kube-proxy-pass-count=4"});
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->kube_proxy.enabled);
  EXPECT_EQ(s->kube_proxy.fail_count, 5);
  EXPECT_EQ(s->kube_proxy.pass_count, 4);
  AgentOptions o;
  EXPECT_NE(NewAgentCommand(&o)->help().find("--kube-proxy-check"), std::string::npos);
}

// The checker with an injected probe and clock: transitions queued once each, with the result
// that caused them; on_change called once per transition.
TEST(KubeProxyChecker, InjectedProbe) {
  FakeClock clock;
  std::vector<Result<int>> answers;
  std::size_t next = 0;
  int changes = 0;
  KubeProxyCheckOptions o;
  auto c = KubeProxyChecker::Create(
      o, clock, [&] { ++changes; }, [&]() -> Result<int> { return answers.at(next++); });
  ASSERT_TRUE(c) << c.error().message();
  auto& k = **c;
  answers = {200,
             200,
             503,
             Fail(ErrorCode::kUnavailable, "connection refused"),
             Fail(ErrorCode::kUnavailable, "timed out"),
             200,
             200};
  std::vector<std::string> states;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    k.CheckOnce();
    clock.Advance(seconds(1));
    states.emplace_back(KubeProxyStateName(k.health().state()));
  }
  EXPECT_EQ(states, (std::vector<std::string>{"unknown", "healthy", "healthy", "healthy",
                                              "unhealthy", "unhealthy", "healthy"}));
  EXPECT_EQ(changes, 3);
  auto t = k.TakeTransitions();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].from, KubeProxyState::kUnknown);
  EXPECT_EQ(t[0].to, KubeProxyState::kHealthy);
  EXPECT_EQ(t[0].last_result, "HTTP 200");
  EXPECT_EQ(t[1].to, KubeProxyState::kUnhealthy);
  EXPECT_NE(t[1].last_result.find("timed out"), std::string::npos) << t[1].last_result;
  EXPECT_EQ(t[2].to, KubeProxyState::kHealthy);
  EXPECT_TRUE(k.TakeTransitions().empty());
  EXPECT_TRUE(k.health().eligible());
}

// The real adapter (CurlTransport) against a local server standing in for kube-proxy's /healthz.
TEST(KubeProxyChecker, RealHttp) {
  std::atomic<int> status{200};
  std::atomic<int> delay_ms{0};
  auto srv = http::Server::Start({}, [&](const http::Request&, http::ResponseWriter& w) {
    if (delay_ms.load() > 0) std::this_thread::sleep_for(milliseconds(delay_ms.load()));
    w.Send(http::Response::Text(status.load(), "{}", "application/json"));
  });
  ASSERT_TRUE(srv) << srv.error().message();
  KubeProxyCheckOptions o;
  o.url = (*srv)->Url() + "/healthz";
  o.timeout = milliseconds(300);
  auto c = KubeProxyChecker::Create(o, SystemClock::Instance(), {});
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ((*c)->CheckOnce(), "HTTP 200");
  EXPECT_EQ((*c)->CheckOnce(), "HTTP 200");
  EXPECT_TRUE((*c)->health().eligible());
  status = 503;  // kube-proxy's answer when its rules are stale
  EXPECT_EQ((*c)->CheckOnce(), "HTTP 503");
  status = 200;
  delay_ms = 1000;  // slower than the per-request timeout
  const auto start = std::chrono::steady_clock::now();
  const std::string slow = (*c)->CheckOnce();
  EXPECT_EQ(slow.rfind("HTTP", 0), std::string::npos) << slow;
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(900));
  EXPECT_TRUE((*c)->health().eligible()) << "two failures: still eligible";
  delay_ms = 0;
  const std::string url = o.url;
  (*srv)->Stop();  // kube-proxy gone: connection refused
  const std::string refused = (*c)->CheckOnce();
  EXPECT_EQ(refused.rfind("HTTP", 0), std::string::npos) << refused;
  EXPECT_FALSE((*c)->health().eligible());
  auto t = (*c)->TakeTransitions();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].to, KubeProxyState::kUnhealthy);
  std::printf("url %s; slow: %s; refused: %s\n", url.c_str(), slow.c_str(), refused.c_str());
}

}  // namespace
}  // namespace pylon::agent
