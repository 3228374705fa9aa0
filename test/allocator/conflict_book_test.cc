// Address conflicts reported by the agents (purelb.io/address-conflicts) in the reconcile core
// and in the group/class status: scenario rows over one pool state and one ConflictBook.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/config_status.h"
#include "allocator/conflict_book.h"
#include "allocator/rebuild.h"
#include "allocator/reconcile.h"
#include "allocator/service_writes.h"
#include "common/time.h"
#include "config/validate.h"
#include "model/conflicts.h"
#include "reconcile_world.h"
#include "test_objects.h"

namespace pylon::allocator::testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

std::string Entry(const std::string& ip, WallTime at) {
  return ip + " " + kMac + " node2 eth0 " + FormatTime(at);
}
// The annotation the agent writes for `ip`.
std::pair<const std::string, std::string> Conflict(const std::string& ip, WallTime at) {
  return {model::ConflictAnnotationKey(*net::IpAddress::Parse(ip)), Entry(ip, at)};
}

class World : public ConflictWorld {
 public:
  // Reconciles at wall time `now` with the status the previous writes left.
  Decision Run(SvcSpec s, WallTime now) {
    const std::string key = s.ns + "/" + s.name;
    json obj = testing::ServiceJson(s);
    if (s.ingress.empty() && shown_.count(key)) obj["status"] = shown_[key];
    Decision d = ReconcileAt(obj, now);
    ServiceWrites w = PlanServiceWrites(obj, d, "2025-03-01T10:00:00Z");
    if (w.status) shown_[key] = (*w.status)["status"];
    return d;
  }
  Decision Delete(const std::string& name) {
    shown_.erase("default/" + name);
    return ReconcileGone(*pool::ServiceKey::Make("default", name), pool_, &book_);
  }
  bool Reserved(const std::string& ip) {
    return pool_.AddressesOf(ReservationKey(Ip(ip))) == std::vector<net::IpAddress>{Ip(ip)};
  }

  std::map<std::string, json> shown_;
};

SvcSpec Web(std::map<std::string, std::string> annotations = {}) {
  SvcSpec s;
  s.name = "web";
  s.annotations = std::move(annotations);
  return s;
}

TEST(ConflictReconcileTest, UnrequestedAddressIsReplacedAndKeptOutOfThePool) {
  World w;
  Decision d = w.Run(Web(), kT0);
  ASSERT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});

  // The winner's probe was answered by a foreign MAC.
  const auto ann = std::map<std::string, std::string>{Conflict("192.0.2.10", kT0 + seconds(1))};
  d = w.Run(Web(ann), kT0 + seconds(2));
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.11"});
  EXPECT_EQ(EventReasons(d),
            (std::vector<std::string>{"AddressConflict", "AddressReleased", "AddressAssigned"}));
  EXPECT_TRUE(d.events[0].warning);
  EXPECT_NE(
      d.events[0].message.find("192.0.2.10 is in use on the network by another host (MAC " + kMac),
      std::string::npos)
      << d.events[0].message;
  EXPECT_NE(d.events[0].message.find("assigned 192.0.2.11 instead"), std::string::npos);
  EXPECT_TRUE(d.conflicts_changed);
  ASSERT_TRUE(d.recheck_after.has_value());
  EXPECT_EQ(*d.recheck_after, std::chrono::nanoseconds(minutes(5) - seconds(1)));
  EXPECT_TRUE(w.Reserved("192.0.2.10"));
  auto reports = w.book_.ForPool(kPool);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].address, Ip("192.0.2.10"));
  EXPECT_EQ(reports[0].service, "default/web");
  EXPECT_EQ(reports[0].node, "node2");
  EXPECT_FALSE(reports[0].requested);

  // Unchanged: nothing new decided. Another Service never gets the conflicted address.
  d = w.Run(Web(ann), kT0 + seconds(3));
  EXPECT_TRUE(d.events.empty());
  EXPECT_FALSE(d.conflicts_changed);
  SvcSpec api;
  api.name = "api";
  d = w.Run(api, kT0 + seconds(3));
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.12"});

  // The hold is over: the reservation goes, web keeps its new address.
  d = w.Run(Web(ann), kT0 + seconds(1) + minutes(5));
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.11"});
  EXPECT_TRUE(d.conflicts_changed);
  EXPECT_FALSE(d.recheck_after.has_value());
  EXPECT_FALSE(w.pool_.Lookup(Ip("192.0.2.10")).has_value());
  EXPECT_TRUE(w.book_.ForPool(kPool).empty());
}

