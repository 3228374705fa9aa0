// Addresses in use on the network: a foreign host on the lab LAN owns addresses of the pool
// (configured on the client namespace's eth0, which answers ARP and DAD for them like any host
// would). Pylon must refuse them with a clear error: a Service that did not ask for a specific
// address gets another one that the client reaches; a Service that requested one is refused and
// gets nothing else.
#include <string>
#include <vector>

#include "e2e_lab.h"

namespace pylon::e2e {
namespace {

constexpr const char* kForeignV4 = "192.0.2.225";           // the first address the pool hands out
constexpr const char* kForeignV6 = "2001:db8:1:0:8000::4";  // likewise for IPv6
constexpr const char* kForeignRequested = "192.0.2.229";

class ConflictTest : public LabTest {
 protected:
  // The client (not a cluster node) takes the addresses, as a misconfigured host would.
  void Foreign(const std::string& prefix) {
    std::vector<std::string> argv = {"ip", "addr", "add", prefix, "dev", "eth0"};
    if (prefix.find(':') != std::string::npos) argv.push_back("nodad");
    auto s = lab::RunCommandChecked(argv, lab().topology().ClientNetns());
    ASSERT_TRUE(s) << s.error().message();
  }
  // The foreign host takes the first IPv4 and IPv6 addresses the pool hands out.
  void ForeignFirstAddresses() {
    Foreign(std::string(kForeignV4) + "/24");
    Foreign(std::string(kForeignV6) + "/128");
  }
  // The foreign host's MAC address, as conflicts name it ("?" if unknown).
  std::string ClientMac() {
    auto m = lab::InterfaceMacIn(lab().topology().ClientNetns(), "eth0");
    return m ? m->ToString() : std::string("?");
  }

