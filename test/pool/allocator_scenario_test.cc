// One allocator walked through a table of rows, MetalLB-style: each row acts on the state the
// previous rows left behind.
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

constexpr const char* kDual = "ServiceGroup purelb-system/dual";
constexpr const char* kShared = "LoadBalancerClass shared";

enum class Op { kSetPools, kAssign, kRelease, kRebuild, kAdopt };

struct Row {
  const char* desc;
  Op op = Op::kAssign;
  const char* svc = "";
  const char* pool = kDual;
  const char* fams = "4";
  const char* requested = "";
  const char* sharing = "";
  const char* ports = "TCP/80";
  std::vector<PoolDefinition> pools = {};
  std::vector<ExistingRecord> records = {};
  // kAssign: the addresses; kRelease: the released ones; kSetPools: "svc=addr;..." evictions;
  // kRebuild, kAdopt: "svc=addr:Code;..." conflicts.
  const char* want = "";
  std::optional<ErrorCode> error = std::nullopt;
  const char* error_has = "";
  const char* acquired = nullptr;  // checked when set
  const char* released = nullptr;  // checked when set
  std::function<void(const Allocator&)> check = {};
};

std::function<void(const Allocator&)> InUse(const char* pool, Family f, std::uint64_t in_use,
                                            net::Uint128 size) {
  return [=](const Allocator& a) {
    auto s = a.Stats(pool, f);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(s->in_use, in_use) << pool;
    EXPECT_EQ(net::ToDecimal(s->size), net::ToDecimal(size)) << pool;
  };
}

std::function<void(const Allocator&)> Holds(const char* svc, const char* addrs) {
  return [=](const Allocator& a) { EXPECT_EQ(Join(a.AddressesOf(Svc(svc))), addrs) << svc; };
}

std::function<void(const Allocator&)> HeldBy(const char* addr, const char* holders) {
  return [=](const Allocator& a) { EXPECT_EQ(Join(a.HoldersOf(Addr(addr))), holders) << addr; };
}

std::function<void(const Allocator&)> All(std::vector<std::function<void(const Allocator&)>> fs) {
  return [=](const Allocator& a) {
    for (const auto& f : fs) f(a);
  };
}

const net::Uint128 k2to64 = net::Uint128{1} << 64;

