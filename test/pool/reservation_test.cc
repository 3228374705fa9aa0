// Pool reservations (reservation.h): one allocator walked through rows, each acting on the state
// the previous rows left.
#include "pool/reservation.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pool/allocator.h"
#include "test_util.h"

namespace pylon::pool {
namespace {

using namespace pylon::pool::testing;  // NOLINT
using net::Family;

constexpr const char* kPool = "p";

TEST(ReservationTest, HolderKeys) {
  const ServiceKey conflict = ReservationHolder(ReservationKind::kConflict, "192.0.2.1");
  EXPECT_EQ(conflict.ToString(), "pylon.conflict/192.0.2.1");
  const ServiceKey quarantine = ReservationHolder(ReservationKind::kQuarantine, "ns/web@192.0.2.1");
  EXPECT_EQ(quarantine.ToString(), "pylon.quarantine/ns/web@192.0.2.1");
}

TEST(ReservationTest, WalksThroughTheTable) {
  struct Row {
    std::string what;
    std::function<Status(Allocator&)> act;
    std::optional<ErrorCode> fails;  // nullopt: succeeds
    std::string holders;             // of 192.0.2.1 afterwards
    std::uint64_t in_use;            // IPv4 of the pool afterwards
  };
  auto reserve = [](ReservationKind kind, const char* id, const char* pool, const char* addr) {
    return [=](Allocator& a) { return a.Reserve(kind, id, pool, Addr(addr)); };
  };
  auto unreserve = [](ReservationKind kind, const char* id) {
    return [=](Allocator& a) -> Status {
      a.Unreserve(kind, id);
      return Ok();
    };
  };
  auto assign = [](const char* svc, const char* addr) {
    return [=](Allocator& a) -> Status {
      AssignRequest req{Svc(svc), kPool, {Family::kV4}, {}, "", Ports("TCP/80")};
      if (addr != nullptr) req.requested.v4 = Addr(addr);
      auto r = a.Assign(req);
      if (!r) return Fail(r.error());
      return Ok();
    };
  };
  const auto kConflict = ReservationKind::kConflict;
  const auto kQuarantine = ReservationKind::kQuarantine;
  const std::vector<Row> rows = {
      {"a conflict reserves a free address", reserve(kConflict, "192.0.2.1", kPool, "192.0.2.1"),
       std::nullopt, "pylon.conflict/192.0.2.1", 1},
      {"reserving it again is a no-op", reserve(kConflict, "192.0.2.1", kPool, "192.0.2.1"),
       std::nullopt, "pylon.conflict/192.0.2.1", 1},
      {"a Service cannot request it", assign("ns/web", "192.0.2.1"), ErrorCode::kConflict,
       "pylon.conflict/192.0.2.1", 1},
      {"nor get it as the next free one", assign("ns/web", nullptr), std::nullopt,
       "pylon.conflict/192.0.2.1", 2},
      {"another Service takes 192.0.2.5", assign("ns/db", "192.0.2.5"), std::nullopt,
       "pylon.conflict/192.0.2.1", 3},
      {"a quarantine cannot take the reserved address",
       reserve(kQuarantine, "ns/old@192.0.2.1", kPool, "192.0.2.1"), ErrorCode::kConflict,
       "pylon.conflict/192.0.2.1", 3},
      {"nor can a conflict take an address a Service holds",
       reserve(kConflict, "192.0.2.5", kPool, "192.0.2.5"), ErrorCode::kConflict,
       "pylon.conflict/192.0.2.1", 3},
      {"outside the pool", reserve(kConflict, "198.51.100.1", kPool, "198.51.100.1"),
       ErrorCode::kOutOfRange, "pylon.conflict/192.0.2.1", 3},
      {"an unknown pool", reserve(kConflict, "192.0.2.3", "nope", "192.0.2.3"),
       ErrorCode::kNotFound, "pylon.conflict/192.0.2.1", 3},
      {"an empty id", reserve(kConflict, "", kPool, "192.0.2.3"), ErrorCode::kInvalidArgument,
       "pylon.conflict/192.0.2.1", 3},
      {"freeing another kind's holder frees nothing", unreserve(kQuarantine, "192.0.2.1"),
       std::nullopt, "pylon.conflict/192.0.2.1", 3},
      {"the conflict ends", unreserve(kConflict, "192.0.2.1"), std::nullopt, "", 2},
      {"a quarantine reserves it now", reserve(kQuarantine, "ns/old@192.0.2.1", kPool, "192.0.2.1"),
       std::nullopt, "pylon.quarantine/ns/old@192.0.2.1", 3},
      {"the quarantine ends", unreserve(kQuarantine, "ns/old@192.0.2.1"), std::nullopt, "", 2},
      {"a Service may have it then", assign("ns/web", "192.0.2.1"), std::nullopt, "ns/web", 2},
  };
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools({Pool(kPool, "192.0.2.0/29", "")}));
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Status s = r.act(alloc);
    if (r.fails) {
      ASSERT_FALSE(s.has_value());
      EXPECT_EQ(s.error().code(), *r.fails) << s.error().message();
    } else {
      EXPECT_TRUE(s.has_value()) << s.error().message();
    }
    EXPECT_EQ(Join(alloc.HoldersOf(Addr("192.0.2.1"))), r.holders);
    EXPECT_EQ(alloc.Stats(kPool, Family::kV4)->in_use, r.in_use);
  }
}

}  // namespace
}  // namespace pylon::pool
