// End to end: the purelb.io/v2 LBNodeAgent as a user sees it (docs/purelb-v2.md, "What Pylon does
// with v2 objects"). A lab per test (etcd + kube-apiserver, the allocator, one agent per node in
// network namespaces, a client host); LBNodeAgents applied with the real kubectl, nodes labelled
// with `kubectl label node`; the effects read where a user would look: the addresses on the nodes
// (`ip -j addr` in their namespaces), the Node's events, the node leases, and the gratuitous ARPs
// and unsolicited NAs on the LAN (captured on the client's eth0). Needs root.
#include <net/if.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <variant>

#include "e2e_lab.h"
#include "packet/arp.h"
#include "packet/ndp.h"
#include "packet/packet_socket.h"

namespace pylon::e2e {
namespace {

// Remote pools (no node subnet holds them): on kube-lb0 of every governed node.
const std::string kRemoteGroup = test_support::ServiceGroupYaml(
    "purelb.io/v2", "remote", std::string("  remote:\n") + kVirtualPools);

// An LBNodeAgent `name` written as purelb.io/v2 (localInterface: default, dummyInterface:
// kube-lb0); `spec` and `local` are more lines under spec and spec.local (indented 2 and 4).
std::string NodeAgentV2(const std::string& name, const std::string& spec,
                        const std::string& local) {
  return "apiVersion: purelb.io/v2\nkind: LBNodeAgent\nmetadata:\n  name: " + name +
         "\n  namespace: purelb-system\nspec:\n" + spec +
         "  local:\n    localInterface: default\n    dummyInterface: kube-lb0\n" + local;
}

const char* const kNodes[] = {"node1", "node2", "node3"};

class NodeAgentV2Test : public LabTest {
 protected:
  // `kubectl label node`: the test's label on (`pylon.test/lb=yes`) or off.
  void SetSelected(const std::string& node, bool selected) {
    auto r = lab().Kubectl(
        {"label", "node", node, "--overwrite", selected ? "pylon.test/lb=yes" : "pylon.test/lb-"});
    ASSERT_TRUE(r) << r.error().message();
  }
  // How many times a Warning LBNodeAgentDeselected was recorded about the Node `node` (events of
  // any namespace).
  int DeselectedEvents(const std::string& node) {
    auto list = GetJson(
        {"get", "events", "-A", "--field-selector",
         "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=LBNodeAgentDeselected"});
    int n = 0;
    if (list.contains("items")) {
      for (const auto& e : list["items"]) {
        // Repeats of one event are one Event with a count (the recorder's correlator).
        if (e.value("type", "") == "Warning") n += std::max(1, e.value("count", 1));
      }
    }
    return n;
  }
  Json Lease(const std::string& node) {
    return GetJson({"get", "lease", "-n", "purelb-system", "purelb-node-" + node});
  }
  // The addr_info entry of `ip` on `dev` in the node's namespace (`ip -j addr show`); null if
  // the address is not there.
  Json AddrInfo(const std::string& node, const std::string& dev, const std::string& ip) {
    std::string out;
    auto rc = lab::RunCommand({"ip", "-j", "addr", "show", "dev", dev}, &out, Node(node).netns);
    if (!rc || *rc != 0) return Json();
    Json links = Json::parse(out, nullptr, false);
    if (!links.is_array()) return Json();
    for (const auto& link : links) {
      for (const auto& a : link.value("addr_info", Json::array())) {
        if (a.value("local", "") == ip) return a;
      }
    }
    return Json();
  }
  // Makes the LBNodeAgent `name` (a catch-all with `local` under spec.local) the one in force:
  // applies it, deletes `previous` (if any), and waits until every running agent logged that
  // `name` governs its node, so what the test does next happens under it.
  void UseNodeAgent(const std::string& name, const std::string& local, const std::string& previous,
                    const std::vector<std::string>& agents) {
    Apply(NodeAgentV2(name, "", local));
    if (!previous.empty()) {
      auto r = lab().Kubectl({"delete", "lbnodeagents.purelb.io", "-n", "purelb-system", previous});
      ASSERT_TRUE(r) << r.error().message();
    }
    for (const auto& n : agents) {
      ASSERT_TRUE(Eventually([&] { return AgentLogged(n, name); })) << n << " never used " << name;
    }
  }
  // Whether the agent of `node` logged `msg=LBNodeAgent state=configured` for the object `name`.
  bool AgentLogged(const std::string& node, const std::string& name) {
    std::ifstream f(lab().Path("agent-" + node + ".log"));
    const std::string key = "purelb-system/" + name;
    std::string line;
    while (std::getline(f, line)) {
      if (line.find("msg=LBNodeAgent state=configured") == std::string::npos) continue;
      const auto at = line.find(key);
      if (at == std::string::npos) continue;
      const auto end = at + key.size();
      if (end == line.size() || line[end] == ' ' || line[end] == '"') return true;
    }
    return false;
  }
  // The one node that holds `ip` on eth0 (empty unless exactly one does).
  std::string Holder(const std::string& ip) {
    auto nodes = NodesWith("eth0", ip);
    return nodes.size() == 1 ? nodes[0] : "";
  }
};

// ---------------------------------------------------------------------------------------------
// nodeSelector: one selective LBNodeAgent and no catch-all; the nodes it selects are relabelled
// row by row. A governed node announces (the local address is elected among them, kube-lb0 holds
// the remote one), a deselected one holds nothing, its lease advertises no subnets and its Node
// gets a Warning LBNodeAgentDeselected. Each row applies at once (the agents watch the Nodes).

struct SelectorRow {
  const char* what;
  std::set<std::string> selected;
  // Who must hold the local addresses afterwards ("" = nobody).
  std::string local_holder;
};

TEST_F(NodeAgentV2Test, NodeSelectorGovernsOnlyMatchingNodesAndFollowsRelabelling) {
  Apply(kLocalDual);
  Apply(kRemoteGroup);
  SetSelected("node2", true);
  // With garpConfig (PureLB's defaults): a v2 object without it sends no GARP / NA at all, and
  // the client would keep the old holder's MAC for an address that moved.
  Apply(NodeAgentV2("edge", "  nodeSelector:\n    matchLabels:\n      pylon.test/lb: \"yes\"\n",
                    "    garpConfig:\n      enabled: true\n"));
  Apply(ServiceYaml("local", "    purelb.io/service-group: localdual\n", kDualSpec));
  Apply(ServiceYaml("remote", "    purelb.io/service-group: remote\n", kDualSpec));
  const auto local = WaitIngress("local", 2);
  const auto remote = WaitIngress("remote", 2);
  ASSERT_EQ(local.size(), 2u);
  ASSERT_EQ(remote.size(), 2u);

  const SelectorRow rows[] = {
      {"only node2 selected", {"node2"}, "node2"},
      {"node3 labelled: it joins, node2 keeps the local addresses", {"node2", "node3"}, "node2"},
      {"node2 unlabelled: its addresses move to node3", {"node3"}, "node3"},
      {"every node labelled", {"node1", "node2", "node3"}, "node3"},
      {"no node labelled: nobody announces", {}, ""},
      {"node1 labelled again", {"node1"}, "node1"},
  };
  std::set<std::string> labelled = {"node2"};
  std::set<std::string> governed_before = {"node1", "node2", "node3"};  // no LBNodeAgent yet
  std::map<std::string, int> events;                                    // by node, as of the row
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    for (const char* n : kNodes) {
      const bool want = row.selected.count(n) > 0;
      if (want != (labelled.count(n) > 0)) SetSelected(n, want);
    }
    labelled = row.selected;
    const std::vector<std::string> selected(row.selected.begin(), row.selected.end());
    const std::vector<std::string> holder = row.local_holder.empty()
                                                ? std::vector<std::string>{}
                                                : std::vector<std::string>{row.local_holder};
    for (const auto& ip : local) {
      EXPECT_TRUE(Eventually([&] {
        return NodesWith("eth0", ip) == holder && (holder.empty() || Probe(ip).body == holder[0]);
      })) << ip
          << " on eth0 of " << ::testing::PrintToString(NodesWith("eth0", ip));
    }
    for (const auto& ip : remote) {
      EXPECT_TRUE(Eventually([&] { return NodesWith("kube-lb0", ip) == selected; }))
          << ip << " on kube-lb0 of " << ::testing::PrintToString(NodesWith("kube-lb0", ip));
    }
    for (const char* n : kNodes) {
      const bool governed = row.selected.count(n) > 0;
      // A deselected node's lease advertises no subnets; a governed one's does.
      EXPECT_TRUE(Eventually([&] {
        return Annotation(Lease(n), "purelb.io/subnets").empty() == !governed;
      })) << n
          << " subnets '" << Annotation(Lease(n), "purelb.io/subnets") << "'";
      // A node that becomes deselected gets one more Warning LBNodeAgentDeselected on its Node;
      // one that stays governed or stays deselected none.
      if (!governed && governed_before.count(n) > 0) {
        EXPECT_TRUE(Eventually([&] { return DeselectedEvents(n) == events[n] + 1; }))
            << n << ": " << DeselectedEvents(n) - events[n]
            << " new Warning LBNodeAgentDeselected on its Node, want 1";
      } else {
        EXPECT_EQ(DeselectedEvents(n), events[n]) << n;
      }
      events[n] = DeselectedEvents(n);
    }
    governed_before = row.selected;
  }
}

// ---------------------------------------------------------------------------------------------
// garpConfig: the gratuitous ARPs / unsolicited NAs on the LAN after each takeover, counted on
// the client's eth0 (a packet socket per family in the client's namespace, the test's own).

// One announcement seen on the LAN: an ARP packet whose sender and target IP are both the
// address (RFC 5227 announcement), or an unsolicited NA (solicited flag clear) for it.
struct Announcement {
  std::string ip;
  packet::MacAddress mac;  // Ethernet source
};

class AnnouncementCapture {
 public:
  explicit AnnouncementCapture(std::string netns) {
    thread_ = std::thread([this, netns] {
      auto r = lab::InNetns(netns, [this]() -> Status { return Run(); });
      std::lock_guard<std::mutex> lock(mu_);
      if (!r) {
        error_ = r.error().message();
      } else if (!*r) {
        error_ = r->error().message();
      }
      started_ = true;  // also when it failed, so Started() does not wait forever
    });
  }
  ~AnnouncementCapture() {
    stop_ = true;
    thread_.join();
  }
  AnnouncementCapture(const AnnouncementCapture&) = delete;
  AnnouncementCapture& operator=(const AnnouncementCapture&) = delete;

