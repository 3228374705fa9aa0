// RetryOnError and its two forms, with no wait between attempts (initial 0): how many attempts
// run, which errors stop them, and that giving up says so.
#include "k8s/retry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pylon::k8s {
namespace {

RetryOptions NoWait(int steps) {
  RetryOptions o;
  o.steps = steps;
  o.initial = Duration::zero();
  return o;
}

// `fn` fails with the codes in `script` in turn, then succeeds.
struct Scripted {
  std::vector<ErrorCode> script;
  int calls = 0;
  Status operator()() {
    const int i = calls++;
    if (i < static_cast<int>(script.size())) return Fail(script[i], "attempt " + std::to_string(i));
    return Ok();
  }
};

TEST(RetryOnConflict, Table) {
  struct Row {
    const char* name;
    std::vector<ErrorCode> script;
    int steps, want_calls;
    bool want_ok, want_gave_up;
  };
  constexpr ErrorCode kC = ErrorCode::kConflict;
  const Row rows[] = {
      {"first try", {}, 5, 1, true, false},
      {"two conflicts, then written", {kC, kC}, 5, 3, true, false},
      {"other errors are not retried", {ErrorCode::kUnavailable}, 5, 1, false, false},
      {"conflict, then another error", {kC, ErrorCode::kPermission}, 5, 2, false, false},
      {"conflicts to the end: gives up visibly", {kC, kC, kC, kC}, 4, 4, false, true},
      {"one step: nothing to give up", {kC}, 1, 1, false, false},
  };
  for (const Row& r : rows) {
    Scripted fn{r.script};
    Status st = RetryOnConflict([&] { return fn(); }, NoWait(r.steps));
    EXPECT_EQ(fn.calls, r.want_calls) << r.name;
    EXPECT_EQ(st.has_value(), r.want_ok) << r.name;
    if (st) continue;
    EXPECT_EQ(st.error().code(), r.script[fn.calls - 1]) << r.name;
    const bool gave_up = st.error().message().find("gave up after") != std::string::npos;
    EXPECT_EQ(gave_up, r.want_gave_up) << r.name << ": " << st.error().message();
  }
}

TEST(RetryOnConflictOrUnavailable, RetriesBothAndNamesTheAttempts) {
  Scripted fn{{ErrorCode::kUnavailable, ErrorCode::kConflict, ErrorCode::kUnavailable}};
  Status st = RetryOnConflictOrUnavailable([&] { return fn(); }, NoWait(3));
  ASSERT_FALSE(st);
  EXPECT_EQ(fn.calls, 3);
  EXPECT_EQ(st.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(st.error().message(), "gave up after 3 attempts: attempt 2");
}

}  // namespace
}  // namespace pylon::k8s
