// Waiting in tests for something another thread or process makes true. The one polling loop of
// the test tree: `pred` is checked at once, then every `poll`, and one last time at the deadline,
// so a condition that becomes true just before the deadline is never missed.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace pylon::test_support {

inline bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(poll);
  }
  return pred();
}

}  // namespace pylon::test_support
