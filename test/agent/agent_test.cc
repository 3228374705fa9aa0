// The whole agent runtime in process, without root: informers, lease keeper and writer against
// k8s::FakeClient, the kernel as FakeNetlink, announcements into FakeAnnouncer. Real threads run,
// so conditions are polled with deadlines.
#include "agent/agent.h"
#include "support/packet/fake_announcer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/agent_metrics.h"
#include "agent/kube_writer.h"
#include "election/node_name.h"
#include "k8s/event_recorder.h"
#include "k8s/resource.h"
#include "netlink/message.h"
#include "packet/announcer.h"
#include "support/eventually.h"
#include "support/k8s/fake_client.h"
#include "support/k8s/fake_event_recorder.h"
#include "support/k8s/objects.h"
#include "support/netlink/fake_netlink.h"

namespace pylon::agent {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr test_support::Poll Eventually{.timeout = seconds(10)};

// FakeNetlink is single-threaded; the agent loop and the test thread share it through this.
class LockedNetlink final : public netlink::Netlink {
 public:
  explicit LockedNetlink(netlink::FakeNetlink& inner) : inner_(inner) {}
  template <typename F>
  auto With(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f(inner_);
  }
#define PYLON_LOCKED(call)               \
  std::lock_guard<std::mutex> lock(mu_); \
  return inner_.call
  Result<std::vector<netlink::LinkInfo>> ListLinks() override { PYLON_LOCKED(ListLinks()); }
  Result<netlink::LinkInfo> GetLink(std::string_view n) override { PYLON_LOCKED(GetLink(n)); }
  Result<std::vector<netlink::AddressInfo>> ListAddresses(std::optional<net::Family> f) override {
    PYLON_LOCKED(ListAddresses(f));
  }
  Result<std::vector<netlink::RouteInfo>> ListRoutes(net::Family f) override {
    PYLON_LOCKED(ListRoutes(f));
  }
  Status AddAddress(const netlink::AddressSpec& s) override { PYLON_LOCKED(AddAddress(s)); }
  Status RemoveAddress(int i, const net::Prefix& p) override { PYLON_LOCKED(RemoveAddress(i, p)); }
  Result<netlink::LinkInfo> CreateLink(std::string_view n, std::string_view k) override {
    PYLON_LOCKED(CreateLink(n, k));
  }
  Status SetLinkUp(int i, bool up) override { PYLON_LOCKED(SetLinkUp(i, up)); }
  Status DeleteLink(int i) override { PYLON_LOCKED(DeleteLink(i)); }
  Result<std::string> ReadSysctl(const netlink::SysctlKey& k) override {
    PYLON_LOCKED(ReadSysctl(k));
  }
  Status WriteSysctl(const netlink::SysctlKey& k, std::string_view v) override {
    PYLON_LOCKED(WriteSysctl(k, v));
  }
  Result<std::unique_ptr<netlink::EventSource>> Subscribe() override { PYLON_LOCKED(Subscribe()); }
  bool SupportsAddressProto() const override { return true; }
#undef PYLON_LOCKED

