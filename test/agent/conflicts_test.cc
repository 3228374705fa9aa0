// Duplicate-address detection in the agent: the pure pieces (ProbeGate, ClaimTracker, the
// conflicts annotation, WithholdFromPlan) as scenario tables, and the reconciler with probing on
// over FakeNetlink, packet::FakeAnnouncer and an inline prober.
#include <gtest/gtest.h>

#include "agent/agent_metrics.h"
#include "agent/conflicts.h"
#include "agent/reconciler.h"
#include "agent_world.h"
#include "model/conflicts.h"
#include "support/packet/fake_announcer.h"

namespace pylon::agent::testing {
namespace {

// --- ProbeGate ----------------------------------------------------------------------------

// One step of a gate scenario: the candidates of a pass (after `advance`), optionally after a
// probe result, and what the gate must decide.
struct GateStep {
  Duration advance{0};
  std::optional<std::pair<std::string, std::optional<std::string>>> result;  // ip, owner MAC
  bool result_error = false;
  std::vector<std::string> candidates;
  std::vector<std::string> start;
  std::vector<std::string> withhold;
  std::vector<std::string> reported;
  std::vector<std::string> cleared;
  std::size_t conflicts = 0;
};

struct GateCase {
  std::string name;
  std::vector<GateStep> steps;
};

class ProbeGateTest : public ::testing::TestWithParam<GateCase> {};

std::vector<std::string> Texts(const std::vector<ProbeTarget>& v) {
  std::vector<std::string> out;
  for (const auto& t : v) out.push_back(t.address.ToString());
  return out;
}
template <typename Addresses>
std::vector<std::string> Texts(const Addresses& v) {
  std::vector<std::string> out;
  for (const auto& t : v) out.push_back(t.ToString());
  return out;
}
std::vector<std::string> Texts(const std::vector<FoundConflict>& v) {
  std::vector<std::string> out;
  for (const auto& t : v) out.push_back(t.address.ToString() + "@" + t.mac.ToString());
  return out;
}

TEST_P(ProbeGateTest, Decides) {
  ProbeGate gate(ProbeGateOptions{seconds(30)});
  SteadyTime now{seconds(1000)};
  int i = 0;
  for (const GateStep& s : GetParam().steps) {
    SCOPED_TRACE("step " + std::to_string(i++));
    now += s.advance;
    if (s.result) {
      ProbeResult r;
      r.target = ProbeTarget{Ip(s.result->first), "eth0", 2};
      if (s.result->second) r.owner = Mac(*s.result->second);
      if (s.result_error) r.error = "socket: operation not permitted";
      gate.Record(r, now);
    }
    std::vector<ProbeTarget> cands;
    for (const auto& c : s.candidates) cands.push_back(ProbeTarget{Ip(c), "eth0", 2});
    auto d = gate.Decide(cands, now);
    EXPECT_EQ(Texts(d.start), s.start);
    EXPECT_EQ(Texts(d.withhold), s.withhold);
    EXPECT_EQ(Texts(d.reported), s.reported);
    EXPECT_EQ(Texts(d.cleared), s.cleared);
    EXPECT_EQ(gate.Conflicts().size(), s.conflicts);
  }
}

const std::string A = "192.0.2.100";
const std::string B = "2001:db8:1::100";
// A, a candidate, is probed: withheld until the result.
const GateStep kProbeA{.candidates = {A}, .start = {A}, .withhold = {A}};
// The probe of A finds kForeign holding it: withheld, the conflict reported.
const GateStep kATaken{.result = {{A, kForeign}},
                       .candidates = {A},
                       .withhold = {A},
                       .reported = {A + "@" + kForeign},
                       .conflicts = 1};

INSTANTIATE_TEST_SUITE_P(
    Scenarios, ProbeGateTest,
    ::testing::Values(
        GateCase{"FreeAddressWaitsForItsProbeOnly",
                 {kProbeA,
                  {.candidates = {A}, .withhold = {A}},  // still probing: no second probe
                  {.result = {{A, std::nullopt}}, .candidates = {A}},
                  {.candidates = {A}}}},  // stays free while a candidate
        GateCase{"ConflictReportedOnceAndRecheckedAfterTheInterval",
                 {{.candidates = {A, B}, .start = {A, B}, .withhold = {A, B}},
                  {.result = {{A, kForeign}},
                   .candidates = {A, B},
                   .withhold = {A, B},
                   .reported = {A + "@" + kForeign},
                   .conflicts = 1},
                  {.advance = seconds(10), .candidates = {A}, .withhold = {A}, .conflicts = 1},
                  {.advance = seconds(20),
                   .candidates = {A},
                   .start = {A},
                   .withhold = {A},
                   .conflicts = 0},
                  // The same owner again: not reported again.
                  {.result = {{A, kForeign}}, .candidates = {A}, .withhold = {A}, .conflicts = 1},
                  {.advance = seconds(30), .candidates = {A}, .start = {A}, .withhold = {A}},
                  // The owner left: the address goes through, the conflict is cleared once.
                  {.result = {{A, std::nullopt}}, .candidates = {A}, .cleared = {A}},
                  {.candidates = {A}}}},
        GateCase{"AnotherOwnerOnRecheckIsReported",
                 {kProbeA,
                  kATaken,
                  {.advance = seconds(30), .candidates = {A}, .start = {A}, .withhold = {A}},
                  {.result = {{A, "02:00:00:00:99:99"}},
                   .candidates = {A},
                   .withhold = {A},
                   .reported = {A + "@02:00:00:00:99:99"},
                   .conflicts = 1}}},
        GateCase{"ProbeErrorFailsOpen",
                 {kProbeA, {.result = {{A, kForeign}}, .result_error = true, .candidates = {A}}}},
        GateCase{"NoLongerACandidateForgetsTheConflict",
                 {kProbeA,
                  kATaken,
                  {.candidates = {}, .conflicts = 0},
                  // Won again later: probed again, from scratch.
                  kProbeA}},
        GateCase{"ResultOfAProbeNoLongerWantedIsKeptUntilDecided",
                 {kProbeA,
                  {.candidates = {}},  // the probe still runs: its state stays
                  {.result = {{A, std::nullopt}}, .candidates = {A}}}}),
    [](const auto& p) { return p.param.name; });

// --- ClaimTracker -----------------------------------------------------------------------------

TEST(ClaimTrackerTest, ReportsForeignClaimsOnHeldAddressesRateLimited) {
  ClaimTracker t(ClaimOptions{seconds(60), seconds(10), std::chrono::minutes(5)});
  SteadyTime now{seconds(1000)};
  const std::set<net::IpAddress> held = {Ip(A)};
  const std::set<std::string> known = {"02:00:00:00:00:01"};
  struct Step {
    Duration advance;
    std::vector<SeenClaim> seen;
    std::size_t reports;
    std::size_t defends;
    std::size_t active;
  };
  const std::vector<Step> steps = {
      // A member node's GARP, and a foreign claim of an address we do not hold: nothing.
      {seconds(0),
       {{Ip(A), Mac("02:00:00:00:00:01"), 2}, {Ip("192.0.2.101"), Mac(kForeign), 2}},
       0,
       0,
       0},
      // A foreign claim of a held address: reported and defended.
      {seconds(0), {{Ip(A), Mac(kForeign), 2}}, 1, 1, 1},
      // Again 5 s later: neither reported (60 s) nor defended (10 s) again.
      {seconds(5), {{Ip(A), Mac(kForeign), 2}}, 0, 0, 1},
      // 10 s after the defence: defended again, still not reported.
      {seconds(5), {{Ip(A), Mac(kForeign), 2}}, 0, 1, 1},
      // A second foreign MAC: reported at once.
      {seconds(1), {{Ip(A), Mac("02:aa:00:00:00:02"), 2}}, 1, 0, 1},
      // 60 s after the first report: reported again.
      {seconds(50), {{Ip(A), Mac(kForeign), 2}}, 1, 1, 1},
      // Quiet for 5 minutes: no longer active.
      {std::chrono::minutes(5), {}, 0, 0, 0},
  };
  int i = 0;
  for (const auto& s : steps) {
    SCOPED_TRACE("step " + std::to_string(i++));
    now += s.advance;
    auto d = t.Observe(s.seen, held, known, now);
    EXPECT_EQ(d.report.size(), s.reports);
    EXPECT_EQ(d.defend.size(), s.defends);
    EXPECT_EQ(t.ActiveCount(now), s.active);
  }
}

// --- The annotations ------------------------------------------------------------------------

struct AnnotationCase {
  std::string name;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> addresses;  // parsed, by key
  std::size_t issues;
};

class ConflictAnnotationTest : public ::testing::TestWithParam<AnnotationCase> {};

TEST_P(ConflictAnnotationTest, Parses) {
  const auto& c = GetParam();
  auto p = model::ParseAddressConflicts(c.annotations);
  std::vector<std::string> got;
  for (const auto& e : p.entries) {
    got.push_back(e.address.ToString());
    // What parses formats back to the same entry.
    EXPECT_EQ(model::ParseAddressConflict(model::FormatAddressConflict(e)).value(), e);
  }
  EXPECT_EQ(got, c.addresses);
  EXPECT_EQ(p.issues.size(), c.issues) << ::testing::PrintToString(p.issues);
}

const std::string kK4 = "conflict.purelb.io/ipv4-192-0-2-100";
const std::string kK6 = "conflict.purelb.io/ipv6-2001-db8-1--100";

INSTANTIATE_TEST_SUITE_P(
    Values, ConflictAnnotationTest,
    ::testing::Values(
        AnnotationCase{"None", {{"purelb.io/allocated-by", "Pylon"}}, {}, 0},
        AnnotationCase{"One",
                       {{kK4, "192.0.2.100 02:AA:bb:cc:dd:ee node1 eth0 2025-01-02T03:04:05Z"}},
                       {"192.0.2.100"},
                       0},
        AnnotationCase{
            "BothFamilies",
            {{kK4, "192.0.2.100 02:aa:bb:cc:dd:ee node1 eth0 2025-01-02T03:04:05Z"},
             {kK6, " 2001:db8:1::100  02:aa:bb:cc:dd:ee node2 eth1 2025-01-02T03:04:06Z"},
             {"purelb.io/announcing-IPv4", "node1,eth0"}},
            {"192.0.2.100", "2001:db8:1::100"},
            0},
        AnnotationCase{"Garbage", {{kK4, "garbage"}}, {}, 1},
        AnnotationCase{"BadAddress",
                       {{kK4, "192.0.2.300 02:aa:bb:cc:dd:ee n1 eth0 2025-01-02T03:04:05Z"}},
                       {},
                       1},
        AnnotationCase{
            "BadMac", {{kK4, "192.0.2.100 02:aa:bb:cc:dd n1 eth0 2025-01-02T03:04:05Z"}}, {}, 1},
        AnnotationCase{"BadTime",
                       {{kK4, "192.0.2.100 02:aa:bb:cc:dd:ee n1 eth0 2025-13-02T03:04:05Z"}},
                       {},
                       1},
        AnnotationCase{"ValueOfAnotherAddress",
                       {{kK4, "192.0.2.101 02:aa:bb:cc:dd:ee n1 eth0 2025-01-02T03:04:05Z"}},
                       {},
                       1}),
    [](const auto& p) { return p.param.name; });

TEST(ConflictAnnotationTest, KeysAreValidAnnotationNames) {
  EXPECT_EQ(model::ConflictAnnotationKey(Ip("192.0.2.225")), "conflict.purelb.io/ipv4-192-0-2-225");
  EXPECT_EQ(model::ConflictAnnotationKey(Ip("2001:db8:1:0:8000::4")),
            "conflict.purelb.io/ipv6-2001-db8-1-0-8000--4");
  // A name ends with an alphanumeric character.
  EXPECT_EQ(model::ConflictAnnotationKey(Ip("2001:db8::")), "conflict.purelb.io/ipv6-2001-db8--0");
  const std::string longest =
      model::ConflictAnnotationKey(Ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
  EXPECT_LE(longest.size() - std::string(model::kAnnConflictPrefix).size(), 63u);
}

// --- WithholdFromPlan -----------------------------------------------------------------------

TEST(WithholdFromPlanTest, DropsTheAddressItsAnnouncingValuesAndL2Upserts) {
  Plan p;
  p.addresses.push_back(DesiredAddress{
      Pfx("192.0.2.100/24"), "eth0", 2, AddressKind::kLocal, {"default/a", "default/b"}});
  p.addresses.push_back(
      DesiredAddress{Pfx("2001:db8:1::100/64"), "eth0", 2, AddressKind::kLocal, {"default/a"}});
  AnnotationPatch a{
      {"default", "a"},
      {{model::kAnnAnnouncingV4, "node1,eth0"}, {model::kAnnAnnouncingV6, "node1,eth0"}}};
  AnnotationPatch b{{"default", "b"}, {{model::kAnnAnnouncingV4, "node1,eth0"}}};
  AnnotationPatch c{{"default", "c"}, {{model::kAnnAnnouncingV4, std::nullopt}}};
  p.annotation_patches = {a, b, c};
  p.l2_upserts.push_back(L2Advertisement{"ipv4-192-0-2-100", Ip("192.0.2.100")});
  WithholdFromPlan(p, {Ip("192.0.2.100")});
  ASSERT_EQ(p.addresses.size(), 1u);
  EXPECT_EQ(p.addresses[0].address, Pfx("2001:db8:1::100/64"));
  ASSERT_EQ(p.annotation_patches.size(), 2u);
  EXPECT_EQ(p.annotation_patches[0].annotations.size(), 1u);  // a keeps its IPv6 value
  EXPECT_TRUE(p.annotation_patches[0].annotations.count(model::kAnnAnnouncingV6));
  EXPECT_EQ(p.annotation_patches[1].service.name, "c");  // an unrelated removal stays
  EXPECT_TRUE(p.l2_upserts.empty());
}

// --- The reconciler with probing on ---------------------------------------------------------

const std::string kIp = "192.0.2.100";

std::string Winner() { return HashWinner({"node1", "node2", "node3"}, Ip(kIp)); }

const AnnotationPatch* PatchOf(const RecordingWriter& w, const std::string& key) {
  for (const auto& p : w.patches) {
    if (p.annotations.count(key)) return &p;
  }
  return nullptr;
}

TEST(ProbingReconcilerTest, FirstAnnouncementWaitsForAFreeProbe) {
  AgentWorld w(Winner());
  w.EnableProbing();
  w.Serve("web", {kIp});
  EXPECT_FALSE(w.Holds(kIp));
  ASSERT_EQ(w.announcer_.probes().size(), 1u);
  EXPECT_EQ(w.announcer_.probes()[0].address, Ip(kIp));
  EXPECT_EQ(w.announcer_.probes()[0].iface.ifindex, w.eth0_);
  EXPECT_EQ(PatchOf(w.writer_, model::kAnnAnnouncingV4), nullptr);  // not announced yet
  EXPECT_EQ(EventsWith(w.writer_, "AnnouncingLocal"), 0u);
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
  EXPECT_NE(PatchOf(w.writer_, model::kAnnAnnouncingV4), nullptr);
  EXPECT_EQ(EventsWith(w.writer_, "AnnouncingLocal"), 1u);
  EXPECT_EQ(w.announcer_.probes().size(), 1u);
  w.Pass();
  EXPECT_EQ(w.announcer_.probes().size(), 1u);  // held: never probed again
}

TEST(ProbingReconcilerTest, ForeignOwnerIsReportedAndTheAddressNotTaken) {
  AgentWorld w(Winner());
  w.EnableProbing(ProbeGateOptions{seconds(30)});
  w.announcer_.SetOwner(Ip(kIp), Mac(kForeign));
  w.Serve("web", {kIp});
  w.Pass();
  EXPECT_FALSE(w.Holds(kIp));
  EXPECT_EQ(PatchOf(w.writer_, model::kAnnAnnouncingV4), nullptr);
  ASSERT_EQ(EventsWith(w.writer_, "AddressConflict"), 1u);
  const ServiceEvent& e = w.writer_.events.back();
  EXPECT_TRUE(e.warning);
  EXPECT_EQ(e.service.name, "web");
  EXPECT_NE(e.message.find(kIp), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(kForeign), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("eth0"), std::string::npos) << e.message;
  const std::string key = model::ConflictAnnotationKey(Ip(kIp));
  const AnnotationPatch* p = PatchOf(w.writer_, key);
  ASSERT_NE(p, nullptr);
  std::map<std::string, std::string> shown = {{key, *p->annotations.at(key)}};
  auto entries = model::ParseAddressConflicts(shown);
  ASSERT_EQ(entries.entries.size(), 1u);
  EXPECT_EQ(entries.entries[0].address, Ip(kIp));
  EXPECT_EQ(entries.entries[0].mac, kForeign);
  EXPECT_EQ(entries.entries[0].node, w.self_);
  EXPECT_EQ(entries.entries[0].interface, "eth0");
  EXPECT_EQ(w.metrics_.Get(kMetricAddressConflicts, {}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricConflictsDetected, {{"kind", "probe"}}), 1);

  // The Service now shows the annotation; passes before the recheck neither probe nor report.
  w.services_[0] = Svc("web", {.ips = {kIp}, .annotations = shown});
  w.writer_.Clear();
  w.Advance(seconds(10), w.nodes_);
  w.Pass();
  EXPECT_EQ(w.announcer_.probes().size(), 1u);
  EXPECT_TRUE(w.writer_.events.empty());
  EXPECT_TRUE(w.writer_.patches.empty());

  // The foreign host leaves; after the recheck interval the address is probed free and taken,
  // and the stale entry is removed.
  w.announcer_.SetOwner(Ip(kIp), std::nullopt);
  w.Advance(seconds(20), w.nodes_);
  w.Pass();
  EXPECT_EQ(w.announcer_.probes().size(), 2u);
  EXPECT_FALSE(w.Holds(kIp));
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
  const AnnotationPatch* cleared = PatchOf(w.writer_, key);
  ASSERT_NE(cleared, nullptr);
  EXPECT_FALSE(cleared->annotations.at(key).has_value());
  EXPECT_EQ(w.metrics_.Get(kMetricAddressConflicts, {}), 0);
}

TEST(ProbingReconcilerTest, TakeoverIsNeverProbed) {
  const std::string winner = Winner();
  const std::string dead = SomeLoser({"node1", "node2", "node3"}, winner);
  AgentWorld w(winner);
  w.EnableProbing();
  w.announcer_.SetOwner(Ip(kIp), Mac(kForeign));  // would be a conflict if probed
  w.DeleteLease(dead);
  w.services_.push_back(
      Svc("web", {.ips = {kIp}, .annotations = {{model::kAnnAnnouncingV4, dead + ",eth0"}}}));
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
  EXPECT_TRUE(w.announcer_.probes().empty());
}

TEST(ProbingReconcilerTest, AnswersFromMemberNodesAreNotConflicts) {
  // A member killed with SIGKILL still answers for the address with its own MAC.
  const std::string winner = Winner();
  const std::string other = SomeLoser({"node1", "node2", "node3"}, winner);
  AgentWorld w(winner);
  w.macs_[other] = "02:00:00:00:77:01,02:00:00:00:77:02";
  w.Renew(other);
  w.EnableProbing();
  w.announcer_.SetOwner(Ip(kIp), Mac("02:00:00:00:77:02"));
  w.Serve("web", {kIp});
  ASSERT_EQ(w.announcer_.probes().size(), 1u);
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
  EXPECT_EQ(EventsWith(w.writer_, "AddressConflict"), 0u);
}

TEST(ProbingReconcilerTest, ProbeFailureTakesTheAddressUnprobed) {
  AgentWorld w(Winner());
  w.EnableProbing();
  w.announcer_.FailNext(Error(ErrorCode::kPermission, "socket: operation not permitted"));
  w.Serve("web", {kIp});
  w.Pass();
  EXPECT_TRUE(w.Holds(kIp));
}

TEST(ProbingReconcilerTest, ForeignClaimOnAHeldAddressIsReportedAndDefended) {
  const std::string winner = Winner();
  AgentWorld w(winner);
  w.EnableProbing();
  w.macs_["node1"] = "02:00:00:00:00:01";
  w.Renew("node1");
  // Already announced by this node (restart): held without a probe.
  w.services_.push_back(
      Svc("web", {.ips = {kIp}, .annotations = {{model::kAnnAnnouncingV4, winner + ",eth0"}}}));
  w.Pass();
  ASSERT_TRUE(w.Holds(kIp));
  ASSERT_TRUE(w.claims_.watched.count(w.eth0_));
  EXPECT_TRUE(w.claims_.watched.at(w.eth0_).count(Ip(kIp)));
  for (int i = 0; i < 4; ++i) {
    w.clock_.Advance(milliseconds(300));
    w.reconciler_->SendDueAnnouncements();
  }
  const std::size_t sent = w.announcer_.sent().size();
  w.writer_.Clear();
  // A member's MAC: nothing. A foreign MAC: reported, defended, the address kept.
  w.claims_.pending = {{Ip(kIp), Mac("02:00:00:00:00:01"), w.eth0_}};
  w.Pass();
  EXPECT_TRUE(w.writer_.events.empty());
  w.claims_.pending = {{Ip(kIp), Mac(kForeign), w.eth0_}};
  w.Pass();
  ASSERT_EQ(EventsWith(w.writer_, "AddressConflict"), 1u);
  EXPECT_NE(w.writer_.events.back().message.find("also claimed by " + kForeign), std::string::npos)
      << w.writer_.events.back().message;
  EXPECT_TRUE(w.Holds(kIp));
  EXPECT_GT(w.announcer_.sent().size(), sent);  // the defence announcement
  EXPECT_EQ(w.metrics_.Get(kMetricConflictsDetected, {{"kind", "claim"}}), 1);
  EXPECT_EQ(w.metrics_.Get(kMetricAddressConflicts, {}), 1);
  // Seen again at once: not reported again.
  w.claims_.pending = {{Ip(kIp), Mac(kForeign), w.eth0_}};
  w.Pass();
  EXPECT_EQ(EventsWith(w.writer_, "AddressConflict"), 1u);
}

}  // namespace
}  // namespace pylon::agent::testing