TEST(AllocatorScenario, WalksThroughTheTable) {
  const auto dual = Pool(kDual, "192.0.2.0/29,192.0.2.100-192.0.2.101", "2001:db8:1::/64");
  const auto dual_small = Pool(kDual, "192.0.2.0/30,192.0.2.100-192.0.2.101", "2001:db8:1::/64");
  const auto shared = Pool(kShared, "198.51.100.0-198.51.100.3", "");

  // clang-format off
  const std::vector<Row> rows = {
      {.desc = "install the pools", .op = Op::kSetPools, .pools = {dual, shared}, .check = All({InUse(kDual, Family::kV4, 0, 10), InUse(kDual, Family::kV6, 0, k2to64)})},
      {.desc = "a gets the first address", .svc = "ns/a", .want = "192.0.2.0", .acquired = "192.0.2.0", .released = ""},
      {.desc = "b gets the next", .svc = "ns/b", .want = "192.0.2.1"},
      {.desc = "c gets the next", .svc = "ns/c", .want = "192.0.2.2"},
      {.desc = "a is released", .op = Op::kRelease, .svc = "ns/a", .want = "192.0.2.0", .check = All({Holds("ns/a", ""), HeldBy("192.0.2.0", "")})},
      {.desc = "d gets .3, not the just-freed .0 (next-fit)", .svc = "ns/d", .want = "192.0.2.3"},
      {.desc = "a comes back and gets .4", .svc = "ns/a", .want = "192.0.2.4"},
      {.desc = "e gets .5", .svc = "ns/e", .want = "192.0.2.5"},
      {.desc = "f gets .6", .svc = "ns/f", .want = "192.0.2.6"},
      {.desc = "g gets .7", .svc = "ns/g", .want = "192.0.2.7"},
      {.desc = "h wraps around the first range to the freed .0", .svc = "ns/h", .want = "192.0.2.0"},
      {.desc = "i falls through to the second range", .svc = "ns/i", .want = "192.0.2.100"},
      {.desc = "j takes the last address", .svc = "ns/j", .want = "192.0.2.101"},
      {.desc = "k: every range is exhausted", .svc = "ns/k", .error = ErrorCode::kExhausted, .error_has = "no free IPv4 address", .check = All({InUse(kDual, Family::kV4, 10, 10), Holds("ns/k", "")})},
      {.desc = "k claims e's address, which is not shareable", .svc = "ns/k", .requested = "192.0.2.5", .error = ErrorCode::kConflict, .error_has = "held by ns/e, which does not allow sharing"},
      {.desc = "k claims an address outside the pool", .svc = "ns/k", .requested = "203.0.113.9", .error = ErrorCode::kOutOfRange, .error_has = "203.0.113.9 is not in pool"},
      {.desc = "k requests IPv6 but gets IPv4 only", .svc = "ns/k", .requested = "2001:db8:1::9", .error = ErrorCode::kInvalidArgument, .error_has = "gets IPv4 only"},
      {.desc = "k names an unknown pool", .svc = "ns/k", .pool = "ServiceGroup nope", .error = ErrorCode::kNotFound, .error_has = "unknown pool"},
      {.desc = "a re-assigned unchanged keeps its address", .svc = "ns/a", .want = "192.0.2.4", .acquired = "", .released = ""},

      // Sharing.
      {.desc = "s1 with key k", .svc = "ns/s1", .pool = kShared, .sharing = "k", .want = "198.51.100.0"},
      {.desc = "s2, same key, other port, shares s1's address", .svc = "ns/s2", .pool = kShared, .sharing = "k", .ports = "TCP/443", .want = "198.51.100.0", .check = All({HeldBy("198.51.100.0", "ns/s1,ns/s2"), InUse(kShared, Family::kV4, 1, 4)})},
      {.desc = "s3, same key, overlapping port, gets a new address", .svc = "ns/s3", .pool = kShared, .sharing = "k", .want = "198.51.100.1"},
      {.desc = "s4 claims .0 with a port s2 uses", .svc = "ns/s4", .pool = kShared, .requested = "198.51.100.0", .sharing = "k", .ports = "UDP/53,TCP/443", .error = ErrorCode::kConflict, .error_has = "shared with ns/s2, which already uses TCP/443"},
      {.desc = "s4 claims .0 under another key", .svc = "ns/s4", .pool = kShared, .requested = "198.51.100.0", .sharing = "other", .ports = "UDP/53", .error = ErrorCode::kConflict, .error_has = "under sharing key \"k\", not \"other\""},
      {.desc = "s4 claims .0 without a key", .svc = "ns/s4", .pool = kShared, .requested = "198.51.100.0", .ports = "UDP/53", .error = ErrorCode::kConflict, .error_has = "this Service has no sharing key"},
      {.desc = "s4 claims .0 with key k and a free port", .svc = "ns/s4", .pool = kShared, .requested = "198.51.100.0", .sharing = "k", .ports = "UDP/53", .want = "198.51.100.0", .check = All({HeldBy("198.51.100.0", "ns/s1,ns/s2,ns/s4"), InUse(kShared, Family::kV4, 2, 4)})},
      {.desc = "s1 is released; .0 stays with s2 and s4", .op = Op::kRelease, .svc = "ns/s1", .want = "198.51.100.0", .check = All({HeldBy("198.51.100.0", "ns/s2,ns/s4"), InUse(kShared, Family::kV4, 2, 4)})},
      {.desc = "s2 now wants UDP/53 like s4: moves to s3's shared address", .svc = "ns/s2", .pool = kShared, .sharing = "k", .ports = "UDP/53", .want = "198.51.100.1", .acquired = "198.51.100.1", .released = "198.51.100.0", .check = All({HeldBy("198.51.100.0", "ns/s4"), HeldBy("198.51.100.1", "ns/s2,ns/s3")})},
      {.desc = "s4 is released; .0 is free", .op = Op::kRelease, .svc = "ns/s4", .want = "198.51.100.0", .check = All({HeldBy("198.51.100.0", ""), InUse(kShared, Family::kV4, 1, 4)})},

      // Dual stack, all or nothing, re-assignment.
      {.desc = "x dual-stack: IPv4 exhausted, so no IPv6 either", .svc = "ns/x", .fams = "46", .error = ErrorCode::kExhausted, .check = All({Holds("ns/x", ""), InUse(kDual, Family::kV6, 0, k2to64)})},
      {.desc = "j is released", .op = Op::kRelease, .svc = "ns/j", .want = "192.0.2.101"},
      {.desc = "x dual-stack", .svc = "ns/x", .fams = "46", .want = "192.0.2.101,2001:db8:1::", .check = InUse(kDual, Family::kV6, 1, k2to64)},
      {.desc = "x asks IPv6 first: same addresses, new order", .svc = "ns/x", .fams = "64", .want = "2001:db8:1::,192.0.2.101", .acquired = "", .released = ""},
      {.desc = "x requests another IPv6 address", .svc = "ns/x", .fams = "46", .requested = "2001:db8:1::ff", .want = "192.0.2.101,2001:db8:1::ff", .acquired = "2001:db8:1::ff", .released = "2001:db8:1::"},
      {.desc = "x requests e's IPv4: refused, x keeps both addresses", .svc = "ns/x", .fams = "46", .requested = "192.0.2.5, 2001:db8:1::fe", .error = ErrorCode::kConflict, .error_has = "ns/e", .check = All({Holds("ns/x", "192.0.2.101,2001:db8:1::ff"), HeldBy("2001:db8:1::fe", ""), InUse(kDual, Family::kV6, 1, k2to64)})},
      {.desc = "x drops IPv6", .svc = "ns/x", .want = "192.0.2.101", .acquired = "", .released = "2001:db8:1::ff", .check = InUse(kDual, Family::kV6, 0, k2to64)},
      {.desc = "x moves to the shared pool", .svc = "ns/x", .pool = kShared, .want = "198.51.100.2", .acquired = "198.51.100.2", .released = "192.0.2.101", .check = InUse(kDual, Family::kV4, 9, 10)},
      {.desc = "y: requested IPv6 outside the pool, so no IPv4 either", .svc = "ns/y", .fams = "46", .requested = "2001:db8:9::1", .error = ErrorCode::kOutOfRange, .check = All({Holds("ns/y", ""), InUse(kDual, Family::kV4, 9, 10)})},

      // Pool definitions change.
      {.desc = "shrink the first IPv4 range: holders of .4-.7 are evicted", .op = Op::kSetPools, .pools = {dual_small, shared}, .want = "ns/a=192.0.2.4;ns/e=192.0.2.5;ns/f=192.0.2.6;ns/g=192.0.2.7", .check = All({InUse(kDual, Family::kV4, 5, 6), Holds("ns/a", ""), Holds("ns/h", "192.0.2.0"), Holds("ns/x", "198.51.100.2")})},
      {.desc = "grow it back: nothing is evicted", .op = Op::kSetPools, .pools = {dual, shared}, .want = "", .check = InUse(kDual, Family::kV4, 5, 10)},
      {.desc = "a gets .4: the range kept its next-fit position", .svc = "ns/a", .want = "192.0.2.4"},
      {.desc = "remove the shared pool: its holders are evicted", .op = Op::kSetPools, .pools = {dual}, .want = "ns/s2=198.51.100.1;ns/s3=198.51.100.1;ns/x=198.51.100.2", .check = All({Holds("ns/x", ""), HeldBy("198.51.100.1", "")})},
      {.desc = "assign from the removed pool", .svc = "ns/x", .pool = kShared, .error = ErrorCode::kNotFound},

      // Restart: rebuild from the Services' records, first record wins.
      {.desc = "rebuild", .op = Op::kRebuild, .records = {Rec("ns/p1", kDual, "192.0.2.5", "", "TCP/80"), Rec("ns/p2", kDual, "192.0.2.5", "", "TCP/81"), Rec("ns/p3", "LoadBalancerClass gone", "192.0.2.6", "", "TCP/80"), Rec("ns/p4", kDual, "198.51.100.9", "", "TCP/80"), Rec("ns/q1", kDual, "192.0.2.6", "k", "TCP/80"), Rec("ns/q2", kDual, "192.0.2.6", "k", "TCP/80"), Rec("ns/q3", kDual, "192.0.2.6", "k", "TCP/443"), Rec("ns/p1", kDual, "192.0.2.7", "", "TCP/80"), Rec("ns/p1", kDual, "2001:db8:1::5", "", "TCP/80"), Rec("ns/p1", kDual, "2001:db8:1::5", "", "TCP/80"), Rec("ns/q4", kDual, "192.0.2.100", "k", "TCP/80"), Rec("ns/q4", kDual, "2001:db8:1::6", "other", "TCP/80"),}, .want = "ns/p2=192.0.2.5:Conflict;ns/p3=192.0.2.6:NotFound;ns/p4=198.51.100.9:OutOfRange;" "ns/q2=192.0.2.6:Conflict;ns/p1=192.0.2.7:Conflict;" "ns/p1=2001:db8:1::5:AlreadyExists;ns/q4=2001:db8:1::6:Conflict", .check = All({Holds("ns/a", ""), Holds("ns/p1", "192.0.2.5,2001:db8:1::5"), HeldBy("192.0.2.6", "ns/q1,ns/q3"), InUse(kDual, Family::kV4, 3, 10), InUse(kDual, Family::kV6, 1, k2to64)})},
      {.desc = "after the rebuild, allocation continues after the highest held address", .svc = "ns/n1", .want = "192.0.2.7"},
      {.desc = "then wraps to the start of the range", .svc = "ns/n2", .want = "192.0.2.0"},
      {.desc = "q2 allocates with key k and TCP/80: q1 is on .6 and q4 on .100 with TCP/80, so a " "new one", .svc = "ns/q2", .sharing = "k", .want = "192.0.2.1"},
      {.desc = "q5 with key k and UDP/53 joins the lowest address shared under k", .svc = "ns/q5", .sharing = "k", .ports = "UDP/53", .want = "192.0.2.1"},

      // A pool comes back into force (its group was deleted or invalid): what the Services still
      // show there is adopted on top of the state, before anything new is handed out from it.
      {.desc = "the shared pool comes back, larger", .op = Op::kSetPools, .pools = {dual, Pool(kShared, "198.51.100.0-198.51.100.7", "")}},
      {.desc = "adopt what Services show in it; nothing else is touched", .op = Op::kAdopt, .records = {Rec("ns/r1", kShared, "198.51.100.2", "", "TCP/80"), Rec("ns/r2", kShared, "198.51.100.2", "", "TCP/80"), Rec("ns/r3", kShared, "198.51.100.9", "", "TCP/80"), Rec("ns/p1", kShared, "198.51.100.4", "", "TCP/80"), Rec("ns/r4", kShared, "198.51.100.5", "", "TCP/80"),}, .want = "ns/r2=198.51.100.2:Conflict;ns/r3=198.51.100.9:OutOfRange;" "ns/p1=198.51.100.4:Conflict", .check = All({Holds("ns/r1", "198.51.100.2"), Holds("ns/r4", "198.51.100.5"), Holds("ns/p1", "192.0.2.5,2001:db8:1::5"), HeldBy("192.0.2.6", "ns/q1,ns/q3"), InUse(kShared, Family::kV4, 2, 8), InUse(kDual, Family::kV4, 6, 10)})},
      {.desc = "the next address of the adopted pool comes after the highest adopted", .svc = "ns/r5", .pool = kShared, .want = "198.51.100.6"},
  };
  // clang-format on

  Allocator alloc;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.desc);
    std::string got;
    std::optional<Error> err;
    switch (row.op) {
      case Op::kSetPools: {
        auto r = alloc.SetPools(row.pools);
        if (!r) {
          err = r.error();
          break;
        }
        for (const auto& e : *r) {
          got += (got.empty() ? "" : ";") + e.service.ToString() + "=" + e.address.ToString();
          EXPECT_FALSE(e.reason.empty());
        }
        break;
      }
      case Op::kAssign: {
        auto requested = ParseRequestedAddresses(row.requested);
        ASSERT_TRUE(requested) << requested.error().message();
        AssignRequest req{Svc(row.svc), row.pool,    Fams(row.fams),
                          *requested,   row.sharing, Ports(row.ports)};
        const auto before = alloc.AddressesOf(req.service);
        auto r = alloc.Assign(req);
        if (!r) {
          err = r.error();
          EXPECT_EQ(Join(alloc.AddressesOf(req.service)), Join(before)) << "not all-or-nothing";
          break;
        }
        got = Join(r->addresses);
        EXPECT_EQ(Join(alloc.AddressesOf(req.service)), got);
        if (row.acquired) {
          EXPECT_EQ(Join(r->acquired), row.acquired);
        }
        if (row.released) {
          EXPECT_EQ(Join(r->released), row.released);
        }
        break;
      }
      case Op::kRelease:
        got = Join(alloc.Release(Svc(row.svc)));
        break;
      case Op::kRebuild:
      case Op::kAdopt:
        for (const auto& c :
             row.op == Op::kRebuild ? alloc.Rebuild(row.records) : alloc.Adopt(row.records)) {
          got += (got.empty() ? "" : ";") + c.record.service.ToString() + "=" +
                 c.record.address.ToString() + ":" + ErrorCodeName(c.error.code());
          EXPECT_NE(c.error.message().find(c.record.service.ToString()), std::string::npos)
              << c.error.message();
        }
        break;
    }
    if (row.error) {
      ASSERT_TRUE(err.has_value()) << "expected " << ErrorCodeName(*row.error) << ", got " << got;
      EXPECT_EQ(ErrorCodeName(err->code()), std::string(ErrorCodeName(*row.error)))
          << err->message();
      EXPECT_NE(err->message().find(row.error_has), std::string::npos) << err->message();
    } else {
      ASSERT_FALSE(err.has_value()) << err->message();
      EXPECT_EQ(got, row.want);
    }
    if (row.check) row.check(alloc);
  }
}

