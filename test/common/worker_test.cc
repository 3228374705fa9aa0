// Worker: the body runs off the caller's thread until Stop; a Wake is never lost and counts once;
// the periodic form runs again when its period has passed on the injected clock or when woken;
// SleepFor keeps a Wake for the next wait; Stop ends every wait and calls the waker. Time moves
// only through a FakeClock: no assertion depends on how long anything takes.
#include "common/worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "support/eventually.h"

namespace pylon {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr test_support::Poll Eventually{.timeout = seconds(20),
                                        .every = std::chrono::milliseconds(1)};

// Waits until the worker sleeps in a wait it entered (or re-read the clock in) after the last
// call: `seen` is the count of clock reads then.
void Waiting(const Worker& w, std::uint64_t& seen) {
  ASSERT_TRUE(Eventually([&] { return w.clock_reads() > seen; }));
  seen = w.clock_reads();
}

// Moves the clock and waits until the worker has read it.
void Move(Worker& w, FakeClock& clock, Duration by, std::uint64_t& seen) {
  clock.Advance(by);
  w.ClockMoved();
  Waiting(w, seen);
}

TEST(Worker, BodyRunsOffTheCallerUntilStop) {
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> off_caller{false};
  std::atomic<bool> returned{false};
  Worker w;
  EXPECT_FALSE(w.Running());
  w.Start([&] {
    off_caller = std::this_thread::get_id() != caller;
    while (w.WaitForWake()) {
    }
    returned = true;
  });
  EXPECT_TRUE(w.Running());
  w.Stop();
  EXPECT_TRUE(returned.load());  // joined
  EXPECT_TRUE(off_caller.load());
  EXPECT_TRUE(w.Stopping());
  EXPECT_FALSE(w.Running());
  w.Stop();  // idempotent
}

TEST(Worker, AWakeWhileTheBodyIsBusyIsNotLostAndSeveralCountOnce) {
  FakeClock clock;
  Worker w(clock);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> busy{false};
  std::vector<Worker::Woke> woke;
  w.Start([&] {
    busy = true;
    gate.wait();
    woke.push_back(w.WaitFor(hours(1)));  // the Wakes below, once
    woke.push_back(w.WaitFor(hours(1)));  // nothing more: the stop
    woke.push_back(w.WaitFor(hours(1)));  // stays stopped
  });
  ASSERT_TRUE(Eventually([&] { return busy.load(); }));
  w.Wake();
  w.Wake();
  w.Wake();
  release.set_value();
  std::uint64_t seen = 0;
  Waiting(w, seen);  // the second wait sleeps: the first has returned
  w.Stop();
  EXPECT_EQ(woke, (std::vector<Worker::Woke>{Worker::Woke::kWake, Worker::Woke::kStop,
                                             Worker::Woke::kStop}));
}

TEST(Worker, WaitReturnsAtTheDeadlineOnTheInjectedClock) {
  FakeClock clock;
  Worker w(clock);
  std::atomic<int> deadlines{0};
  w.Start([&] {
    while (w.WaitFor(seconds(10)) == Worker::Woke::kDeadline) ++deadlines;
  });
  std::uint64_t seen = 0;
  Waiting(w, seen);
  Move(w, clock, seconds(9), seen);
  EXPECT_EQ(deadlines.load(), 0);
  Move(w, clock, seconds(1), seen);  // the next wait has begun
  EXPECT_EQ(deadlines.load(), 1);
  w.Stop();
  EXPECT_EQ(deadlines.load(), 1);
}

TEST(Worker, PeriodicRunsAtOnceThenEveryPeriodOrWhenWoken) {
  FakeClock clock;
  Worker w(clock);
  std::atomic<int> rounds{0};
  w.StartPeriodic([&] {
    ++rounds;
    return Duration(seconds(10));
  });
  std::uint64_t seen = 0;
  Waiting(w, seen);
  EXPECT_EQ(rounds.load(), 1);
  Move(w, clock, seconds(9), seen);
  EXPECT_EQ(rounds.load(), 1);  // the period has not passed
  Move(w, clock, seconds(1), seen);
  EXPECT_EQ(rounds.load(), 2);
  w.Wake();  // at once, the clock unmoved
  Waiting(w, seen);
  EXPECT_EQ(rounds.load(), 3);
  // The period counts from the woken round: 9 s after it nothing runs.
  Move(w, clock, seconds(9), seen);
  EXPECT_EQ(rounds.load(), 3);
  w.Stop();
  EXPECT_EQ(rounds.load(), 3);
}

TEST(Worker, PeriodicAWakeDuringARoundRunsOneMoreRound) {
  FakeClock clock;
  Worker w(clock);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> rounds{0};
  w.StartPeriodic([&] {
    if (++rounds == 1) gate.wait();
    return Duration(hours(1));
  });
  ASSERT_TRUE(Eventually([&] { return rounds.load() == 1; }));
  w.Wake();
  w.Wake();
  release.set_value();
  std::uint64_t seen = 0;
  Waiting(w, seen);  // after the second round: the Wakes counted once
  EXPECT_EQ(rounds.load(), 2);
  Move(w, clock, seconds(1), seen);  // the third waits for its period
  EXPECT_EQ(rounds.load(), 2);
  w.Stop();
}

TEST(Worker, SleepForIgnoresAWakeButKeepsItForTheNextWait) {
  FakeClock clock;
  Worker w(clock);
  std::atomic<bool> slept{false};
  std::vector<Worker::Woke> woke;
  w.Start([&] {
    slept = w.SleepFor(seconds(5));
    woke.push_back(w.WaitFor(hours(1)));
  });
  std::uint64_t seen = 0;
  Waiting(w, seen);
  w.Wake();
  Waiting(w, seen);  // woken, and asleep again
  Move(w, clock, seconds(4), seen);
  EXPECT_FALSE(slept.load());
  clock.Advance(seconds(1));
  w.ClockMoved();
  ASSERT_TRUE(Eventually([&] { return slept.load(); }));
  w.Stop();
  EXPECT_EQ(woke, (std::vector<Worker::Woke>{Worker::Woke::kWake}));
}

TEST(Worker, StopEndsASleepAndCallsTheWaker) {
  std::atomic<int> waker_calls{0};
  std::atomic<int> slept{-1};
  Worker w;
  w.SetWaker([&] { ++waker_calls; });
  w.Wake();
  EXPECT_EQ(waker_calls.load(), 1);
  w.Start([&] { slept = w.SleepFor(hours(1)) ? 1 : 0; });
  w.Stop();
  EXPECT_EQ(slept.load(), 0);
  EXPECT_EQ(waker_calls.load(), 2);
}

TEST(Worker, StartAgainClearsTheStopAndAnEarlierWake) {
  FakeClock clock;
  Worker w(clock);
  w.Start([] {});
  w.Stop();
  w.Wake();  // before the second run: cleared by Start
  std::vector<Worker::Woke> woke;
  w.Start([&] { woke.push_back(w.WaitFor(hours(1))); });
  ASSERT_TRUE(Eventually([&] { return w.clock_reads() > 0; }));
  EXPECT_FALSE(w.Stopping());
  w.Stop();
  EXPECT_EQ(woke, (std::vector<Worker::Woke>{Worker::Woke::kStop}));
}

TEST(Worker, DestructorStopsAndJoins) {
  std::atomic<bool> returned{false};
  {
    Worker w;
    w.Start([&] {
      while (w.WaitForWake()) {
      }
      returned = true;
    });
  }
  EXPECT_TRUE(returned.load());
}

}  // namespace
}  // namespace pylon