  // Whether both sockets are open (an error also ends the wait: see error()).
  bool Started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  // Announcements of `ip` seen so far, by MAC.
  std::map<packet::MacAddress, int> For(const std::string& ip) {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<packet::MacAddress, int> out;
    for (const auto& a : seen_) {
      if (a.ip == ip) ++out[a.mac];
    }
    return out;
  }
  int Count(const std::string& ip) {
    int n = 0;
    for (const auto& [mac, c] : For(ip)) n += c;
    return n;
  }

 private:
  Status Run() {
    const unsigned ifindex = if_nametoindex("eth0");
    if (ifindex == 0) return FailErrno(errno, "if_nametoindex eth0");
    auto arp = packet::PacketSocket::Open(static_cast<int>(ifindex), packet::kEtherTypeArp);
    if (!arp) return Fail(arp.error());
    auto v6 = packet::PacketSocket::Open(static_cast<int>(ifindex), packet::kEtherTypeIpv6);
    if (!v6) return Fail(v6.error());
    if (auto s = v6->AttachNeighborDiscoveryFilter(); !s) return s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_ = true;
    }
    const Clock& clock = SystemClock::Instance();
    while (!stop_) {
      for (auto* sock : {&*arp, &*v6}) {
        auto frame = sock->Receive(clock, clock.Now() + Ms(10));
        if (!frame) return Fail(frame.error());
        if (!*frame) continue;
        std::optional<Announcement> a;
        if (sock == &*arp) {
          auto p = packet::DecodeArp((*frame)->payload);
          if (p && p->sender_ip == p->target_ip) a = Announcement{p->sender_ip.ToString(), {}};
        } else {
          auto m = packet::DecodeNdp((*frame)->payload);
          if (m) {
            if (const auto* na = std::get_if<packet::NeighborAdvertisement>(&*m)) {
              if (!na->solicited) a = Announcement{na->target.ToString(), {}};
            }
          }
        }
        if (a) {
          a->mac = (*frame)->source;
          std::lock_guard<std::mutex> lock(mu_);
          seen_.push_back(*a);
        }
      }
    }
    return Ok();
  }

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  bool started_ = false;
  std::string error_;
  std::vector<Announcement> seen_;
};