TEST(AllocatorScenario, SetPoolsRejectsOverlapsAndKeepsState) {
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools({Pool("a", "192.0.2.0/30", "")}));
  ASSERT_TRUE(alloc.Assign({Svc("ns/s"), "a", Fams("4"), {}, "", Ports("TCP/80")}));
  struct Case {
    std::vector<PoolDefinition> pools;
    const char* error_has;
  };
  const Case cases[] = {
      {{Pool("a", "192.0.2.0/30", ""), Pool("b", "192.0.2.2-192.0.2.9", "")},
       "overlap in pools \"a\" and \"b\""},
      {{Pool("a", "192.0.2.0/24,192.0.2.10-192.0.2.20", "")}, "overlap in pool \"a\""},
      {{Pool("a", "192.0.2.0/30", ""), Pool("a", "198.51.100.0/30", "")}, "defined twice"},
      {{Pool("", "192.0.2.0/30", "")}, "empty key"},
      {{PoolDefinition{"a", Ranges("2001:db8::/64"), {}}}, "listed as IPv4"},
  };
  for (const auto& c : cases) {
    auto r = alloc.SetPools(c.pools);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(c.error_has), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(Join(alloc.AddressesOf(Svc("ns/s"))), "192.0.2.0");
  EXPECT_EQ(alloc.Stats("a", Family::kV4)->in_use, 1u);
}