  // Events of one Service with one reason (messages).
  std::vector<std::string> Events(const std::string& service, const std::string& reason) {
    std::vector<std::string> out;
    Json list = GetJson({"get", "events", "-n", "default"});
    if (!list.contains("items") || !list["items"].is_array()) return out;
    for (const auto& e : list["items"]) {
      try {
        if (e.at("involvedObject").at("name") == service && e.at("reason") == reason) {
          out.push_back(e.at("message").get<std::string>());
        }
      } catch (const std::exception&) {
      }
    }
    return out;
  }
  static bool AnyContains(const std::vector<std::string>& v, const std::vector<std::string>& all) {
    for (const auto& s : v) {
      bool ok = true;
      for (const auto& part : all) ok = ok && s.find(part) != std::string::npos;
      if (ok) return true;
    }
    return false;
  }
  // The ServiceGroup's status.conflicts entries for `address` ("<action>" each).
  std::vector<std::string> GroupConflicts(const std::string& address) {
    std::vector<std::string> out;
    Json sg = GetJson({"get", "servicegroups.purelb.io", "-n", "purelb-system", "localdual"});
    try {
      for (const auto& c : sg.at("status").at("conflicts")) {
        if (c.at("address") == address) out.push_back(c.at("action").get<std::string>());
      }
    } catch (const std::exception&) {
    }
    return out;
  }
  Json Group() {
    return GetJson({"get", "servicegroups.purelb.io", "-n", "purelb-system", "localdual"});
  }
  // The ServiceGroup's status.<field> as JSON text; "" when absent.
  std::string GroupStatus(const std::string& field) {
    try {
      return Group().at("status").at(field).dump();
    } catch (const std::exception&) {
      return "";
    }
  }
  std::string Condition(const Json& svc, std::string* message) {
    try {
      for (const auto& c : svc.at("status").at("conditions")) {
        if (c.at("type") == "purelb.io/AddressAllocated") {
          *message = c.value("message", "");
          return c.at("status").get<std::string>() + "/" + c.at("reason").get<std::string>();
        }
      }
    } catch (const std::exception&) {
    }
    return "";
  }
};

// The full probe before the first announcement: the path of a requested address, and of an
// address handed out before it could be probed ahead. Probe ahead is off here (the allocator
// publishes no next addresses), so the Service surely meets the foreign owner first.
class FullProbeConflictTest : public ConflictTest {
 protected:
  void Configure(lab::LabConfig* cfg) override {
    cfg->allocator_args.insert(cfg->allocator_args.end(), {"--probe-ahead", "0"});
  }
};

TEST_F(FullProbeConflictTest, ForeignOwnerIsRefusedAndAnotherAddressAllocated) {
  ForeignFirstAddresses();
  Foreign(std::string(kForeignRequested) + "/24");
  const std::string client_mac = ClientMac();
  Apply(kLocalDual);

  // 1. No specific address asked: the first addresses of the pool are the foreign host's.
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  std::vector<std::string> ips;
  ASSERT_TRUE(Eventually(
      [&] {
        ips = IngressIps(Service("web"));
        return ips.size() == 2 && ips[0] != kForeignV4 && ips[1] != kForeignV6;
      },
      Ms(40000)))
      << "web still shows " << ::testing::PrintToString(ips);
  // The probe's verdict, on the Service: an event naming the address, the foreign MAC and the
  // interface, and the annotation the allocator acted on.
  EXPECT_TRUE(Eventually([&] {
    return AnyContains(Events("web", "AddressConflict"), {kForeignV4, client_mac, "eth0"});
  })) << ::testing::PrintToString(Events("web", "AddressConflict"));
  const std::string ann = Annotation(Service("web"), "conflict.purelb.io/ipv4-192-0-2-225");
  EXPECT_NE(ann.find(kForeignV4), std::string::npos) << ann;
  EXPECT_NE(ann.find(client_mac), std::string::npos) << ann;
  EXPECT_TRUE(Eventually([&] {
    return GroupConflicts(kForeignV4) == std::vector<std::string>{"Reallocated"};
  })) << GetJson({"get", "servicegroups.purelb.io", "-n", "purelb-system", "localdual"}).dump();
  // Nobody in the cluster took the foreign addresses; the new ones work.
  EXPECT_TRUE(NodesWith("eth0", kForeignV4).empty());
  EXPECT_TRUE(NodesWith("eth0", kForeignV6).empty());
  for (const auto& ip : ips) {
    EXPECT_TRUE(EventuallyReachable(ip)) << ip;
    EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip).size() == 1; })) << ip;
  }

  // 2. A Service that asked for a foreign-owned address: refused, nothing else allocated.
  Apply(ServiceYaml("req",
                    "    purelb.io/service-group: localdual\n    purelb.io/addresses: " +
                        std::string(kForeignRequested) + "\n",
                    ""));
  std::string message, cond;
  ASSERT_TRUE(Eventually(
      [&] {
        cond = Condition(Service("req"), &message);
        return cond == "False/AddressConflict";
      },
      Ms(40000)))
      << cond << " " << message;
  EXPECT_NE(message.find("requested address " + std::string(kForeignRequested) +
                         " is in use on the network by another host (MAC " + client_mac),
            std::string::npos)
      << message;
  EXPECT_TRUE(Eventually([&] { return IngressIps(Service("req")).empty(); }));
  EXPECT_TRUE(Eventually([&] {
    return AnyContains(Events("req", "AllocationFailed"), {kForeignRequested, client_mac});
  })) << ::testing::PrintToString(Events("req", "AllocationFailed"));
  EXPECT_TRUE(Eventually(
      [&] { return GroupConflicts(kForeignRequested) == std::vector<std::string>{"Refused"}; }));
  EXPECT_TRUE(NodesWith("eth0", kForeignRequested).empty());
  // The allocation of web was not disturbed.
  EXPECT_EQ(IngressIps(Service("web")), ips);
}

