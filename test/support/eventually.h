// Waiting in tests for something another thread or process makes true. The one polling loop of
// the test tree: `pred` is checked at once, then every `poll`, and one last time at the deadline,
// so a condition that becomes true just before the deadline is never missed.
//
// A test file states its patience once, as a Poll named Eventually (or WaitFor), and calls it:
//   constexpr test_support::Poll Eventually{.timeout = seconds(10), .every = milliseconds(2)};
//   EXPECT_TRUE(Eventually([&] { return seen(); }));          // within 10 s
//   EXPECT_TRUE(Eventually([&] { return seen(); }, seconds(1)));  // within 1 s
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace pylon::test_support {

inline bool Eventually(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
                       std::chrono::nanoseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(poll);
  }
  return pred();
}

// A default deadline and polling interval for Eventually.
struct Poll {
  std::chrono::nanoseconds timeout;
  std::chrono::nanoseconds every = std::chrono::milliseconds(20);

  bool operator()(const std::function<bool()>& pred) const {
    return Eventually(pred, timeout, every);
  }
  bool operator()(const std::function<bool()>& pred, std::chrono::nanoseconds within) const {
    return Eventually(pred, within, every);
  }
  bool operator()(const std::function<bool()>& pred, std::chrono::nanoseconds within,
                  std::chrono::nanoseconds poll) const {
    return Eventually(pred, within, poll);
  }
};

}  // namespace pylon::test_support