TEST(AllocatorScenario, SizesAreExactFor128BitPools) {
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools({Pool("big", "", "2001:db8::/48,2001:db9::/64,2001:dba::1")}));
  auto s = alloc.Stats("big", Family::kV6);
  ASSERT_TRUE(s);
  EXPECT_EQ(net::ToDecimal(s->size), "1208944266358702884257793");  // 2^80 + 2^64 + 1
  EXPECT_EQ(*alloc.OfferedFamilies("big"), std::vector<Family>{Family::kV6});
  // The whole IPv6 space: the last address wraps back to the first without overflow.
  ASSERT_TRUE(alloc.SetPools({Pool("top", "",
                                   "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe-"
                                   "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")}));
  std::vector<std::string> got;
  for (const char* svc : {"ns/a", "ns/b", "ns/c"}) {
    auto r = alloc.Assign({Svc(svc), "top", Fams("6"), {}, "", {}});
    got.push_back(r ? r->addresses[0].ToString() : ErrorCodeName(r.error().code()));
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
                                      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "Exhausted"}));
  alloc.Release(Svc("ns/a"));
  auto again = alloc.Assign({Svc("ns/c"), "top", Fams("6"), {}, "", {}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->addresses[0].ToString(), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe");
}

TEST(AllocatorScenario, SharingIsPerPoolAndFamily) {
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools({Pool("p1", "192.0.2.0/30", "2001:db8::/64"),
                              Pool("p2", "198.51.100.0/30", "2001:db8:1::/64")}));
  auto assign = [&](const char* svc, const char* pool, const char* fams, const char* ports) {
    auto r = alloc.Assign({Svc(svc), pool, Fams(fams), {}, "k", Ports(ports)});
    return r ? Join(r->addresses) : std::string(ErrorCodeName(r.error().code()));
  };
  EXPECT_EQ(assign("ns/a", "p1", "46", "TCP/80"), "192.0.2.0,2001:db8::");
  // Same key, disjoint ports: both families join a's addresses, in the requested order.
  EXPECT_EQ(assign("ns/b", "p1", "64", "TCP/443"), "2001:db8::,192.0.2.0");
  // Same key in another pool: no sharing across pools.
  EXPECT_EQ(assign("ns/c", "p2", "4", "UDP/53"), "198.51.100.0");
  // IPv6 only: joins a's IPv6 address, IPv4 untouched.
  EXPECT_EQ(assign("ns/d", "p1", "6", "UDP/53"), "2001:db8::");
  EXPECT_EQ(Join(alloc.HoldersOf(Addr("2001:db8::"))), "ns/a,ns/b,ns/d");
  EXPECT_EQ(Join(alloc.HoldersOf(Addr("192.0.2.0"))), "ns/a,ns/b");
  EXPECT_EQ(alloc.Stats("p1", Family::kV4)->in_use, 1u);
  EXPECT_EQ(alloc.Stats("p1", Family::kV6)->in_use, 1u);
  // a changes its key: it is not the only holder, so it moves to new addresses.
  auto moved = alloc.Assign({Svc("ns/a"), "p1", Fams("46"), {}, "other", Ports("TCP/80")});
  ASSERT_TRUE(moved) << moved.error().message();
  EXPECT_EQ(Join(moved->addresses), "192.0.2.1,2001:db8::1");
  EXPECT_EQ(Join(alloc.HoldersOf(Addr("192.0.2.0"))), "ns/b");
  // b is now alone on 192.0.2.0 and changes its key: it keeps the address.
  auto rekeyed = alloc.Assign({Svc("ns/b"), "p1", Fams("4"), {}, "", Ports("TCP/443")});
  ASSERT_TRUE(rekeyed) << rekeyed.error().message();
  EXPECT_EQ(Join(rekeyed->addresses), "192.0.2.0");
  EXPECT_EQ(Join(rekeyed->released), "2001:db8::");
  EXPECT_EQ(alloc.Lookup(Addr("192.0.2.0"))->sharing_key, "");
  // Nobody may join b's address under k any more.
  EXPECT_EQ(assign("ns/e", "p1", "4", "UDP/5353"), "192.0.2.2");
}