 private:
  std::mutex mu_;
  netlink::FakeNetlink& inner_;
};

// Records, at the moment the node lease is deleted, how many of our addresses the kernel holds.
class ObservingClient final : public k8s::Client {
 public:
  ObservingClient(k8s::Client& inner, LockedNetlink& nl) : inner_(inner), nl_(nl) {}
  Result<Json> Get(const k8s::Resource& r, std::string_view ns, std::string_view n) override {
    return inner_.Get(r, ns, n);
  }
  Result<k8s::ObjectList> List(const k8s::Resource& r, std::string_view ns,
                               const k8s::ListOptions& o) override {
    return inner_.List(r, ns, o);
  }
  Result<Json> Create(const k8s::Resource& r, const Json& o) override {
    return inner_.Create(r, o);
  }
  Result<Json> Update(const k8s::Resource& r, const Json& o) override {
    return inner_.Update(r, o);
  }
  Result<Json> UpdateStatus(const k8s::Resource& r, const Json& o) override {
    return inner_.UpdateStatus(r, o);
  }
  Result<Json> Patch(const k8s::Resource& r, std::string_view ns, std::string_view n,
                     k8s::PatchType t, const Json& p, std::string_view sub) override {
    return inner_.Patch(r, ns, n, t, p, sub);
  }
  Status Delete(const k8s::Resource& r, std::string_view ns, std::string_view n,
                const k8s::DeleteOptions& o) override {
    if (r.plural == "leases") {
      held_at_lease_delete = nl_.With([](netlink::FakeNetlink& f) {
        int n_ours = 0;
        auto all = f.ListAddresses(std::nullopt);
        if (!all) return -1;
        for (const auto& a : *all) {
          if (a.proto == netlink::kPylonAddressProto) ++n_ours;
        }
        return n_ours;
      });
    }
    return inner_.Delete(r, ns, n, o);
  }
  Status Watch(const k8s::Resource& r, std::string_view ns, const k8s::WatchOptions& o,
               const k8s::WatchHandler& h, k8s::Canceller* c) override {
    return inner_.Watch(r, ns, o, h, c);
  }
  std::atomic<int> held_at_lease_delete{-1};

 private:
  k8s::Client& inner_;
  LockedNetlink& nl_;
};

// What an agent runs on: the given fakes and the system clock.
AgentDeps FakeDeps(k8s::Client& client, k8s::EventRecorder& recorder, netlink::Netlink& nl,
                   packet::Announcer& announcer, OwnershipStore& ownership,
                   metrics::Registry* metrics) {
  AgentDeps d;
  d.client = &client;
  d.recorder = &recorder;
  d.netlink = &nl;
  d.announcer = &announcer;
  d.ownership = &ownership;
  d.metrics = metrics;
  d.clock = &SystemClock::Instance();
  return d;
}

class AgentRuntimeTest : public ::testing::Test {
 protected:
  // Runs before the agent starts (the kernel and the API server as the test wants them).
  virtual void BeforeStart() {}
  void SetUp() override {
    eth0_ = fake_.AddTestLink("eth0", "veth");
    netlink::AddressSpec host;
    host.ifindex = eth0_;
    host.address = *net::Prefix::Parse("192.0.2.11/24");
    ASSERT_TRUE(fake_.AddAddress(host));
    netlink::RouteInfo def;
    def.family = net::Family::kV4;
    def.dst = *net::Prefix::Parse("0.0.0.0/0");
    def.table = netlink::kMainTable;
    def.type = 1;
    def.nexthops = {netlink::Nexthop{eth0_, *net::IpAddress::Parse("192.0.2.1"), 0, 1}};
    fake_.AddTestRoute(def);

    ASSERT_TRUE(
        client_.Create(k8s::resources::Namespaces(), {{"metadata", {{"name", "purelb-system"}}}}));
    json sg = test_support::LocalServiceGroup(
        "default",
        json::array({test_support::LocalPool("192.0.2.100-192.0.2.120", "192.0.2.0/24")}));
    ASSERT_TRUE(client_.Create(k8s::resources::ServiceGroups(), sg));
    json svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata", {{"name", "web"}, {"namespace", "default"}}},
                {"spec", {{"type", "LoadBalancer"}, {"ports", json::array({{{"port", 80}}})}}}};
    auto created = client_.Create(k8s::resources::Services(), svc);
    ASSERT_TRUE(created);
    json with_status = *created;
    with_status["status"] = {
        {"loadBalancer", {{"ingress", json::array({{{"ip", "192.0.2.100"}, {"ipMode", "VIP"}}})}}}};
    ASSERT_TRUE(client_.UpdateStatus(k8s::resources::Services(), with_status));

    AgentOptions o;
    o.node_name = "node1";
    o.ns = "purelb-system";
    o.timing = LeaseTiming{seconds(2), milliseconds(1500), milliseconds(200)};
    o.garp.interval = milliseconds(10);
    o.kube_proxy.enabled = false;  // no kube-proxy here
    o.pod_uid = "uid-agent-1";
    BeforeStart();
    auto agent =
        Agent::Create(o, FakeDeps(observing_, recorder_, nl_, announcer_, store_, &metrics_));
    ASSERT_TRUE(agent);
    agent_ = std::move(*agent);
    auto st = agent_->Start(seconds(10));
    ASSERT_TRUE(st) << st.error().message();
    loop_ = std::thread([this] { agent_->Run(); });
  }
  void TearDown() override {
    if (agent_) agent_->RequestStop();
    if (loop_.joinable()) loop_.join();
  }

