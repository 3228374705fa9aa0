// pool::Allocator::Rebuild (allocator_rebuild.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pool/allocator.h"
#include "test_util.h"

namespace pylon::pool {
namespace {

using namespace pylon::pool::testing;  // NOLINT
using net::Family;

TEST(AllocatorScenario, RebuildConflictMessagesNameTheHolder) {
  Allocator alloc;
  ASSERT_TRUE(alloc.SetPools({Pool("p", "192.0.2.0/30", "")}));
  auto conflicts = alloc.Rebuild({Rec("ns/first", "p", "192.0.2.1", "", "TCP/80"),
                                  Rec("ns/second", "p", "192.0.2.1", "", "TCP/80")});
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].error.code(), ErrorCode::kConflict);
  EXPECT_NE(conflicts[0].error.message().find("held by ns/first"), std::string::npos)
      << conflicts[0].error.message();
  EXPECT_EQ(Join(alloc.HoldersOf(Addr("192.0.2.1"))), "ns/first");
}

}  // namespace
}  // namespace pylon::pool
