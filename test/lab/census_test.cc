// CountAudit: what the scale table reads from the control plane's audit log.
#include "lab/census.h"

#include <gtest/gtest.h>

namespace pylon::lab {
namespace {

TEST(CountAudit, CompletedRequestsByUserAndRequest) {
  const std::string log =
      R"({"stage":"RequestReceived","verb":"update","user":{"username":"a"},"objectRef":{"resource":"leases"}})"
      "\n"
      R"({"stage":"ResponseComplete","verb":"update","user":{"username":"a"},"objectRef":{"resource":"leases"}})"
      "\n"
      R"({"stage":"ResponseComplete","verb":"update","user":{"username":"a"},"objectRef":{"resource":"leases"}})"
      "\n"
      R"({"stage":"ResponseComplete","verb":"list","user":{"username":"b"},"objectRef":{"resource":"services"}})"
      "\n"
      "not json\n"
      R"({"stage":"ResponseComplete","verb":"get"})"
      "\n"
      R"({"stage":"ResponseComplete","verb":"update","user":{"username":"a"},"objectRef":{"resource":"le)";
  AuditCounts c = CountAudit(log);
  EXPECT_EQ(c.by_user["a"], 2);
  EXPECT_EQ(c.by_user["b"], 1);
  EXPECT_EQ(c.by_user["?"], 1);  // no user: counted, not dropped
  EXPECT_EQ(c.by_user_request["a"]["update leases"], 2);
  EXPECT_EQ(c.by_user_request["b"]["list services"], 1);
  EXPECT_EQ(c.by_user.size(), 3u);
}

}  // namespace
}  // namespace pylon::lab