  bool Holds(const std::string& prefix) {
    auto want = *net::Prefix::Parse(prefix);
    return nl_.With([&](netlink::FakeNetlink& f) {
      auto all = f.ListAddresses(std::nullopt);
      if (!all) return false;
      for (const auto& a : *all) {
        if (a.prefix == want) return true;
      }
      return false;
    });
  }
  std::optional<int> LinkIndex(const std::string& name) {
    return nl_.With([&](netlink::FakeNetlink& f) -> std::optional<int> {
      auto l = f.GetLink(name);
      if (!l) return std::nullopt;
      return l->index;
    });
  }
  bool HasEvent(const std::string& a, const std::string& b) {
    for (const auto& e : recorder_.Events()) {
      if (e.find(a) != std::string::npos && e.find(b) != std::string::npos) return true;
    }
    return false;
  }
  // A purelb.io/v2 LBNodeAgent "edge" in `ns` governing only nodes labelled pool=edge. writtenAs:
  // the v2 CRD's default (the fake API server applies none).
  static json EdgeNodeAgent(const std::string& ns) {
    return {{"apiVersion", "purelb.io/v2"},
            {"kind", "LBNodeAgent"},
            {"metadata", {{"name", "edge"}, {"namespace", ns}}},
            {"spec",
             {{"writtenAs", "v2"},
              {"nodeSelector", {{"matchLabels", {{"pool", "edge"}}}}},
              {"local", {{"localInterface", "default"}}}}}};
  }
  double SelectorState(const std::string& state) {
    return metrics_.Get(kMetricSelectorState, {{"state", state}});
  }
  std::string ServiceAnnotation(const std::string& key) {
    auto s = client_.Get(k8s::resources::Services(), "default", "web");
    return s ? k8s::Annotation(*s, key) : "";
  }

  netlink::FakeNetlink fake_{SystemClock::Instance()};
  LockedNetlink nl_{fake_};
  int eth0_ = 0;
  k8s::FakeClient client_;
  ObservingClient observing_{client_, nl_};
  k8s::FakeEventRecorder recorder_;
  packet::FakeAnnouncer announcer_;
  MemoryOwnershipStore store_;
  metrics::Registry metrics_;
  std::unique_ptr<Agent> agent_;
  std::thread loop_;
};

TEST_F(AgentRuntimeTest, AnnouncesThenShutsDownWithdrawingBeforeDeletingTheLease) {
  ASSERT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  EXPECT_TRUE(
      Eventually([&] { return ServiceAnnotation("purelb.io/announcing-IPv4") == "node1,eth0"; }));
  auto lease = client_.Get(k8s::resources::Leases(), "purelb-system", "purelb-node-node1");
  ASSERT_TRUE(lease);
  EXPECT_EQ(k8s::Annotation(*lease, "purelb.io/subnets"), "192.0.2.0/24");
  EXPECT_EQ(k8s::Annotation(*lease, "purelb.io/instance"), "uid-agent-1");
  EXPECT_EQ(FindString(*lease, {"spec", "holderIdentity"}).value_or(""), "node1");
  EXPECT_EQ(FindInt(*lease, {"spec", "leaseDurationSeconds"}).value_or(0), 2);
  EXPECT_TRUE(Eventually([&] { return metrics_.Get(kMetricLeaseHealthy, {}) == 1; }));
  EXPECT_TRUE(Eventually([&] { return agent_->Ready(); }));

  agent_->RequestStop();
  loop_.join();
  EXPECT_FALSE(Holds("192.0.2.100/24"));
  EXPECT_TRUE(Holds("192.0.2.11/24"));  // the host's own
  EXPECT_EQ(observing_.held_at_lease_delete.load(), 0) << "lease deleted before withdrawal";
  EXPECT_FALSE(client_.Get(k8s::resources::Leases(), "purelb-system", "purelb-node-node1"));
}

