#include "k8s/retry.h"

#include <algorithm>
#include <random>
#include <thread>

namespace pylon::k8s {

Status RetryOnError(const RetryOptions& opts, const std::function<bool(const Error&)>& retriable,
                    const std::function<Status()>& fn) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Duration wait = opts.initial;
  Status last = fn();
  int step = 1;
  for (; step < opts.steps && !last && retriable(last.error()); ++step) {
    Duration d = wait + std::chrono::duration_cast<Duration>(wait * (opts.jitter * unit(rng)));
    d = std::max<Duration>(d, last.error().retry_after());
    std::this_thread::sleep_for(d);
    wait = std::min(std::chrono::duration_cast<Duration>(wait * opts.factor), opts.cap);
    last = fn();
  }
  if (!last && step > 1 && retriable(last.error())) {
    // Still retriable after the last step: say so, so that the caller's log line or event shows
    // that the retries ran out, not only the last 409.
    return Fail(last.error().Wrap("gave up after " + std::to_string(step) + " attempts"));
  }
  return last;
}

Status RetryOnConflict(const std::function<Status()>& fn, const RetryOptions& opts) {
  return RetryOnError(
      opts, [](const Error& e) { return e.code() == ErrorCode::kConflict; }, fn);
}

Status RetryOnConflictOrUnavailable(const std::function<Status()>& fn, const RetryOptions& opts) {
  return RetryOnError(
      opts,
      [](const Error& e) {
        return e.code() == ErrorCode::kConflict || e.code() == ErrorCode::kUnavailable;
      },
      fn);
}

}  // namespace pylon::k8s
