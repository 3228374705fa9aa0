// Caller-side retries, as client-go's util/retry: RetryOnConflict re-runs a read-modify-write
// function while it fails with kConflict (DefaultRetry: 5 steps, 10 ms, factor 1, jitter 0.1).
// The function must re-read the object on every call. Sleeps on the calling thread (real time).
#pragma once

#include <functional>

#include "common/clock.h"
#include "common/result.h"

namespace pylon::k8s {

struct RetryOptions {
  int steps = 5;
  Duration initial = std::chrono::milliseconds(10);
  double factor = 1.0;
  double jitter = 0.1;
  Duration cap = std::chrono::seconds(30);
};

// Runs `fn` up to `opts.steps` times while `retriable(error)` holds; returns the last result.
// A server-provided retry-after longer than the computed wait is honoured. When every step failed
// with a retriable error, the error (same code) reads "gave up after N attempts: <last error>",
// so that giving up is visible wherever the caller logs or reports it.
Status RetryOnError(const RetryOptions& opts, const std::function<bool(const Error&)>& retriable,
                    const std::function<Status()>& fn);

// RetryOnError for kConflict.
Status RetryOnConflict(const std::function<Status()>& fn, const RetryOptions& opts = {});

// RetryOnError for kConflict and kUnavailable (429, 5xx, transport errors).
Status RetryOnConflictOrUnavailable(const std::function<Status()>& fn,
                                    const RetryOptions& opts = {});

}  // namespace pylon::k8s