// The agent created kube-lb0 (it was not there): it deletes it last on shutdown, as PureLB.
TEST_F(AgentRuntimeTest, ShutdownDeletesTheVirtualInterfaceItCreated) {
  ASSERT_TRUE(Eventually([&] { return LinkIndex("kube-lb0").has_value(); }));
  EXPECT_TRUE(Eventually([&] { return agent_->Ready(); }));
  agent_->RequestStop();
  loop_.join();
  EXPECT_FALSE(LinkIndex("kube-lb0").has_value());
  EXPECT_TRUE(LinkIndex("eth0").has_value());
}

// kube-lb0 existed before the agent started (someone else's, or left by an agent that did not
// shut down): the agent uses it and leaves it in place.
class AgentWithOwnDummyTest : public AgentRuntimeTest {
 protected:
  void BeforeStart() override { dummy_ = fake_.AddTestLink("kube-lb0", "dummy"); }
  int dummy_ = 0;
};

TEST_F(AgentWithOwnDummyTest, ShutdownKeepsAVirtualInterfaceItDidNotCreate) {
  ASSERT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  EXPECT_TRUE(Eventually([&] { return agent_->Ready(); }));
  agent_->RequestStop();
  loop_.join();
  EXPECT_EQ(LinkIndex("kube-lb0"), dummy_);
}

// LBNodeAgents are read from every namespace; purelb_lbnodeagent_selector_state says which state
// the node is in. An object that does not parse is skipped with a ConfigError event naming it;
// when none is left the state is "invalid" and the agent's flags apply (it keeps announcing).
TEST_F(AgentRuntimeTest, LbNodeAgentsOfEveryNamespaceAndTheSelectorState) {
  ASSERT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  EXPECT_TRUE(Eventually([&] { return SelectorState("default") == 1; }));
  EXPECT_EQ(SelectorState("configured") + SelectorState("deselected") + SelectorState("invalid"),
            0);

  // An object in another namespace selecting nobody: it governs, so the node is deselected.
  ASSERT_TRUE(client_.Create(k8s::resources::Namespaces(), {{"metadata", {{"name", "team-a"}}}}));
  json other = EdgeNodeAgent("team-a");
  auto created = client_.Create(k8s::resources::LBNodeAgents(), other);
  ASSERT_TRUE(created);
  EXPECT_TRUE(Eventually([&] { return SelectorState("deselected") == 1; }));
  EXPECT_TRUE(Eventually([&] { return !Holds("192.0.2.100/24"); }));
  EXPECT_EQ(SelectorState("default"), 0);
  EXPECT_TRUE(Eventually([&] { return HasEvent("LBNodeAgentDeselected", "team-a/edge"); }));

  // Selecting every node: configured.
  json catch_all = *created;
  catch_all["spec"].erase("nodeSelector");
  auto updated = client_.Update(k8s::resources::LBNodeAgents(), catch_all);
  ASSERT_TRUE(updated);
  EXPECT_TRUE(Eventually([&] { return SelectorState("configured") == 1; }));
  EXPECT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  EXPECT_EQ(SelectorState("deselected"), 0);

  // Broken (a purelb.io/v1 field name in a v2 object): skipped, reported; nothing left: invalid.
  json broken = *updated;
  broken["spec"]["local"] = {{"localint", "eth0"}};
  ASSERT_TRUE(client_.Update(k8s::resources::LBNodeAgents(), broken));
  EXPECT_TRUE(Eventually([&] { return SelectorState("invalid") == 1; }));
  EXPECT_EQ(SelectorState("configured"), 0);
  EXPECT_TRUE(Eventually([&] { return HasEvent("ConfigError", "LBNodeAgent team-a/edge"); }));
  EXPECT_TRUE(Eventually([&] { return HasEvent("LBNodeAgentInvalid", "spec.local.localint"); }));
  EXPECT_TRUE(Holds("192.0.2.100/24"));
}

