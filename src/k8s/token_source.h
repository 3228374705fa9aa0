// Bearer token for requests: static, or from a file that is re-read every refresh period (one
// minute by default) and after a 401, as service-account tokens rotate. Thread-safe.
#pragma once

#include <optional>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"

namespace pylon::k8s {

class TokenSource {
 public:
  TokenSource(std::string static_token, std::string file, const Clock& clock,
              Duration refresh = std::chrono::minutes(1));
  // The token to send; "" when none is configured. Fails only if the file was never readable.
  Result<std::string> Get();
  // Forces a re-read on the next Get (after a 401).
  void Invalidate();
  bool HasFile() const { return !file_.empty(); }

 private:
  const std::string static_token_;
  const std::string file_;
  const Clock& clock_;
  const Duration refresh_;
  Mutex mu_;
  std::optional<std::string> cached_ PYLON_GUARDED_BY(mu_);
  SteadyTime read_at_ PYLON_GUARDED_BY(mu_) = {};
  bool stale_ PYLON_GUARDED_BY(mu_) = true;
};

}  // namespace pylon::k8s