TEST(AllocatorScenario, AssignRejectsMalformedRequests) {
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools({Pool("v4", "192.0.2.0/30", "")}));
  struct Case {
    const char* fams;
    ErrorCode code;
    const char* error_has;
  };
  const Case cases[] = {
      {"", ErrorCode::kInvalidArgument, "one or two distinct families"},
      {"44", ErrorCode::kInvalidArgument, "one or two distinct families"},
      {"6", ErrorCode::kInvalidArgument, "pool \"v4\" has no IPv6 range"},
      {"46", ErrorCode::kInvalidArgument, "has no IPv6 range"},
  };
  for (const auto& c : cases) {
    auto r = alloc.Assign({Svc("ns/s"), "v4", Fams(c.fams), {}, "", {}});
    ASSERT_FALSE(r) << c.fams;
    EXPECT_EQ(r.error().code(), c.code) << c.fams;
    EXPECT_NE(r.error().message().find(c.error_has), std::string::npos) << r.error().message();
  }
  auto empty_key = alloc.Assign({ServiceKey(), "v4", Fams("4"), {}, "", {}});
  ASSERT_FALSE(empty_key);
  EXPECT_EQ(empty_key.error().code(), ErrorCode::kInvalidArgument);
  auto conflicts = alloc.Rebuild({{ServiceKey(), "v4", Addr("192.0.2.1"), "", {}}});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].error.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(alloc.Stats("v4", Family::kV4)->in_use, 0u);
  EXPECT_EQ(alloc.service_count(), 0u);
}