TEST(ConflictReconcileTest, RequestedAddressIsRefusedUntilTheHoldEnds) {
  World w;
  auto ann = std::map<std::string, std::string>{{model::kAnnAddresses, "192.0.2.10"},
                                                Conflict("192.0.2.10", kT0)};
  Decision d = w.Run(Web(ann), kT0 + seconds(1));
  ASSERT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_EQ(d.reason, Reason::kAddressConflict);
  ASSERT_TRUE(d.condition.has_value());
  EXPECT_EQ(d.condition->reason, "AddressConflict");
  EXPECT_NE(d.message.find("requested address 192.0.2.10 is in use on the network by another "
                           "host (MAC " +
                           kMac + ", answered the probe of node node2 on eth0"),
            std::string::npos)
      << d.message;
  EXPECT_EQ(EventReasons(d), std::vector<std::string>{"AllocationFailed"});
  EXPECT_TRUE(w.pool_.AddressesOf(*pool::ServiceKey::Make("default", "web")).empty());
  EXPECT_FALSE(w.pool_.Lookup(Ip("192.0.2.10")).has_value());  // nothing else taken, nothing kept
  auto reports = w.book_.ForPool(kPool);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].requested);
  ASSERT_TRUE(d.recheck_after.has_value());

  // Again before the end of the hold: same refusal, no new event.
  d = w.Run(Web(ann), kT0 + minutes(1));
  EXPECT_EQ(d.reason, Reason::kAddressConflict);
  EXPECT_TRUE(d.events.empty());

  // After it: the address is tried again (the agent probes it again).
  d = w.Run(Web(ann), kT0 + minutes(5));
  ASSERT_EQ(d.outcome, Outcome::kAllocated) << d.message;
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  EXPECT_TRUE(w.book_.ForPool(kPool).empty());
}

TEST(ConflictReconcileTest, EntriesOutsideThePoolAndBadEntriesAreIgnored) {
  World w;
  auto ann = std::map<std::string, std::string>{
      Conflict("198.51.100.7", kT0),
      {model::ConflictAnnotationKey(Ip("192.0.2.10")), "192.0.2.10 zz node2 eth0 x"},
      {model::ConflictAnnotationKey(Ip("192.0.2.11")), Entry("192.0.2.10", kT0)},  // wrong key
      {"conflict.purelb.io/nonsense", "nonsense"}};
  Decision d = w.Run(Web(ann), kT0);
  EXPECT_EQ(Ips(d), std::vector<std::string>{"192.0.2.10"});
  EXPECT_TRUE(w.book_.ForPool(kPool).empty());
}

TEST(ConflictReconcileTest, DeletedServiceFreesItsReservations) {
  World w;
  w.Run(Web(), kT0);
  auto ann = std::map<std::string, std::string>{Conflict("192.0.2.10", kT0)};
  w.Run(Web(ann), kT0);
  ASSERT_TRUE(w.Reserved("192.0.2.10"));
  Decision d = w.Delete("web");
  EXPECT_TRUE(d.conflicts_changed);
  EXPECT_FALSE(w.pool_.Lookup(Ip("192.0.2.10")).has_value());
  EXPECT_FALSE(w.pool_.Lookup(Ip("192.0.2.11")).has_value());
  EXPECT_EQ(w.book_.size(), 0u);
}

