// The allocator's typed work items: one identity per unit of work (the queue dedups on it) and an
// order.
#include "allocator/work_item.h"

#include <gtest/gtest.h>

#include <set>

#include "common/clock.h"
#include "k8s/workqueue.h"

namespace pylon::allocator {
namespace {

using config::ConfigKey;
using config::ObjectKind;

TEST(WorkItem, Identity) {
  const WorkItem svc = WorkItem::Service({"default", "web"});
  EXPECT_EQ(svc, WorkItem::ServiceNamed("default/web"));
  EXPECT_NE(svc, WorkItem::ServiceNamed("default/web2"));
  const WorkItem st = WorkItem::ConfigStatus({ObjectKind::kServiceGroup, "purelb-system", "web"});
  // A Service and a ServiceGroup of the same name are different work.
  EXPECT_NE(st, WorkItem::ServiceNamed("purelb-system/web"));
  std::set<WorkItem> items = {svc, WorkItem::Config(), st, WorkItem::ServiceNamed("default/web")};
  EXPECT_EQ(items.size(), 3u);
}

TEST(WorkItem, QueueDedupsAndHandsOutTheSameItem) {
  FakeClock clock;
  k8s::BasicWorkQueue<WorkItem> q(clock);
  q.Add(WorkItem::ServiceNamed("default/web"));
  q.Add(WorkItem::Service({"default", "web"}));
  q.Add(WorkItem::Config());
  EXPECT_EQ(q.Len(), 2u);
  auto first = q.TryGet();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, WorkItem::Kind::kService);
  EXPECT_EQ(first->service, (ObjectKey{"default", "web"}));
  q.Add(*first);  // re-added while processing: queued again at Done, not handed out twice
  auto second = q.TryGet();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->kind, WorkItem::Kind::kConfig);
  EXPECT_FALSE(q.TryGet());
  q.Done(*first);
  EXPECT_EQ(q.TryGet(), first);
}

}  // namespace
}  // namespace pylon::allocator