// Probe ahead (docs/agent.md "Probe ahead"): the foreign host takes the pool's next addresses
// before any Service exists. The agents' background probes find them, the ServiceGroup's status
// names them (conflicts, action Skipped, and conflictCount), and the first Service gets other
// addresses at once: the foreign ones are never handed out, so no Service ever reports a conflict.
TEST_F(ConflictTest, AddressTakenBeforeAnyServiceIsNeverHandedOut) {
  ForeignFirstAddresses();
  const std::string client_mac = ClientMac();
  Apply(kLocalDual);

  // The pool's status names both addresses before any Service exists.
  ASSERT_TRUE(Eventually(
      [&] {
        return GroupConflicts(kForeignV4) == std::vector<std::string>{"Skipped"} &&
               GroupConflicts(kForeignV6) == std::vector<std::string>{"Skipped"};
      },
      Ms(30000)))
      << Group().dump();
  EXPECT_EQ(GroupStatus("conflictCount"), "2") << Group().dump();
  EXPECT_TRUE(AnyContains({Group().dump()}, {kForeignV4, client_mac})) << Group().dump();
  // The next addresses offered for probing skip them.
  std::string next;
  EXPECT_TRUE(Eventually([&] {
    next = GroupStatus("probeAhead");
    return next.find("ipv4") != std::string::npos && next.find(kForeignV4) == std::string::npos &&
           next.find(kForeignV6) == std::string::npos;
  })) << next;
  // The node that probed them lists them on its lease, with the foreign MAC.
  Json leases = GetJson({"get", "leases", "-n", "purelb-system"});
  std::string listed;
  for (const auto& l : leases["items"]) listed += Annotation(l, "purelb.io/probe-ahead") + ",";
  EXPECT_NE(listed.find(std::string(kForeignV4) + " taken " + client_mac), std::string::npos)
      << listed;

  // A Service now: other addresses straight away, never the foreign ones, no conflict reported.
  Apply(ServiceYaml("web", "    purelb.io/service-group: localdual\n", kDualSpec));
  std::vector<std::string> ips;
  ASSERT_TRUE(Eventually([&] {
    ips = IngressIps(Service("web"));
    return ips.size() == 2;
  })) << ::testing::PrintToString(ips);
  EXPECT_NE(ips[0], kForeignV4);
  EXPECT_NE(ips[1], kForeignV6);
  for (const auto& ip : ips) {
    EXPECT_TRUE(EventuallyReachable(ip)) << ip;
    EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip).size() == 1; })) << ip;
  }
  EXPECT_TRUE(Events("web", "AddressConflict").empty())
      << ::testing::PrintToString(Events("web", "AddressConflict"));
  for (const auto& m : Events("web", "AddressAssigned")) {
    EXPECT_EQ(m.find(kForeignV4), std::string::npos) << m;
    EXPECT_EQ(m.find(kForeignV6), std::string::npos) << m;
  }
  EXPECT_EQ(Annotation(Service("web"), "conflict.purelb.io/ipv4-192-0-2-225"), "");
  EXPECT_TRUE(NodesWith("eth0", kForeignV4).empty());
  EXPECT_TRUE(NodesWith("eth0", kForeignV6).empty());
  // The background conflicts, as metrics: counted on the node that found them.
  double found = 0;
  for (const auto& n : lab().topology().nodes()) {
    found += AgentMetric(n.name, "purelb_probe_ahead_conflicts_total").value_or(0);
  }
  EXPECT_EQ(found, 2);
}

// The same for a LoadBalancerClass of mode l2 (kPublicClass, on LAN B): its status names the
// foreign host's addresses and a Service of the class never gets them.
TEST_F(ConflictTest, LaceClassAddressTakenBeforeAnyServiceIsNeverHandedOut) {
  constexpr const char* kTakenV4 = "198.51.100.5";  // the class's first addresses
  constexpr const char* kTakenV6 = "2001:db8:f00d::5";
  Foreign(std::string(kTakenV4) + "/24");
  Foreign(std::string(kTakenV6) + "/128");
  Apply(kPublicClass);
  auto cls = [&] { return GetJson({"get", "loadbalancerclasses.lace-cni.io", "public"}); };
  auto skipped = [&](const std::string& address) {
    Json c_obj = cls();  // kept: a range-for over a part of a temporary would dangle
    try {
      for (const auto& c : c_obj.at("status").at("conflicts")) {
        if (c.at("address") == address && c.at("action") == "Skipped") return true;
      }
    } catch (const std::exception&) {
    }
    return false;
  };
  ASSERT_TRUE(Eventually([&] { return skipped(kTakenV4) && skipped(kTakenV6); }, Ms(30000)))
      << cls().dump();
  std::string next;
  EXPECT_TRUE(Eventually([&] {
    const Json c = cls();
    next = c.contains("status") ? c["status"].value("probeAhead", Json()).dump() : "";
    return next.find("198.51.100.") != std::string::npos &&
           next.find(kTakenV4) == std::string::npos && next.find(kTakenV6) == std::string::npos;
  })) << next;

  Apply(
      ServiceYaml("web", "", std::string("  loadBalancerClass: lace-cni.io/public\n") + kDualSpec));
  std::vector<std::string> ips;
  ASSERT_TRUE(Eventually([&] {
    ips = IngressIps(Service("web"));
    return ips.size() == 2;
  })) << ::testing::PrintToString(ips);
  for (const auto& ip : ips) {
    EXPECT_NE(ip, kTakenV4);
    EXPECT_NE(ip, kTakenV6);
    EXPECT_TRUE(EventuallyReachable(ip)) << ip;
    EXPECT_TRUE(Eventually([&] { return NodesWith("eth0", ip).size() == 1; })) << ip;
  }
  EXPECT_TRUE(Events("web", "AddressConflict").empty())
      << ::testing::PrintToString(Events("web", "AddressConflict"));
  EXPECT_TRUE(NodesWith("eth0", kTakenV4).empty());
  EXPECT_TRUE(NodesWith("eth0", kTakenV6).empty());
}

}  // namespace
}  // namespace pylon::e2e
