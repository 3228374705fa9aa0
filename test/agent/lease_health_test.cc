#include "agent/lease_health.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace pylon::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct EnvCase {
  std::map<std::string, std::string> env;
  bool ok;
  const char* error_mentions;
  LeaseTiming want;
};

TEST(LeaseTimingTest, FromEnvironment) {
  const EnvCase cases[] = {
      {{}, true, "", LeaseTiming{seconds(10), seconds(7), seconds(2)}},
      {{{"PURELB_LEASE_DURATION", "2s"},
        {"PURELB_RENEW_DEADLINE", "1500ms"},
        {"PURELB_RETRY_PERIOD", "500ms"}},
       true,
       "",
       LeaseTiming{seconds(2), milliseconds(1500), milliseconds(500)}},
      {{{"PURELB_LEASE_DURATION", "abc"}}, false, "PURELB_LEASE_DURATION", {}},
      {{{"PURELB_RETRY_PERIOD", "10"}}, false, "PURELB_RETRY_PERIOD", {}},
      // Inconsistent: the deadline must end before the lease does.
      {{{"PURELB_LEASE_DURATION", "2s"}}, false, "PURELB_RENEW_DEADLINE", {}},
      {{{"PURELB_RETRY_PERIOD", "8s"}}, false, "PURELB_RETRY_PERIOD", {}},
      {{{"PURELB_LEASE_DURATION", "2500ms"}}, false, "whole number", {}},
  };
  for (const auto& c : cases) {
    auto t = LeaseTimingFromEnv([&](const std::string& k) -> std::optional<std::string> {
      auto it = c.env.find(k);
      if (it == c.env.end()) return std::nullopt;
      return it->second;
    });
    ASSERT_EQ(t.has_value(), c.ok) << (t ? "" : t.error().message());
    if (!c.ok) {
      EXPECT_NE(t.error().message().find(c.error_mentions), std::string::npos)
          << t.error().message();
      continue;
    }
    EXPECT_EQ(t->lease_duration, c.want.lease_duration);
    EXPECT_EQ(t->renew_deadline, c.want.renew_deadline);
    EXPECT_EQ(t->retry_period, c.want.retry_period);
  }
}

TEST(LeaseHealthTest, UnhealthyAfterRenewDeadlineOfFailures) {
  LeaseHealth h(LeaseTiming{seconds(10), seconds(7), seconds(2)});
  SteadyTime t0{std::chrono::hours(1)};
  EXPECT_FALSE(h.Healthy(t0));  // never renewed
  h.RenewSucceeded(t0);
  EXPECT_TRUE(h.Healthy(t0));
  for (int i = 1; i <= 3; ++i) h.RenewFailed(t0 + seconds(2 * i));
  EXPECT_TRUE(h.Healthy(t0 + seconds(6)));
  EXPECT_FALSE(h.Healthy(t0 + seconds(7)));
  EXPECT_EQ(h.HealthyUntil(), t0 + seconds(7));
  h.RenewSucceeded(t0 + seconds(8));
  EXPECT_TRUE(h.Healthy(t0 + seconds(8)));
}

}  // namespace
}  // namespace pylon::agent