TEST_F(AgentRuntimeTest, LeaseRenewalsFailingForTheDeadlineWithdrawLocalAddresses) {
  ASSERT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  // The API server refuses every lease read and write from now on.
  client_.FailNext(k8s::Verb::kUpdate, Error(ErrorCode::kUnavailable, "injected"), 1000000);
  client_.FailNext(k8s::Verb::kGet, Error(ErrorCode::kUnavailable, "injected"), 1000000);
  EXPECT_TRUE(Eventually([&] { return !Holds("192.0.2.100/24"); }, seconds(10)));
  // The gauge is set after the withdrawal, in the same pass: poll.
  EXPECT_TRUE(Eventually([&] { return metrics_.Get(kMetricLeaseHealthy, {}) == 0; }));
}

TEST_F(AgentRuntimeTest, DepartedServiceIsWithdrawn) {
  ASSERT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  ASSERT_TRUE(client_.Delete(k8s::resources::Services(), "default", "web", {}));
  EXPECT_TRUE(Eventually([&] { return !Holds("192.0.2.100/24"); }));
}

// purelb.io/v2 LBNodeAgent nodeSelector: a node no LBNodeAgent selects withdraws everything and
// advertises no subnets, and says why; labelled to match, it announces again -- without a
// gratuitous ARP, as the governing object has no garpConfig.
TEST_F(AgentRuntimeTest, NodeSelectorDeselectsThenSelectsTheNode) {
  ASSERT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  auto lease_subnets = [&] {
    auto lease = client_.Get(k8s::resources::Leases(), "purelb-system", "purelb-node-node1");
    return lease ? k8s::Annotation(*lease, "purelb.io/subnets") : std::string("?");
  };
  ASSERT_TRUE(client_.Create(k8s::resources::Nodes(),
                             {{"metadata", {{"name", "node1"}, {"labels", {{"pool", "core"}}}}}}));
  json edge = EdgeNodeAgent("purelb-system");
  ASSERT_TRUE(client_.Create(k8s::resources::LBNodeAgents(), edge));
  EXPECT_TRUE(Eventually([&] { return !Holds("192.0.2.100/24"); }));
  EXPECT_TRUE(Eventually([&] { return lease_subnets().empty(); }));
  EXPECT_TRUE(Eventually([&] {
    for (const auto& e : recorder_.Events()) {
      // On the Node (cluster-scoped: no namespace), not on the node's Lease.
      if (e.find("LBNodeAgentDeselected") != std::string::npos &&
          e.find("purelb-system/edge does not match") != std::string::npos &&
          e.find("(Node /node1)") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));

  const std::size_t sent_before = announcer_.sent().size();
  auto node = client_.Get(k8s::resources::Nodes(), "", "node1");
  ASSERT_TRUE(node);
  (*node)["metadata"]["labels"]["pool"] = "edge";
  ASSERT_TRUE(client_.Update(k8s::resources::Nodes(), *node));
  EXPECT_TRUE(Eventually([&] { return Holds("192.0.2.100/24"); }));
  EXPECT_TRUE(Eventually([&] { return lease_subnets() == "192.0.2.0/24"; }));
  std::this_thread::sleep_for(milliseconds(100));  // a burst would have begun at once
  EXPECT_EQ(announcer_.sent().size(), sent_before);
}

}  // namespace
// A key file that is given but missing must stop the agent at start: a typo must not silently
// turn fast failover off.
TEST(AgentHeartbeatStartTest, MissingKeyFileRefusesToStart) {
  netlink::FakeNetlink nl{SystemClock::Instance()};
  k8s::FakeClient client;
  k8s::FakeEventRecorder recorder;
  packet::FakeAnnouncer announcer;
  MemoryOwnershipStore store;
  AgentOptions o;
  o.node_name = "node1";
  o.heartbeat.key_file = "/nonexistent/pylon-heartbeat-key";
  o.kube_proxy.enabled = false;
  auto agent = Agent::Create(o, FakeDeps(client, recorder, nl, announcer, store, nullptr));
  ASSERT_TRUE(agent);
  auto st = (*agent)->Start(seconds(1));
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("--heartbeat-key-file"), std::string::npos)
      << st.error().message();
}

}  // namespace pylon::agent
