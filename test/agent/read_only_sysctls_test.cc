// The agent core where /proc/sys is read-only, as in its non-privileged pod, over FakeNetlink:
// strict ARP is checked and reported once per change, and a withdrawal with promote_secondaries=0
// (the kernel default) converges without spinning the loop.
#include <gtest/gtest.h>

#include "agent/agent_metrics.h"
#include "agent/node_sysctls.h"
#include "agent/reconciler.h"
#include "agent_world.h"

namespace pylon::agent::testing {
namespace {

// What a privileged init container (`pylon prepare-node`) does to the node.
void RunPrepareNode(netlink::FakeNetlink& nl) {
  nl.SetSysctlsReadOnly(false);
  ASSERT_TRUE(PrepareNode(nl));
  nl.SetSysctlsReadOnly(true);
}

// Runs the agent loop's schedule for `span` of fake time: sleep until the reconciler's next
// wakeup (at most the loop's 2 s rediscovery period), then a pass. Returns the number of passes,
// stopping at 1000: a wakeup time that is already past makes the real loop spin.
int LoopFor(AgentWorld& w, Duration span, int* node_reports = nullptr) {
  const SteadyTime end = w.clock_.Now() + span;
  int passes = 0;
  while (w.clock_.Now() < end && passes < 1000) {
    const SteadyTime now = w.clock_.Now();
    SteadyTime until = now + seconds(2);
    if (auto t = w.reconciler_->NextWakeup(w.membership_); t && *t < until) until = *t;
    if (until > now) w.Advance(until - now, kNodes);
    auto r = w.Pass();
    if (node_reports && r.node_report) ++*node_reports;
    ++passes;
  }
  return passes;
}

int NodeEvents(const AgentWorld& w, const std::string& reason) {
  int n = 0;
  for (const auto& e : w.writer_.node_events) n += e.reason == reason;
  return n;
}

// --- Defect 3: strict ARP silently off ----------------------------------------------------------

TEST(ReadOnlySysctlsTest, StrictArpOffIsReportedOnceThenInForceOnce) {
  AgentWorld w("node1");
  w.nl_.SetSysctlsReadOnly(true);
  w.services_.push_back(Svc("v", {.ips = {"203.0.113.5"}}));
  auto r = w.Pass();
  EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.5/24"));
  ASSERT_TRUE(r.node_report);
  EXPECT_TRUE(r.node_report->warning);
  EXPECT_EQ(r.node_report->reason, "StrictArpOff");
  EXPECT_NE(r.node_report->message.find("eth0 arp_ignore=0 (want 1)"), std::string::npos)
      << r.node_report->message;
  EXPECT_NE(r.node_report->message.find("Read-only file system"), std::string::npos)
      << r.node_report->message;
  EXPECT_EQ(w.metrics_.Get(kMetricStrictArpOk, {}), 0);
  EXPECT_EQ(w.metrics_.Get(kMetricPromoteSecondariesOk, {}), 0);
  ASSERT_TRUE(w.reconciler_->NodeSysctls());
  EXPECT_FALSE(w.reconciler_->NodeSysctls()->strict_arp_ok());

  // A minute of passes at 10 per second: no new report, no new write attempt.
  const int writes = w.nl_.sysctl_write_attempts();
  int reports = 0;
  for (int i = 0; i < 600; ++i) {
    w.Advance(milliseconds(100), kNodes);
    if (w.Pass().node_report) ++reports;
  }
  EXPECT_EQ(reports, 0);
  EXPECT_EQ(w.nl_.sysctl_write_attempts(), writes);

  // The init container's values: seen at the next recheck, reported once.
  RunPrepareNode(w.nl_);
  reports = 0;
  std::optional<NodeReport> last;
  for (int i = 0; i < 400; ++i) {
    w.Advance(milliseconds(100), kNodes);
    if (auto p = w.Pass(); p.node_report) {
      ++reports;
      last = p.node_report;
    }
  }
  EXPECT_EQ(reports, 1);
  ASSERT_TRUE(last);
  EXPECT_FALSE(last->warning);
  EXPECT_EQ(last->reason, "NodeSysctlsInForce");
  EXPECT_EQ(w.metrics_.Get(kMetricStrictArpOk, {}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricPromoteSecondariesOk, {}), 1);
}

TEST(ReadOnlySysctlsTest, PreparedNodeIsNeverReported) {
  AgentWorld w("node1");
  RunPrepareNode(w.nl_);
  w.services_.push_back(Svc("v", {.ips = {"203.0.113.5"}}));
  int reports = 0;
  LoopFor(w, seconds(60), &reports);
  EXPECT_EQ(reports, 0);
  EXPECT_EQ(w.metrics_.Get(kMetricStrictArpOk, {}), 1);
  EXPECT_EQ(w.nl_.sysctl_write_attempts(), 3);  // prepare-node's own
}

// --- Defect 4: a withdrawal with promote_secondaries=0 -----------------------------------------

struct WithdrawCase {
  std::string name;
  std::vector<std::string> services;  // one virtual address each (all in 203.0.113.0/24)
  std::string foreign;                // an address on kube-lb0 that is not ours, added after
  std::string withdrawn;              // the Service deleted
  std::vector<std::string> kept;      // still on kube-lb0 afterwards (ours and foreign)
  bool deferred;
};

class WithdrawalTest : public ::testing::TestWithParam<WithdrawCase> {};

TEST_P(WithdrawalTest, ConvergesWithoutSpinning) {
  const WithdrawCase& c = GetParam();
  AgentWorld w("node1");
  w.nl_.SetSysctlsReadOnly(true);  // promote_secondaries stays 0 and cannot be set
  // A valid lifetime longer than the test: what goes, goes because it was withdrawn.
  AddressSyncOptions long_lived;
  long_lived.virtual_addresses.valid_lifetime = netlink::Seconds{600};
  w.sync_->SetOptions(long_lived);
  for (const auto& ip : c.services) w.services_.push_back(Svc("svc-" + ip, {.ips = {ip}}));
  w.Pass();
  if (!c.foreign.empty()) w.Host(w.lb0_, c.foreign + "/24");
  LoopFor(w, seconds(15));  // held and renewed
  for (const auto& ip : c.services) ASSERT_TRUE(w.KernelHas(w.lb0_, ip + "/24")) << ip;

  std::erase_if(w.services_,
                [&](const ServiceInput& s) { return s.service.name == "svc-" + c.withdrawn; });
  auto r = w.Pass();
  EXPECT_TRUE(r.sync.errors.empty()) << r.sync.errors[0].message();
  EXPECT_EQ(r.sync.deferred.size(), c.deferred ? 1u : 0u);
  EXPECT_EQ(w.KernelHas(w.lb0_, c.withdrawn + "/24"), c.deferred);
  for (const auto& ip : c.kept) EXPECT_TRUE(w.KernelHas(w.lb0_, ip + "/24")) << ip;
  // The record agrees with the kernel: exactly the Services' addresses that are there.
  std::vector<std::string> want;
  for (const auto& ip : c.services) {
    if (ip != c.withdrawn || c.deferred) want.push_back(ip + "/24");
  }
  EXPECT_EQ(w.OwnAddresses(w.lb0_), want);

  // 20 s of the loop: a handful of passes, not a spin; a deferral reported once.
  EXPECT_LE(LoopFor(w, seconds(20)), 25);
  EXPECT_EQ(NodeEvents(w, "WithdrawalDeferred"), c.deferred ? 1 : 0);
  for (const auto& ip : c.kept) EXPECT_TRUE(w.KernelHas(w.lb0_, ip + "/24")) << ip;
  if (!c.deferred) return;

  // promote_secondaries set on the node: the deferred withdrawal happens at its next retry (within
  // the 30 s cap) and the foreign address stays.
  w.nl_.SetSysctlsReadOnly(false);
  ASSERT_TRUE(w.nl_.WriteSysctl(netlink::PromoteSecondaries("all"), "1"));
  w.nl_.SetSysctlsReadOnly(true);
  LoopFor(w, seconds(31));
  EXPECT_FALSE(w.KernelHas(w.lb0_, c.withdrawn + "/24"));
  EXPECT_TRUE(w.KernelHas(w.lb0_, c.foreign + "/24"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WithdrawalTest,
    ::testing::Values(
        // The case: one address, the primary of its subnet, no secondary.
        WithdrawCase{"only_address", {"203.0.113.5"}, "", "203.0.113.5", {}, false},
        // Our secondary is withdrawn: nothing else is affected.
        WithdrawCase{"our_secondary",
                     {"203.0.113.5", "203.0.113.6"},
                     "",
                     "203.0.113.6",
                     {"203.0.113.5"},
                     false},
        // Our primary with our own secondary still wanted: removed; the kernel deletes the
        // secondary with it and the same pass adds it again.
        WithdrawCase{"our_primary",
                     {"203.0.113.5", "203.0.113.6"},
                     "",
                     "203.0.113.5",
                     {"203.0.113.6"},
                     false},
        // Our primary with a secondary that is not ours: never deleted by us; deferred.
        WithdrawCase{"foreign_secondary",
                     {"203.0.113.5"},
                     "203.0.113.77",
                     "203.0.113.5",
                     {"203.0.113.77"},
                     true}),
    [](const auto& p) { return p.param.name; });

// A graceful stop removes every address of ours it can, retry backoff or not, and leaves no record
// line behind.
TEST(ReadOnlySysctlsTest, GracefulStopLeavesNoRecordLine) {
  AgentWorld w("node1");
  w.nl_.SetSysctlsReadOnly(true);
  w.services_.push_back(Svc("a", {.ips = {"203.0.113.5"}}));
  w.services_.push_back(Svc("b", {.ips = {"203.0.113.6"}}));
  w.Pass();
  // A removal that failed just before the stop: its retry waits for a backoff.
  w.services_.pop_back();
  w.nl_.FailNext("RemoveAddress", Error(ErrorCode::kUnavailable, "injected"));
  auto r = w.Pass();
  ASSERT_EQ(r.sync.errors.size(), 1u);
  ASSERT_TRUE(w.KernelHas(w.lb0_, "203.0.113.6/24"));
  w.shutting_down_ = true;
  w.Pass();
  EXPECT_TRUE(w.KernelAddresses(w.lb0_).empty());
  auto record = w.store_.Load();
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->empty());
}

// A renewal that fails is retried after a backoff, not on every pass (its due time stays ahead).
TEST(ReadOnlySysctlsTest, FailedRenewalBacksOff) {
  AgentWorld w("node1");
  w.services_.push_back(Svc("a", {.ips = {"203.0.113.5"}}));
  w.Pass();
  w.Advance(seconds(11), kNodes);  // the renewal is due
  w.nl_.FailNext("AddAddress", Error(ErrorCode::kUnavailable, "injected"));
  auto r = w.Pass();
  ASSERT_EQ(r.sync.errors.size(), 1u);
  auto next = w.reconciler_->NextWakeup(w.membership_);
  ASSERT_TRUE(next);
  EXPECT_GT(*next, w.clock_.Now());
  EXPECT_LE(LoopFor(w, seconds(20)), 25);
  EXPECT_TRUE(w.KernelHas(w.lb0_, "203.0.113.5/24"));
}

}  // namespace
}  // namespace pylon::agent::testing