// balancePools (PureLB v2): a new address comes from the range with the fewest in use, ties to
// the earlier range; a release, SetPools and Rebuild keep the per-range counts right.
TEST(AllocatorScenario, BalancedPoolTakesTheLeastUsedRange) {
  Allocator alloc;
  PoolDefinition def = Pool("bal", "10.0.0.0-10.0.0.9,10.0.1.0-10.0.1.9,10.0.2.0-10.0.2.1", "");
  def.balance = true;
  ASSERT_TRUE(alloc.SetPools({def}));
  auto assign = [&](const char* svc) -> std::string {
    auto r = alloc.Assign({Svc(svc), "bal", Fams("4"), {}, "", Ports("TCP/80")});
    return r ? Join(r->addresses) : "error: " + r.error().message();
  };
  struct Step {
    const char* svc;
    const char* want;
  };
  const Step first[] = {
      {"ns/a", "10.0.0.0"},                        // all empty: the first range
      {"ns/b", "10.0.1.0"},                        // 1,0,0 -> the second
      {"ns/c", "10.0.2.0"},                        // 1,1,0 -> the third
      {"ns/d", "10.0.0.1"},                        // 1,1,1 -> the first again
      {"ns/e", "10.0.1.1"}, {"ns/f", "10.0.2.1"},  // the third is now full
      {"ns/g", "10.0.0.2"},                        // 2,2,2(full) -> the first
      {"ns/h", "10.0.1.2"},
  };
  for (const Step& s : first) EXPECT_EQ(assign(s.svc), s.want) << s.svc;
  // Two released from the second range: it is the emptiest now.
  alloc.Release(Svc("ns/b"));
  alloc.Release(Svc("ns/e"));
  EXPECT_EQ(assign("ns/i"), "10.0.1.3");  // next-fit inside the range
  // SetPools with the same ranges recounts from what is held: 3 / 2 / 2(full).
  ASSERT_TRUE(alloc.SetPools({def}));
  EXPECT_EQ(assign("ns/j"), "10.0.1.4");
  // Rebuild from records: 1 in the first range, 0 in the second, 2 in the third.
  auto conflicts = alloc.Rebuild({{Svc("ns/a"), "bal", Addr("10.0.0.0"), "", Ports("TCP/80")},
                                  {Svc("ns/c"), "bal", Addr("10.0.2.0"), "", Ports("TCP/80")},
                                  {Svc("ns/f"), "bal", Addr("10.0.2.1"), "", Ports("TCP/80")}});
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(assign("ns/k"), "10.0.1.0");  // the empty second range (Rebuild resets next-fit)
  EXPECT_EQ(assign("ns/l"), "10.0.0.1");  // 1,1 -> the first
  // Without balance the first range fills first.
  def.balance = false;
  ASSERT_TRUE(alloc.SetPools({def}));
  EXPECT_EQ(assign("ns/m"), "10.0.0.2");
  EXPECT_EQ(assign("ns/n"), "10.0.0.3");
}

}  // namespace
}  // namespace pylon::pool

