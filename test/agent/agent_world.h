// A hermetic world for the agent core: FakeClock, FakeNetlink (eth0 on 192.0.2.0/24 and
// 2001:db8:1::/64 the way the lab shapes it, kube-lb0 as a bridge), a Membership of three nodes,
// one ServiceGroup with a local and a virtual pool, one LoadBalancerClass, and helpers to build
// Services and EndpointSlices as the API server serialises them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/address_sync.h"
#include "agent/conflicts.h"
#include "agent/garp.h"
#include "agent/ownership.h"
#include "agent/planner.h"
#include "agent/prober.h"
#include "agent/reconciler.h"
#include "agent/writer.h"
#include "config/validate.h"
#include "election/hash.h"
#include "election/membership.h"
#include "election/subnets_annotation.h"
#include "metrics/registry.h"
#include "netlink/message.h"
#include "packet/announcer.h"
#include "support/election.h"
#include "support/net.h"
#include "support/netlink/fake_netlink.h"
#include "support/packet/fake_announcer.h"

// Scenario rows name only the fields they care about (designated initializers: SvcOpts{.ips =
// ...}); the other members keep their defaults. For every file that includes this one.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace pylon::agent::testing {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The nodes of the world's Membership.
inline const std::vector<std::string> kNodes = {"node1", "node2", "node3"};
// A MAC of a host that is not a node (a foreign answer to a probe).
inline const std::string kForeign = "02:aa:bb:cc:dd:ee";

using test_support::Ip;
using test_support::Mac;
using test_support::Pfx;

struct SvcOpts {
  std::vector<std::string> ips;
  std::string etp = "Cluster";
  std::optional<std::string> lb_class;
  std::map<std::string, std::string> annotations;
  std::string type = "LoadBalancer";
  bool deleting = false;
};

inline json ServiceJson(const std::string& ns, const std::string& name, const SvcOpts& o) {
  json s = {{"apiVersion", "v1"},
            {"kind", "Service"},
            {"metadata",
             {{"namespace", ns},
              {"name", name},
              {"uid", "uid-" + name},
              {"resourceVersion", "1"},
              {"annotations", o.annotations}}},
            {"spec",
             {{"type", o.type},
              {"externalTrafficPolicy", o.etp},
              {"ports", json::array({{{"port", 80}, {"protocol", "TCP"}}})}}},
            {"status", {{"loadBalancer", json::object()}}}};
  if (o.deleting) s["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  if (o.lb_class) s["spec"]["loadBalancerClass"] = *o.lb_class;
  json ingress = json::array();
  for (const auto& ip : o.ips) ingress.push_back({{"ip", ip}, {"ipMode", "VIP"}});
  if (!o.ips.empty()) s["status"]["loadBalancer"]["ingress"] = ingress;
  return s;
}

// Endpoints: node -> ready.
inline model::EndpointSlice Slice(const std::string& ns, const std::string& svc,
                                  const std::map<std::string, bool>& nodes) {
  model::EndpointSlice es;
  es.ns = ns;
  es.name = svc + "-abc";
  es.service_name = svc;
  for (const auto& [n, ready] : nodes) {
    model::Endpoint e;
    e.node_name = n;
    e.ready = ready;
    e.serving = ready;
    es.endpoints.push_back(e);
  }
  return es;
}

inline ServiceInput Svc(const std::string& name, const SvcOpts& o,
                        std::vector<model::EndpointSlice> slices = {}) {
  auto parsed = model::ParseService(ServiceJson("default", name, o));
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message());
  ServiceInput in;
  in.service = *parsed;
  in.owner = model::SelectOwner(in.service);
  in.slices = std::move(slices);
  return in;
}

// Options of a Service at `ip` whose IPv4 announcing annotation is `announcer` ("node,interface").
inline SvcOpts AnnouncedBy(const std::string& ip, const std::string& announcer) {
  return SvcOpts{.ips = {ip}, .annotations = {{model::kAnnAnnouncingV4, announcer}}};
}

