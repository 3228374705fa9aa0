#include "k8s/workqueue.h"

#include <algorithm>
#include <cstdint>

namespace pylon::k8s {

Duration RateLimitDelay(const RateLimitOptions& rl, int failures) {
  if (failures >= 62) return rl.max;
  const double factor = static_cast<double>(uint64_t{1} << std::max(failures, 0));
  const auto d = std::chrono::duration<double, std::nano>(rl.base) * factor;
  if (d >= std::chrono::duration<double, std::nano>(rl.max)) return rl.max;
  return std::chrono::duration_cast<Duration>(d);
}

}  // namespace pylon::k8s
