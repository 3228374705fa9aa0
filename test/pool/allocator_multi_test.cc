// pool::Allocator::AssignMulti (allocator_multi.cc): multi-pool slots.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pool/allocator.h"
#include "test_util.h"

namespace pylon::pool {
namespace {

using namespace pylon::pool::testing;  // NOLINT
using net::Family;

// Multi-pool (PureLB v2): one new address per slot, kept addresses stay, exhausted slots are
// skipped, nothing at all is an error that changes nothing; Rebuild takes several addresses of
// one family for a multi record; a plain Assign afterwards keeps the first of each family.
TEST(AllocatorScenario, MultiPoolSlots) {
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools(
      {Pool("m", "10.0.0.0-10.0.0.1,10.0.1.0-10.0.1.0,10.0.2.0-10.0.2.9", "fd00::-fd00::9")}));
  auto multi = [&](const char* svc, const char* keep,
                   std::vector<const char*> slots) -> std::string {
    MultiAssignRequest req{Svc(svc), "m", {}, {}, Ports("TCP/80")};
    for (auto a : SplitList(keep)) req.keep.push_back(Addr(a));
    for (const char* s : slots) req.slots.push_back({Range(s)});
    auto r = alloc.AssignMulti(req);
    if (!r) return "error: " + r.error().message();
    std::string out = Join(r->assigned.addresses);
    for (auto i : r->exhausted) out += " full:" + std::to_string(i);
    if (!r->not_kept.empty()) out += " not_kept:" + Join(r->not_kept);
    return out;
  };
  EXPECT_EQ(multi("ns/a", "", {"10.0.0.0-10.0.0.1", "10.0.1.0-10.0.1.0", "fd00::-fd00::9"}),
            "10.0.0.0,10.0.1.0,fd00::");
  // The second range is full now: skipped; the first gives its other address.
  EXPECT_EQ(multi("ns/b", "", {"10.0.0.0-10.0.0.1", "10.0.1.0-10.0.1.0"}), "10.0.0.1 full:1");
  // Nothing free in either: an error, b keeps what it held.
  EXPECT_EQ(multi("ns/c", "", {"10.0.0.0-10.0.0.1", "10.0.1.0-10.0.1.0"}).rfind("error:", 0), 0u);
  EXPECT_EQ(Join(alloc.AddressesOf(Svc("ns/b"))), "10.0.0.1");
  // Incremental: a keeps its three and adds one from the third range; another's address is not
  // kept, an address outside the pool neither.
  EXPECT_EQ(multi("ns/a", "10.0.0.0,10.0.1.0,fd00::,10.0.0.1,10.9.9.9", {"10.0.2.0-10.0.2.9"}),
            "10.0.0.0,10.0.1.0,fd00::,10.0.2.0 not_kept:10.0.0.1,10.9.9.9");
  EXPECT_EQ(alloc.Stats("m", Family::kV4)->in_use, 4u);
  EXPECT_EQ(alloc.Stats("m", Family::kV6)->in_use, 1u);
  // Dropping a family: what is not kept is released.
  auto r = alloc.AssignMulti({Svc("ns/a"), "m", {Addr("10.0.0.0"), Addr("10.0.1.0")}, {}, {}});
  ASSERT_TRUE(r);
  EXPECT_EQ(Join(r->assigned.released), "fd00::,10.0.2.0");
  EXPECT_EQ(alloc.Stats("m", Family::kV6)->in_use, 0u);
  // A slot outside the pool is a caller error.
  EXPECT_EQ(multi("ns/d", "", {"192.0.2.0-192.0.2.9"}).rfind("error:", 0), 0u);
  // Rebuild: a multi record may add a second IPv4 address; a plain one may not.
  auto conflicts = alloc.Rebuild({{Svc("ns/a"), "m", Addr("10.0.0.0"), "", {}, true},
                                  {Svc("ns/a"), "m", Addr("10.0.1.0"), "", {}, true},
                                  {Svc("ns/b"), "m", Addr("10.0.2.0"), "", {}, false},
                                  {Svc("ns/b"), "m", Addr("10.0.2.1"), "", {}, false}});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].record.address, Addr("10.0.2.1"));
  EXPECT_EQ(Join(alloc.AddressesOf(Svc("ns/a"))), "10.0.0.0,10.0.1.0");
  // Multi-pool off: a plain Assign keeps the first IPv4 address and frees the other.
  auto plain = alloc.Assign({Svc("ns/a"), "m", Fams("4"), {}, "", {}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(Join(plain->addresses), "10.0.0.0");
  EXPECT_EQ(Join(plain->released), "10.0.1.0");
  EXPECT_EQ(alloc.Stats("m", Family::kV4)->in_use, 2u);
}

}  // namespace
}  // namespace pylon::pool