struct GarpRow {
  const char* what;
  // Lines under spec.local of a new LBNodeAgent put in force ("" = no garpConfig); nullptr: the
  // one in force stays.
  const char* garp;
  enum Action { kNewService, kStopHolder } action;
  int expected;  // announcements per address from the node that takes it over
};

// And purelb.io/instance (checked here, where an agent stops): each agent runs with
// PURELB_POD_UID (the lab's fake pod uid per node, as the DaemonSet sets it from metadata.uid);
// its lease carries it, and the agent that stops deletes its lease, which still names its pod.
TEST_F(NodeAgentV2Test, GarpConfigSetsTheAnnouncementsAfterEachTakeoverLeasesNameTheirPod) {
  std::set<std::string> uids;
  for (const char* n : kNodes) {
    const std::string uid = lab::Lab::AgentPodUid(n);
    uids.insert(uid);
    EXPECT_TRUE(Eventually([&] { return Annotation(Lease(n), "purelb.io/instance") == uid; }))
        << n << ": '" << Annotation(Lease(n), "purelb.io/instance") << "', want " << uid;
  }
  EXPECT_EQ(uids.size(), 3u) << "one uid per agent";

  Apply(kLocalDual);
  AnnouncementCapture capture(lab().topology().ClientNetns());
  ASSERT_TRUE(Eventually([&] { return capture.Started(); }));
  ASSERT_EQ(capture.error(), "");

  const GarpRow rows[] = {
      {"no garpConfig: none at all", "", GarpRow::kNewService, 0},
      {"garpConfig count 2: a burst of 2",
       "    garpConfig:\n      enabled: true\n      count: 2\n      interval: 200ms\n"
       "      initialDelay: 50ms\n",
       GarpRow::kNewService, 2},
      {"the holder stops: the new holder sends its burst of 2", nullptr, GarpRow::kStopHolder, 2},
      {"garpConfig enabled: false: none", "    garpConfig:\n      enabled: false\n",
       GarpRow::kNewService, 0},
  };
  std::vector<std::string> agents(std::begin(kNodes), std::end(kNodes));
  std::string in_force;
  std::vector<std::string> ips;
  for (size_t r = 0; r < std::size(rows); ++r) {
    const GarpRow& row = rows[r];
    SCOPED_TRACE(row.what);
    // Per address counted in this row: the node that must announce it (empty: it must stay
    // quiet, nobody took it over) and what the capture had seen of it before the row.
    std::map<std::string, std::string> announcer;
    std::map<std::string, std::map<packet::MacAddress, int>> before;
    if (row.garp != nullptr) {
      const std::string name = "row" + std::to_string(r);
      UseNodeAgent(name, row.garp, in_force, agents);
      in_force = name;
    }
    if (row.action == GarpRow::kNewService) {
      const std::string service = "s" + std::to_string(r);
      Apply(ServiceYaml(service, "    purelb.io/service-group: localdual\n", kDualSpec));
      ips = WaitIngress(service, 2);
      ASSERT_EQ(ips.size(), 2u);
      for (const auto& ip : ips) {
        ASSERT_TRUE(Eventually([&] {
          announcer[ip] = Holder(ip);
          return !announcer[ip].empty() && announcer[ip] == Announcer(Service(service), IsV6(ip));
        })) << ip;
      }
    } else {
      const std::string stopped = Holder(ips[0]);
      ASSERT_FALSE(stopped.empty());
      std::map<std::string, std::string> held;
      for (const auto& ip : ips) {
        held[ip] = Holder(ip);
        before[ip] = capture.For(ip);
      }
      ASSERT_TRUE(lab().SignalAgent(stopped, SIGTERM));
      ASSERT_TRUE(lab().WaitAgentExit(stopped, 10000));
      EXPECT_TRUE(Eventually([&] { return Lease(stopped).is_null(); }))
          << stopped << ": its lease named its pod, yet was not deleted on shutdown";
      agents.erase(std::find(agents.begin(), agents.end(), stopped));
      for (const auto& ip : ips) {
        if (held[ip] != stopped) {
          announcer[ip] = "";  // not taken over: no announcement
          continue;
        }
        ASSERT_TRUE(Eventually([&] {
          announcer[ip] = Holder(ip);
          return !announcer[ip].empty() && announcer[ip] != stopped;
        })) << ip;
      }
    }
    for (const auto& ip : ips) {
      if (row.expected == 0 || announcer[ip].empty()) continue;
      const auto mac = NodeMac(announcer[ip]);
      auto from_holder = [&] { return capture.For(ip)[mac] - before[ip][mac]; };
      EXPECT_TRUE(Eventually([&] { return from_holder() >= row.expected; }, Ms(5000)))
          << ip << ": " << from_holder() << " from " << announcer[ip];
    }
    // Then quiet for longer than any burst the defaults would send (--garp-count 3 every
    // 300 ms; PureLB's 100 ms delay and 3 every 500 ms): exactly the expected count in all, from
    // the announcer alone. A fixed wait, as only time shows that nothing more comes.
    std::this_thread::sleep_for(Ms(2000));
    for (const auto& ip : ips) {
      const int want = announcer[ip].empty() ? 0 : row.expected;
      std::string seen;
      for (const auto& [mac, c] : capture.For(ip)) {
        seen += " " + mac.ToString() + "x" + std::to_string(c);
      }
      int total = 0;
      for (const auto& [mac, c] : before[ip]) total += c;
      EXPECT_EQ(capture.Count(ip) - total, want)
          << ip << " (" << (announcer[ip].empty() ? "not taken over" : announcer[ip]) << " "
          << (announcer[ip].empty() ? "" : NodeMac(announcer[ip]).ToString()) << "); seen:" << seen;
      if (!announcer[ip].empty()) {
        const auto mac = NodeMac(announcer[ip]);
        EXPECT_EQ(capture.For(ip)[mac] - before[ip][mac], want) << ip;
      }
    }
  }
  EXPECT_EQ(capture.error(), "");
}