TEST(ConflictReconcileTest, ExhaustedByConflictsSaysSo) {
  World w;
  // Every address of the 3-address pool answered by foreign hosts.
  auto ann = std::map<std::string, std::string>{
      Conflict("192.0.2.10", kT0), Conflict("192.0.2.11", kT0), Conflict("192.0.2.12", kT0)};
  Decision d = w.Run(Web(ann), kT0);
  ASSERT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_EQ(d.reason, Reason::kPoolExhausted);
  EXPECT_NE(d.message.find("kept out of the pool"), std::string::npos) << d.message;
  EXPECT_TRUE(w.Reserved("192.0.2.12"));
}

TEST(ConflictStatusTest, GroupStatusListsConflictsOnlyWhileThereAreSome) {
  json obj = testing::SmallDefaultGroup();
  const config::ObjectStatus st = ValidStatus();
  PoolUsage usage;
  usage.conflicts.push_back(ConflictReport{Ip("192.0.2.10"), kMac, "node2", "eth0", "default/web",
                                           kT0, kT0 + minutes(5), false});
  usage.conflicts.push_back(ConflictReport{Ip("192.0.2.11"), kMac, "node2", "eth0", "default/req",
                                           kT0, kT0 + minutes(5), true});
  ConfigStatusWrite w = PlanConfigStatus(obj, st, usage, "2025-03-01T10:00:00Z");
  ASSERT_TRUE(w.object.has_value());
  const json& c = (*w.object)["status"]["conflicts"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["address"], "192.0.2.10");
  EXPECT_EQ(c[0]["mac"], kMac);
  EXPECT_EQ(c[0]["node"], "node2");
  EXPECT_EQ(c[0]["interface"], "eth0");
  EXPECT_EQ(c[0]["service"], "default/web");
  EXPECT_EQ(c[0]["since"], "2025-03-01T10:00:00Z");
  EXPECT_EQ(c[0]["until"], "2025-03-01T10:05:00Z");
  EXPECT_EQ(c[0]["action"], "Reallocated");
  EXPECT_EQ(c[1]["action"], "Refused");

  // Written once: the same status again is no write; without conflicts the list goes away.
  EXPECT_FALSE(PlanConfigStatus(*w.object, st, usage, "2025-03-01T10:00:01Z").object);
  ConfigStatusWrite cleared = PlanConfigStatus(*w.object, st, PoolUsage{}, "2025-03-01T10:00:02Z");
  ASSERT_TRUE(cleared.object.has_value());
  EXPECT_FALSE((*cleared.object)["status"].contains("conflicts"));
}

}  // namespace
}  // namespace pylon::allocator::testing

namespace pylon::allocator::testing {
namespace {

TEST(ConflictReconcileTest, RequestingAnAddressAnotherServiceFoundInConflictIsRefusedClearly) {
  World w;
  w.Run(Web(), kT0);
  w.Run(Web({Conflict("192.0.2.10", kT0)}), kT0);
  ASSERT_TRUE(w.Reserved("192.0.2.10"));
  SvcSpec req;
  req.name = "req";
  req.annotations = {{model::kAnnAddresses, "192.0.2.10"}};
  Decision d = w.Run(req, kT0 + seconds(5));
  ASSERT_EQ(d.outcome, Outcome::kRefused);
  EXPECT_EQ(d.reason, Reason::kAddressConflict);
  EXPECT_NE(d.message.find("MAC " + kMac), std::string::npos) << d.message;
  ASSERT_TRUE(d.recheck_after.has_value());
  EXPECT_EQ(*d.recheck_after, std::chrono::nanoseconds(minutes(5) - seconds(5)));
  auto reports = w.book_.ForPool(kPool);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].service, "default/req");
  EXPECT_TRUE(reports[0].requested);
  EXPECT_TRUE(w.Reserved("192.0.2.10"));  // still web's reservation
}

}  // namespace
}  // namespace pylon::allocator::testing