inline config::InForceConfig TestConfig() {
  json sg = {{"apiVersion", "purelb.io/v1"},
             {"kind", "ServiceGroup"},
             {"metadata",
              {{"namespace", "purelb-system"},
               {"name", "default"},
               {"generation", 1},
               {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
             {"spec",
              {{"local",
                {{"v4pools", json::array({{{"pool", "192.0.2.100-192.0.2.120"},
                                           {"subnet", "192.0.2.0/24"},
                                           {"aggregation", "default"}},
                                          {{"pool", "203.0.113.0/26"},
                                           {"subnet", "203.0.113.0/24"},
                                           {"aggregation", "default"}}})},
                 {"v6pools", json::array({{{"pool", "2001:db8:1::100-2001:db8:1::1ff"},
                                           {"subnet", "2001:db8:1::/64"},
                                           {"aggregation", "default"}},
                                          {{"pool", "2001:db8:beef::/120"},
                                           {"subnet", "2001:db8:beef::/64"},
                                           {"aggregation", "/120"}}})}}}}}};
  auto lace = [](const char* name, const char* mode, const char* created, json v4_pools) {
    return json{{"apiVersion", "lace-cni.io/v1alpha1"},
                {"kind", "LoadBalancerClass"},
                {"metadata", {{"name", name}, {"generation", 1}, {"creationTimestamp", created}}},
                {"spec", {{"mode", mode}, {"ipv4Pools", std::move(v4_pools)}}}};
  };
  json cls = lace("public", "l2", "2026-01-01T00:00:01Z",
                  json::array({{{"start", "192.0.2.200"}, {"end", "192.0.2.210"}},
                               {{"cidr", "198.51.100.0/24"}}}));
  // mode l3: always virtual, even for an address on a node subnet (192.0.2.0/24).
  json routed = lace("routed", "l3", "2026-01-01T00:00:02Z",
                     json::array({{{"start", "192.0.2.220"}, {"end", "192.0.2.230"}},
                                  {{"cidr", "203.0.113.128/28"}}}));
  // purelb.io/v2: `remote` is always virtual (even on a node subnet), `local` never is.
  auto v2 = [](const char* name, const char* kind, const char* pool, const char* subnet) {
    return json{
        {"apiVersion", "purelb.io/v2"},
        {"kind", "ServiceGroup"},
        {"metadata",
         {{"namespace", "purelb-system"},
          {"name", name},
          {"generation", 1},
          {"creationTimestamp", "2026-01-01T00:00:03Z"}}},
        {"spec", {{kind, {{"v4pools", json::array({{{"pool", pool}, {"subnet", subnet}}})}}}}}};
  };
  std::vector<json> candidates = {
      sg,
      cls,
      routed,
      v2("v2remote", "remote", "192.0.2.240-192.0.2.250", "192.0.2.0/24"),
      v2("v2local", "local", "203.0.113.200-203.0.113.210", "203.0.113.0/24"),
      v2("v2onlink", "local", "192.0.2.231-192.0.2.235", "192.0.2.0/24")};
  auto result = config::ValidateConfig(candidates, config::InForceConfig{});
  for (const auto& st : result.statuses) EXPECT_TRUE(st.valid) << st.message;
  return result.config;
}

// The node with the lowest SHA-256(node#address) among `nodes`: the election rule, computed
// independently of the elector.
// How many events with `reason` the writer recorded.
inline std::size_t EventsWith(const RecordingWriter& w, const std::string& reason) {
  return static_cast<std::size_t>(std::count_if(w.events.begin(), w.events.end(),
                                                [&](const auto& e) { return e.reason == reason; }));
}

inline std::string HashWinner(const std::vector<std::string>& nodes, const net::IpAddress& a) {
  std::string best;
  election::Digest best_digest{};
  for (const auto& n : nodes) {
    auto d = *election::ElectionDigest(n, a.ToString());
    if (best.empty() || d < best_digest) {
      best = n;
      best_digest = d;
    }
  }
  return best;
}

inline std::string SomeLoser(const std::vector<std::string>& nodes, const std::string& winner) {
  for (const auto& n : nodes) {
    if (n != winner) return n;
  }
  return "";
}

// Claims handed to the reconciler by the test.
class FakeClaims final : public ClaimSource {
 public:
  void SetWatched(std::map<int, std::set<net::IpAddress>> by_ifindex) override {
    watched = std::move(by_ifindex);
  }
  std::vector<SeenClaim> TakeClaims() override {
    std::vector<SeenClaim> out;
    out.swap(pending);
    return out;
  }
  std::map<int, std::set<net::IpAddress>> watched;
  std::vector<SeenClaim> pending;
};

// Wire checks answered by the test: Start queues the job; Answer() turns the queued jobs into
// results with the given verdict.
class FakeWireChecker final : public WireChecker {
 public:
  void Start(WireCheckJob job, net::MacAddress) override { jobs.push_back(std::move(job)); }
  std::vector<WireCheckResult> TakeResults() override {
    std::vector<WireCheckResult> out;
    out.swap(results);
    return out;
  }
  void Answer(bool holder_answers, bool kube_proxy_ok) {
    for (const auto& j : jobs) {
      results.push_back(WireCheckResult{j.address, j.holder, holder_answers, std::nullopt,
                                        kube_proxy_ok, "fake"});
    }
    started += static_cast<int>(jobs.size());
    jobs.clear();
  }
  std::vector<WireCheckJob> jobs;
  std::vector<WireCheckResult> results;
  int started = 0;
};

// One agent (node `self`) in a three-node cluster.
class AgentWorld {
 public:
  explicit AgentWorld(std::string self, EtpLocalMode mode = EtpLocalMode::kReset,
                      bool proto_support = true)
      : self_(std::move(self)), nl_(clock_), config_(TestConfig()) {
    nl_.SetSupportsAddressProto(proto_support);
    eth0_ = nl_.AddTestLink("eth0", "veth");
    lb0_ = nl_.AddTestLink("kube-lb0", "bridge");
    // The host's own addresses, which the agent must never touch.
    int n = NodeIndex(self_);
    Host(eth0_, "192.0.2." + std::to_string(10 + n) + "/24");
    Host(eth0_, "2001:db8:1::" + std::to_string(10 + n) + "/128");
    network_.interfaces.push_back(
        LocalInterface{"eth0", eth0_, {Pfx("192.0.2.0/24"), Pfx("2001:db8:1::/64")}});
    network_.virtual_ifindex = lb0_;
    auto planner =
        Planner::Create(PlannerOptions{NodeName(self_), mode, election::Stickiness::kSticky});
    EXPECT_TRUE(planner.has_value()) << (planner ? "" : planner.error().message());
    planner_ = std::make_unique<Planner>(std::move(*planner));
    sync_ = std::make_unique<AddressSync>(nl_, store_, clock_);
    EXPECT_TRUE(sync_->Load().has_value());
    reconciler_ = std::make_unique<Reconciler>(ReconcilerDeps{
        planner_.get(), sync_.get(), &garp_, &announcer_, &nl_, &writer_, &metrics_, &clock_});
    for (const auto& node : nodes_) Renew(node);
  }

  static int NodeIndex(const std::string& node) { return node.back() - '0'; }

  // Turns duplicate-address detection on: probes run inline (their result is picked up by the
  // next pass), claims come from claims_.
  void EnableProbing(ProbeGateOptions gate = {}) {
    prober_ = std::make_unique<InlineProber>(announcer_);
    ReconcilerDeps d{planner_.get(), sync_.get(), &garp_,    &announcer_,
                     &nl_,           &writer_,    &metrics_, &clock_};
    d.prober = prober_.get();
    d.claims = &claims_;
    d.gate = gate;
    reconciler_ = std::make_unique<Reconciler>(d);
  }

  // Turns the successor's wire check on, with checks answered by `checker`.
  void EnableWireCheck(WireChecker* checker, Duration lifetime = std::chrono::seconds(10)) {
    ReconcilerDeps d{planner_.get(), sync_.get(), &garp_,    &announcer_,
                     &nl_,           &writer_,    &metrics_, &clock_};
    d.wire = checker;
    d.takeover.lifetime = lifetime;
    reconciler_ = std::make_unique<Reconciler>(d);
  }

  // Turns the drain of planned moves on (drain.h): every table written lands in drain_rulesets_,
  // with whether the kernel already held `watch` then (drain_before_add_); a write fails while
  // drain_fail_ is set.
  void EnableDrain(Duration timeout, std::string watch = "") {
    ReconcilerDeps d{planner_.get(), sync_.get(), &garp_,    &announcer_,
                     &nl_,           &writer_,    &metrics_, &clock_};
    d.drain_timeout = timeout;
    d.apply_drain_ruleset = [this, watch](std::string_view text) -> Status {
      if (drain_fail_) return Fail(ErrorCode::kSystem, "nftables: injected");
      drain_rulesets_.emplace_back(text);
      drain_before_add_.push_back(!watch.empty() && KernelHas(eth0_, watch));
      return Ok();
    };
    reconciler_ = std::make_unique<Reconciler>(d);
  }

  // Probing plus probe ahead: background probes also run inline (background_).
  void EnableProbeAhead(ProbeAheadOptions ahead = {}) {
    prober_ = std::make_unique<InlineProber>(announcer_);
    background_ = std::make_unique<InlineProber>(announcer_);
    ReconcilerDeps d{planner_.get(), sync_.get(), &garp_,    &announcer_,
                     &nl_,           &writer_,    &metrics_, &clock_};
    d.prober = prober_.get();
    d.claims = &claims_;
    d.background = background_.get();
    d.ahead = ahead;
    reconciler_ = std::make_unique<Reconciler>(d);
  }

  void Host(int ifindex, const std::string& prefix) {
    netlink::AddressSpec s;
    s.ifindex = ifindex;
    s.address = Pfx(prefix);
    if (s.address.family() == net::Family::kV6) s.dad = netlink::Dad::kSkip;
    auto st = nl_.AddAddress(s);
    ASSERT_TRUE(st.has_value()) << st.error().message();
  }

  // A lease observation for `node` (a renewal, or a subnet change).
  void Renew(const std::string& node, std::string subnets = "192.0.2.0/24,2001:db8:1::/64") {
    auto o = test_support::HeldLease(node, std::to_string(++renewals_), subnets);
    if (auto m = macs_.find(node); m != macs_.end()) o.macs_annotation = m->second;
    membership_.Observe(o, clock_.Now());
  }
  void DeleteLease(const std::string& node) {
    membership_.Observe(test_support::DeletedLease(node), clock_.Now());
  }
  // Keeps every node in `live` renewed while time passes.
  void Advance(Duration d, const std::vector<std::string>& live) {
    clock_.Advance(d);
    for (const auto& n : live) Renew(n);
  }

  PassResult Pass() {
    PlanInputs in;
    in.network = &network_;
    in.config = &config_;
    in.services = &services_;
    in.l2advertisements = &l2advs_;
    in.healthy = healthy_;
    in.shutting_down = shutting_down_;
    in.hold_off = hold_off_;
    in.defer_to_unseen_announcers = defer_unseen_;
    in.excluded_nodes = &excluded_;
    if (!keep_.empty()) in.keep = &keep_;
    in.peer_signs = &peer_signs_;
    return reconciler_->Run(in, membership_);
  }

  // Adds Service `name` with `ips` and runs a pass.
  PassResult Serve(const std::string& name, std::vector<std::string> ips) {
    services_.push_back(Svc(name, {.ips = std::move(ips)}));
    return Pass();
  }

  // Adds `svc` and runs a pass.
  PassResult Serve(ServiceInput svc) {
    services_.push_back(std::move(svc));
    return Pass();
  }

  // Whether eth0 holds `ip` with its subnet's length (/24 or /64), the way a local address is
  // added.
  bool Holds(const std::string& ip) {
    return KernelHas(eth0_, ip + (Ip(ip).is_v4() ? "/24" : "/64"));
  }

  // The addresses on `ifindex` that the agent added (tagged or recorded), as "addr/len".
  std::vector<std::string> OwnAddresses(int ifindex) {
    std::vector<std::string> out;
    for (const auto& o : sync_->owned()) {
      if (o.interface == (ifindex == eth0_ ? "eth0" : "kube-lb0"))
        out.push_back(o.address.ToString());
    }
    return out;
  }
  // Every address on `ifindex` as the kernel holds it.
  std::vector<netlink::AddressInfo> KernelAddresses(int ifindex) {
    std::vector<netlink::AddressInfo> out;
    auto all = nl_.ListAddresses(std::nullopt);
    EXPECT_TRUE(all.has_value());
    if (!all) return out;
    for (auto& a : *all) {
      if (a.ifindex == ifindex) out.push_back(a);
    }
    return out;
  }
  bool KernelHas(int ifindex, const std::string& prefix) {
    auto want = Pfx(prefix);
    auto all = KernelAddresses(ifindex);
    return std::any_of(all.begin(), all.end(),
                       [&](const netlink::AddressInfo& a) { return a.prefix == want; });
  }

  std::string self_;
  std::vector<std::string> nodes_ = kNodes;
  FakeClock clock_;
  netlink::FakeNetlink nl_;
  int eth0_ = 0;
  int lb0_ = 0;
  NodeNetwork network_;
  config::InForceConfig config_;
  std::vector<ServiceInput> services_;
  std::vector<L2Advertisement> l2advs_;
  bool healthy_ = true;
  bool shutting_down_ = false;
  bool hold_off_ = false;
  bool defer_unseen_ = false;
  std::set<net::IpAddress> keep_;
  std::map<NodeName, HolderSigns> peer_signs_;
  std::vector<std::string> drain_rulesets_;
  std::vector<bool> drain_before_add_;
  bool drain_fail_ = false;
  std::vector<NodeName> excluded_;
  election::Membership membership_;
  MemoryOwnershipStore store_;
  GarpScheduler garp_;
  packet::FakeAnnouncer announcer_;
  RecordingWriter writer_;
  metrics::Registry metrics_;
  std::unique_ptr<Planner> planner_;
  std::unique_ptr<AddressSync> sync_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<InlineProber> prober_;
  std::unique_ptr<InlineProber> background_;
  FakeClaims claims_;
  std::map<std::string, std::string> macs_;  // node -> its purelb.io/macs lease annotation
  int renewals_ = 0;
};

// The world of the node that wins `ip` by the hash rule among `among`.
class WinnerWorld : public AgentWorld {
 public:
  explicit WinnerWorld(std::string ip, const std::vector<std::string>& among = kNodes)
      : AgentWorld(HashWinner(among, Ip(ip))), ip_(std::move(ip)) {}

  const std::string ip_;
};

}  // namespace pylon::agent::testing
