#include "agent/lease_health.h"

#include "common/duration.h"

namespace pylon::agent {

namespace {

std::string Text(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

}  // namespace

Status ValidateLeaseTiming(const LeaseTiming& t) {
  using std::chrono::seconds;
  if (t.lease_duration < seconds(1) || t.lease_duration % seconds(1) != Duration(0)) {
    return Fail(ErrorCode::kInvalidArgument,
                "PURELB_LEASE_DURATION must be a whole number of seconds, at least 1s (got " +
                    Text(t.lease_duration) + ")");
  }
  if (t.retry_period <= Duration(0)) {
    return Fail(ErrorCode::kInvalidArgument, "PURELB_RETRY_PERIOD must be positive");
  }
  if (t.renew_deadline <= t.retry_period) {
    return Fail(ErrorCode::kInvalidArgument, "PURELB_RENEW_DEADLINE (" + Text(t.renew_deadline) +
                                                 ") must be longer than PURELB_RETRY_PERIOD (" +
                                                 Text(t.retry_period) + ")");
  }
  if (t.lease_duration <= t.renew_deadline) {
    return Fail(ErrorCode::kInvalidArgument, "PURELB_LEASE_DURATION (" + Text(t.lease_duration) +
                                                 ") must be longer than PURELB_RENEW_DEADLINE (" +
                                                 Text(t.renew_deadline) + ")");
  }
  return Ok();
}

Result<LeaseTiming> LeaseTimingFromEnv(const EnvLookup& env) {
  LeaseTiming t;
  struct Var {
    const char* name;
    Duration* out;
  };
  for (Var v : {Var{"PURELB_LEASE_DURATION", &t.lease_duration},
                Var{"PURELB_RENEW_DEADLINE", &t.renew_deadline},
                Var{"PURELB_RETRY_PERIOD", &t.retry_period}}) {
    auto value = env(v.name);
    if (!value || value->empty()) continue;
    auto d = ParseGoDuration(*value);
    if (!d) return Fail(d.error().Wrap(v.name));
    *v.out = *d;
  }
  if (auto st = ValidateLeaseTiming(t); !st) return Fail(st.error());
  return t;
}

}  // namespace pylon::agent