namespace pylon::pool {
namespace {

// NextFree predicts exactly the addresses the next Assigns hand out: checked by assigning them,
// in scenarios with holes, a wrap-around, balanced ranges, a /64 and an exhausted pool.
TEST(AllocatorScenario, NextFreeIsWhatAssignHandsOutNext) {
  struct Case {
    const char* desc;
    const char *v4, *v6;  // the pool's ranges
    bool balance;
    std::vector<const char*> held_first;  // Services assigned (then some released) before
    std::vector<const char*> released;
    Family family;
    std::size_t count;
    const char* want;
  };
  // clang-format off
  const Case cases[] = {
      {"empty pool: from the start", "192.0.2.0-192.0.2.3", "", false, {}, {}, Family::kV4, 3, "192.0.2.0,192.0.2.1,192.0.2.2"},
      {"next-fit after what was handed out; a released address comes last", "192.0.2.0-192.0.2.3", "", false, {"ns/a", "ns/b"}, {"ns/a"}, Family::kV4, 3, "192.0.2.2,192.0.2.3,192.0.2.0"},
      {"fewer than asked when the pool is nearly full", "192.0.2.0-192.0.2.3", "", false, {"ns/a", "ns/b", "ns/c"}, {}, Family::kV4, 4, "192.0.2.3"},
      {"exhausted: none", "192.0.2.0-192.0.2.1", "", false, {"ns/a", "ns/b"}, {}, Family::kV4, 2, ""},
      {"ranges in order", "192.0.2.0-192.0.2.1,192.0.2.100-192.0.2.101", "", false, {"ns/a"}, {}, Family::kV4, 3, "192.0.2.1,192.0.2.100,192.0.2.101"},
      {"balanced ranges alternate", "10.0.0.0-10.0.0.9,10.0.1.0-10.0.1.9", "", true, {"ns/a"}, {}, Family::kV4, 3, "10.0.1.0,10.0.0.1,10.0.1.1"},
      {"a /64: only the next few, never a scan", "", "2001:db8:1::/64", false, {"ns/a"}, {}, Family::kV6, 3, "2001:db8:1::1,2001:db8:1::2,2001:db8:1::3"},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.desc);
    Allocator alloc;
    PoolDefinition def = Pool("p", c.v4, c.v6);
    def.balance = c.balance;
    ASSERT_TRUE(alloc.SetPools({def}));
    const char* fam = c.family == Family::kV4 ? "4" : "6";
    for (const char* s : c.held_first) {
      ASSERT_TRUE(alloc.Assign({Svc(s), "p", Fams(fam), {}, "", Ports("TCP/80")}));
    }
    for (const char* s : c.released) alloc.Release(Svc(s));
    auto next = alloc.NextFree("p", c.family, c.count);
    ASSERT_TRUE(next) << next.error().message();
    EXPECT_EQ(Join(*next), c.want);
    // NextFree changed nothing, and Assign agrees with it.
    for (std::size_t i = 0; i < next->size(); ++i) {
      const std::string svc = "ns/next" + std::to_string(i);
      auto r = alloc.Assign({Svc(svc.c_str()), "p", Fams(fam), {}, "", Ports("TCP/80")});
      ASSERT_TRUE(r) << r.error().message();
      EXPECT_EQ(r->addresses.at(0), next->at(i)) << i;
    }
  }
  Allocator alloc;
  EXPECT_EQ(alloc.NextFree("nope", Family::kV4, 1).error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace pylon::pool