// ---------------------------------------------------------------------------------------------
// addressConfig: lifetimes and noPrefixRoute of the addresses added after each change, local
// ones on eth0 and remote ones on kube-lb0, as `ip -j addr` shows them in the node's namespace.
// Lifetimes count down from the value given, so each is checked within (low, high].

struct Lifetimes {
  // Seconds; kForever = permanent.
  long valid_low, valid_high;
  long preferred_low, preferred_high;
  bool noprefixroute;
};
constexpr long kForever = 4294967295L;

struct AddressRow {
  const char* what;
  const char* address_config;  // lines under spec.local, "" = none
  Lifetimes local_v4, local_v6, remote_v4, remote_v6;
};

TEST_F(NodeAgentV2Test, AddressConfigSetsLifetimesAndPrefixRouteOfNewAddresses) {
  Apply(kLocalDual);
  Apply(kRemoteGroup);
  // IPv6 addresses are always added deprecated (preferred 0), local and kube-lb0 alike.
  const AddressRow rows[] = {
      {"no addressConfig: Pylon's defaults (lease-long lifetime; prefix route on kube-lb0 only)",
       "",
       {0, 3, 0, 3, true},
       {0, 3, 0, 0, true},
       {0, 3, 0, 3, false},
       {0, 3, 0, 0, false}},
      {"local 120/90 with a prefix route; kube-lb0 permanent without one",
       "    addressConfig:\n      localInterface:\n        validLifetime: 120\n"
       "        preferredLifetime: 90\n        noPrefixRoute: false\n"
       "      dummyInterface:\n        validLifetime: 0\n        noPrefixRoute: true\n",
       {100, 120, 70, 90, false},
       {100, 120, 0, 0, false},
       {kForever - 1, kForever, kForever - 1, kForever, true},
       {kForever - 1, kForever, 0, 0, true}},
      {"local 30 s raised to 60; kube-lb0 preferred 500 clamped to its valid 200",
       "    addressConfig:\n      localInterface:\n        validLifetime: 30\n"
       "      dummyInterface:\n        validLifetime: 200\n        preferredLifetime: 500\n",
       {40, 60, 40, 60, true},
       {40, 60, 0, 0, true},
       {180, 200, 180, 200, false},
       {180, 200, 0, 0, false}},
  };
  const std::vector<std::string> agents(std::begin(kNodes), std::end(kNodes));
  std::string in_force;
  for (size_t r = 0; r < std::size(rows); ++r) {
    const AddressRow& row = rows[r];
    SCOPED_TRACE(row.what);
    const std::string n = std::to_string(r);
    UseNodeAgent("row" + n, row.address_config, in_force, agents);
    in_force = "row" + n;
    Apply(ServiceYaml("local" + n, "    purelb.io/service-group: localdual\n", kDualSpec));
    Apply(ServiceYaml("remote" + n, "    purelb.io/service-group: remote\n", kDualSpec));
    const auto local = WaitIngress("local" + n, 2);
    const auto remote = WaitIngress("remote" + n, 2);
    ASSERT_EQ(local.size(), 2u);
    ASSERT_EQ(remote.size(), 2u);
    auto check = [&](const std::string& node, const std::string& dev, const std::string& ip,
                     const Lifetimes& want) {
      Json a;
      auto in = [](long v, long low, long high) { return v > low && v <= high; };
      auto lifetime = [&](const char* key) { return a.value(key, -1L); };
      const bool ok = Eventually([&] {
        a = AddrInfo(node, dev, ip);
        if (a.is_null()) return false;
        const long pref = lifetime("preferred_life_time");
        return in(lifetime("valid_life_time"), want.valid_low, want.valid_high) &&
               (want.preferred_high == 0 ? pref == 0
                                         : in(pref, want.preferred_low, want.preferred_high)) &&
               a.value("noprefixroute", false) == want.noprefixroute;
      });
      EXPECT_TRUE(ok) << ip << " on " << dev << " of " << node << ": " << a.dump();
    };
    // The local address's holder: whoever it is (the addresses are added before the Service's
    // annotation names it).
    for (const auto& ip : local) {
      std::string holder;
      ASSERT_TRUE(Eventually([&] { return !(holder = Holder(ip)).empty(); })) << ip;
      check(holder, "eth0", ip, IsV6(ip) ? row.local_v6 : row.local_v4);
    }
    for (const auto& ip : remote) {
      for (const char* node : kNodes) {
        check(node, "kube-lb0", ip, IsV6(ip) ? row.remote_v6 : row.remote_v4);
      }
    }
  }
}

}  // namespace
}  // namespace pylon::e2e
