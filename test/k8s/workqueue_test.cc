// Work queue semantics as scenario tables on a fake clock, plus a blocking multi-worker check.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "k8s/workqueue.h"

namespace pylon::k8s {
namespace {

using std::chrono::milliseconds;

enum class Op { kAdd, kGet, kDone, kAddAfter, kAdvance, kRateLimited, kForget, kShutDown, kLen };

struct Step {
  Step(Op o, std::string k = "", int64_t m = 0, const char* n = "")
      : op(o), key(std::move(k)), ms(m), note(n) {}
  Op op;
  std::string key;  // kGet: expected key ("" = nothing ready)
  int64_t ms;       // kAddAfter / kAdvance delay; kRateLimited expected delay; kLen expected
  const char* note;
};

void RunScenario(const std::vector<Step>& steps) {
  FakeClock clock;
  WorkQueue q(clock, RateLimitOptions{milliseconds(5), milliseconds(1000)});
  int i = 0;
  for (const auto& s : steps) {
    SCOPED_TRACE(testing::Message() << "step " << i++ << " " << s.note);
    switch (s.op) {
      case Op::kAdd:
        q.Add(s.key);
        break;
      case Op::kGet: {
        auto got = q.TryGet();
        EXPECT_EQ(got.value_or(""), s.key);
        break;
      }
      case Op::kDone:
        q.Done(s.key);
        break;
      case Op::kAddAfter:
        q.AddAfter(s.key, milliseconds(s.ms));
        break;
      case Op::kAdvance:
        clock.Advance(milliseconds(s.ms));
        break;
      case Op::kRateLimited:
        EXPECT_EQ(q.When(s.key), milliseconds(s.ms));
        break;
      case Op::kForget:
        q.Forget(s.key);
        break;
      case Op::kShutDown:
        q.ShutDown();
        break;
      case Op::kLen:
        EXPECT_EQ(q.Len(), static_cast<size_t>(s.ms));
        break;
    }
  }
}

TEST(WorkQueue, Dedup) {
  RunScenario({
      {Op::kAdd, "a"},
      {Op::kAdd, "b"},
      {Op::kAdd, "a", 0, "a already queued: not added twice"},
      {Op::kLen, "", 2},
      {Op::kGet, "a"},
      {Op::kGet, "b"},
      {Op::kGet, "", 0, "nothing left"},
  });
}

TEST(WorkQueue, ProcessingKeyIsNotHandedOutTwice) {
  RunScenario({
      {Op::kAdd, "a"},
      {Op::kGet, "a"},
      {Op::kAdd, "a", 0, "re-added while processing"},
      {Op::kAdd, "a", 0, "and again: still once"},
      {Op::kGet, "", 0, "not handed to a second worker"},
      {Op::kLen, "", 0},
      {Op::kDone, "a"},
      {Op::kLen, "", 1, "requeued by Done"},
      {Op::kGet, "a"},
      {Op::kDone, "a"},
      {Op::kGet, "", 0, "Done without re-add: gone"},
  });
}

TEST(WorkQueue, AddAfterEarliestDeadlineWins) {
  RunScenario({
      {Op::kAddAfter, "a", 100},
      {Op::kAddAfter, "a", 50, "earlier deadline replaces"},
      {Op::kAddAfter, "a", 500, "later deadline ignored"},
      {Op::kAddAfter, "b", 0, "zero delay: immediate"},
      {Op::kGet, "b"},
      {Op::kAdvance, "", 49},
      {Op::kGet, ""},
      {Op::kAdvance, "", 1},
      {Op::kGet, "a"},
      {Op::kAdvance, "", 1000},
      {Op::kGet, "", 0, "promoted once only"},
  });
}

TEST(WorkQueue, PerKeyExponentialBackoffAndForget) {
  RunScenario({
      {Op::kRateLimited, "a", 5},
      {Op::kRateLimited, "a", 10},
      {Op::kRateLimited, "a", 20},
      {Op::kRateLimited, "b", 5, "per key"},
      {Op::kRateLimited, "a", 40},
      {Op::kRateLimited, "a", 80},
      {Op::kRateLimited, "a", 160},
      {Op::kRateLimited, "a", 320},
      {Op::kRateLimited, "a", 640},
      {Op::kRateLimited, "a", 1000, "capped"},
      {Op::kRateLimited, "a", 1000},
      {Op::kForget, "a"},
      {Op::kRateLimited, "a", 5, "reset by Forget"},
  });
}

TEST(WorkQueue, ShutDownDrainsThenStops) {
  RunScenario({
      {Op::kAdd, "a"},
      {Op::kAddAfter, "late", 10},
      {Op::kShutDown},
      {Op::kAdd, "b", 0, "ignored after shutdown"},
      {Op::kAdvance, "", 100},
      {Op::kGet, "a", 0, "queued keys still drain"},
      {Op::kGet, "", 0, "delayed keys dropped, b ignored"},
  });
  FakeClock clock;
  WorkQueue q(clock);
  q.ShutDown();
  EXPECT_EQ(q.Get(), std::nullopt);  // blocking Get returns at once
}

TEST(WorkQueue, AddRateLimitedCountsRequeues) {
  FakeClock clock;
  WorkQueue q(clock);
  q.AddRateLimited("a");
  q.AddRateLimited("a");
  EXPECT_EQ(q.NumRequeues("a"), 2);
  EXPECT_EQ(q.WaitingLen(), 1u);
  clock.Advance(milliseconds(5));
  EXPECT_EQ(q.TryGet().value_or(""), "a");
  q.Forget("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
}

TEST(WorkQueue, WorkersNeverShareAKey) {
  WorkQueue q;
  std::atomic<int> in_flight{0};
  std::atomic<bool> overlap{false};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        if (in_flight.fetch_add(1) != 0) overlap = true;
        std::this_thread::yield();
        in_flight.fetch_sub(1);
        ++processed;
        q.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("same");
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_GE(processed.load(), 1);
  EXPECT_LE(processed.load(), 2000);
}

TEST(WorkQueue, BlockingGetWakesForDelayedKey) {
  WorkQueue q;  // real clock
  q.AddAfter("a", milliseconds(20));
  auto got = q.Get();
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "a");
}

}  // namespace
}  // namespace pylon::k8s
