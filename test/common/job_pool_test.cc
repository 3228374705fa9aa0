// JobPool: every submitted job runs once, off the caller's thread, its result taken once; on_done
// follows each; the destructor waits for running jobs.
#include "common/job_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "support/eventually.h"

namespace pylon {
namespace {

TEST(JobPool, EveryJobRunsOnceOffTheCallerAndIsTakenOnce) {
  const auto caller = std::this_thread::get_id();
  std::atomic<int> done{0};
  std::atomic<bool> off_caller{true};
  JobPool<int, int> pool(
      [&](const int& j) {
        if (std::this_thread::get_id() == caller) off_caller = false;
        return j * 10;
      },
      [&] { ++done; }, 3);
  for (int i = 0; i < 50; ++i) pool.Submit(i);
  std::multiset<int> got;
  ASSERT_TRUE(pylon::test_support::Eventually(
      [&] {
        for (int r : pool.Take()) got.insert(r);
        return got.size() == 50;
      },
      std::chrono::seconds(20)));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(got.count(i * 10), 1u) << i;
  EXPECT_EQ(done.load(), 50);
  EXPECT_TRUE(off_caller.load());
  EXPECT_TRUE(pool.Take().empty());
}

TEST(JobPool, DestructorWaitsForTheRunningJob) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::thread opener;
  {
    JobPool<int, int> pool(
        [&](const int& j) {
          ++started;
          gate.wait();
          ++finished;
          return j;
        },
        nullptr, 1);
    for (int i = 0; i < 5; ++i) pool.Submit(i);
    ASSERT_TRUE(pylon::test_support::Eventually([&] { return started.load() == 1; },
                                                std::chrono::seconds(20)));
    opener = std::thread([&] { release.set_value(); });
  }  // joins the worker: the job it runs finishes; queued ones may or may not start
  opener.join();
  EXPECT_GE(finished.load(), 1);
  EXPECT_EQ(started.load(), finished.load());  // none left running
}

}  // namespace
}  // namespace pylon
