// The node-sysctl check (node_sysctls.h): the pure verdict as a table, the stateful check walked
// through one scenario table over FakeNetlink, and `pylon prepare-node`'s core.
#include "agent/node_sysctls.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/netlink/fake_netlink.h"

namespace pylon::agent {
namespace {

using std::chrono::seconds;

// --- EvaluateNodeSysctls ---------------------------------------------------------------------

struct VerdictCase {
  std::string name;
  std::string changes;  // to the kernel defaults (0 everywhere), as Values() reads them
  std::vector<std::string> missing;  // "eth0 arp_ignore=0"
  bool strict_arp_ok;
  bool promote_ok;
  NodeSysctlNeeds needs = {{"eth0"}, "kube-lb0"};
};

// The sysctl values of a case: "all/arp_ignore", ... "kube-lb0/promote_secondaries" of the
// interfaces all, eth0, eth1 and kube-lb0, 0 but for `changes` ("eth0/arp_ignore=1
// all/arp_announce=2"; the value "?" makes one unreadable).
std::map<std::string, std::string> Values(const std::string& changes) {
  std::map<std::string, std::string> v;
  for (const char* i : {"all", "eth0", "eth1", "kube-lb0"}) {
    for (const char* n : {"arp_ignore", "arp_announce", "promote_secondaries"}) {
      v[std::string(i) + "/" + n] = "0";
    }
  }
  std::istringstream in(changes);
  for (std::string change; in >> change;) {
    const auto eq = change.find('=');
    const std::string key = change.substr(0, eq), value = change.substr(eq + 1);
    EXPECT_EQ(v.count(key), 1u) << key;
    if (value == "?") {
      v.erase(key);
    } else {
      v[key] = value;
    }
  }
  return v;
}

class VerdictTest : public ::testing::TestWithParam<VerdictCase> {};

TEST_P(VerdictTest, EffectiveValueIsTheLargerOfAllAndTheInterface) {
  const VerdictCase& c = GetParam();
  const auto values = Values(c.changes);
  auto read = [&](const netlink::SysctlKey& key, std::string* error) -> std::optional<std::string> {
    auto it = values.find(key.interface + "/" + key.name);
    if (it == values.end()) {
      *error = "read sysctl: Permission denied";
      return std::nullopt;
    }
    return it->second;
  };
  NodeSysctlVerdict v = EvaluateNodeSysctls(c.needs, read);
  std::vector<std::string> missing;
  for (const auto& s : v.shortfalls)
    missing.push_back(s.interface + " " + s.name + "=" + s.effective);
  EXPECT_EQ(missing, c.missing);
  EXPECT_EQ(v.strict_arp_ok(), c.strict_arp_ok);
  EXPECT_EQ(v.promote_secondaries_ok(), c.promote_ok);
  EXPECT_EQ(v.ok(), c.missing.empty());
  if (!v.ok()) {
    EXPECT_NE(v.Explain().find("pylon prepare-node"), std::string::npos) << v.Explain();
  }
}

// Rows: name, changes to the defaults, what is missing, strict ARP ok, promote ok (, needs).
// clang-format off
const VerdictCase kVerdictCases[] = {
    {"kernel_defaults", "", {"eth0 arp_ignore=0", "eth0 arp_announce=0", "kube-lb0 promote_secondaries=0"}, false, false},
    {"init_container_set_all", "all/arp_ignore=1 all/arp_announce=2 all/promote_secondaries=1", {}, true, true},
    {"per_interface_values", "eth0/arp_ignore=1 eth0/arp_announce=2 kube-lb0/promote_secondaries=1", {}, true, true},
    {"stricter_arp_ignore_counts", "all/arp_ignore=2 eth0/arp_announce=2 all/promote_secondaries=1", {}, true, true},
    {"arp_announce_1_is_not_enough", "all/arp_ignore=1 all/arp_announce=1 all/promote_secondaries=1", {"eth0 arp_announce=1"}, false, true},
    {"only_promote_secondaries_missing", "all/arp_ignore=1 all/arp_announce=2", {"kube-lb0 promote_secondaries=0"}, true, false},
    {"second_lan_interface_checked", "eth0/arp_ignore=1 eth0/arp_announce=2 all/promote_secondaries=1", {"eth1 arp_ignore=0", "eth1 arp_announce=0"}, false, true, {{"eth0", "eth1"}, "kube-lb0"}},
    {"unreadable_interface_but_all_in_force", "all/arp_ignore=1 all/arp_announce=2 all/promote_secondaries=1 eth0/arp_ignore=?", {}, true, true},
    {"unreadable_and_not_in_force", "eth0/arp_ignore=? eth0/arp_announce=2 all/promote_secondaries=1", {"eth0 arp_ignore=unreadable (read sysctl: Permission denied)"}, false, true},
    {"garbage_is_not_a_value", "eth0/arp_ignore=x eth0/arp_announce=2 all/promote_secondaries=1", {"eth0 arp_ignore=unreadable ('x')"}, false, true},
    {"no_virtual_interface_yet", "", {"eth0 arp_ignore=0", "eth0 arp_announce=0"}, false, true, {{"eth0"}, ""}},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Table, VerdictTest, ::testing::ValuesIn(kVerdictCases),
                         [](const auto& p) { return p.param.name; });

// --- NodeSysctlCheck: one check walked through a scenario ------------------------------------

enum class Act {
  kNone,
  kAdvance31s,     // past the recheck period
  kInitContainer,  // a privileged step sets the `all` values (the agent's /proc/sys stays RO)
  kProfileResets,  // a sysctl profile puts every value back to 0
  kWritable,       // /proc/sys becomes writable (a privileged agent, a root process)
  kSecondLan,      // the network now has a second LAN interface
};

struct Step {
  std::string what;
  Act act;
  bool expect_read;  // Check returned a verdict
  bool expect_changed;
  int expect_new_writes;  // WriteSysctl attempts in this step
  bool expect_strict_arp_ok;
  bool expect_promote_ok;
};

TEST(NodeSysctlCheckTest, ReportsEachChangeOnceAndTriesEachWriteOncePerChange) {
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  nl.AddTestLink("eth0", "veth");
  nl.AddTestLink("eth1", "veth");
  nl.AddTestLink("kube-lb0", "dummy");
  nl.SetSysctlsReadOnly(true);  // the agent's own non-privileged container
  NodeSysctlCheck check(nl, clock, seconds(30));
  NodeSysctlNeeds needs{{"eth0"}, "kube-lb0"};
  auto set_all = [&](const std::string& ignore, const std::string& announce,
                     const std::string& promote) {
    nl.SetSysctlsReadOnly(false);
    ASSERT_TRUE(nl.WriteSysctl(netlink::ArpIgnore("all"), ignore));
    ASSERT_TRUE(nl.WriteSysctl(netlink::ArpAnnounce("all"), announce));
    ASSERT_TRUE(nl.WriteSysctl(netlink::PromoteSecondaries("all"), promote));
    nl.SetSysctlsReadOnly(true);
  };
  const std::vector<Step> steps = {
      {"first check: kernel defaults, writes fail (EROFS) once each", Act::kNone, true, true, 3,
       false, false},
      {"same pass again: nothing read, nothing written", Act::kNone, false, false, 0, false, false},
      {"recheck: still missing, not written again, not reported again", Act::kAdvance31s, true,
       false, 0, false, false},
      {"init container sets all.*: reported in force", Act::kInitContainer, true, true, 0, true,
       true},
      {"recheck: unchanged", Act::kAdvance31s, true, false, 0, true, true},
      {"a profile resets them: reported missing, one write try each", Act::kProfileResets, true,
       true, 3, false, false},
      {"/proc/sys writable now, but the same shortfall: not retried before a change",
       Act::kWritable, true, false, 0, false, false},
      {"a second LAN interface: what is missing changed, written, in force", Act::kSecondLan, true,
       true, 5, true, true},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.what);
    switch (s.act) {
      case Act::kNone:
        break;
      case Act::kAdvance31s:
        clock.Advance(seconds(31));
        break;
      case Act::kInitContainer:
        set_all("1", "2", "1");
        clock.Advance(seconds(31));
        break;
      case Act::kProfileResets:
        set_all("0", "0", "0");
        clock.Advance(seconds(31));
        break;
      case Act::kWritable:
        nl.SetSysctlsReadOnly(false);
        clock.Advance(seconds(31));
        break;
      case Act::kSecondLan:
        needs.lan_interfaces.push_back("eth1");
        break;
    }
    const int before = nl.sysctl_write_attempts();
    auto r = check.Check(needs);
    EXPECT_EQ(nl.sysctl_write_attempts() - before, s.expect_new_writes);
    ASSERT_EQ(r.has_value(), s.expect_read);
    ASSERT_TRUE(check.current().has_value());
    EXPECT_EQ(check.current()->strict_arp_ok(), s.expect_strict_arp_ok);
    EXPECT_EQ(check.current()->promote_secondaries_ok(), s.expect_promote_ok);
    if (r) {
      EXPECT_EQ(r->changed, s.expect_changed);
    }
  }
}

TEST(NodeSysctlCheckTest, ExplainsWhyTheAgentCannotSetThem) {
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  nl.AddTestLink("eth0", "veth");
  nl.AddTestLink("kube-lb0", "dummy");
  nl.SetSysctlsReadOnly(true);
  NodeSysctlCheck check(nl, clock);
  auto r = check.Check(NodeSysctlNeeds{{"eth0"}, "kube-lb0"});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->verdict.ok());
  EXPECT_TRUE(r->written.empty());
  EXPECT_NE(r->verdict.write_error.find("Read-only file system"), std::string::npos)
      << r->verdict.write_error;
  const std::string text = r->verdict.Explain();
  EXPECT_NE(text.find("strict ARP is off"), std::string::npos) << text;
  EXPECT_NE(text.find("eth0 arp_ignore=0 (want 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("net.ipv4.conf.all.arp_ignore=1"), std::string::npos) << text;
}

// Where /proc/sys is writable (the lab's root processes) the agent sets the per-interface values
// itself, as before.
TEST(NodeSysctlCheckTest, WritableProcSysIsFixedInPlace) {
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  nl.AddTestLink("eth0", "veth");
  nl.AddTestLink("kube-lb0", "dummy");
  NodeSysctlCheck check(nl, clock);
  auto r = check.Check(NodeSysctlNeeds{{"eth0"}, "kube-lb0"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->verdict.ok());
  EXPECT_EQ(r->written, (std::vector<std::string>{"eth0 arp_ignore=1", "eth0 arp_announce=2",
                                                  "kube-lb0 promote_secondaries=1"}));
  EXPECT_EQ(*nl.ReadSysctl(netlink::ArpIgnore("eth0")), "1");
  EXPECT_EQ(*nl.ReadSysctl(netlink::ArpAnnounce("eth0")), "2");
  EXPECT_EQ(*nl.ReadSysctl(netlink::PromoteSecondaries("kube-lb0")), "1");
}

// --- pylon prepare-node ----------------------------------------------------------------------

TEST(PrepareNodeTest, SetsExactlyTheAllValues) {
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  nl.AddTestLink("eth0", "veth");
  ASSERT_TRUE(PrepareNode(nl));
  EXPECT_EQ(*nl.ReadSysctl(netlink::ArpIgnore("all")), "1");
  EXPECT_EQ(*nl.ReadSysctl(netlink::ArpAnnounce("all")), "2");
  EXPECT_EQ(*nl.ReadSysctl(netlink::PromoteSecondaries("all")), "1");
  EXPECT_EQ(*nl.ReadSysctl(netlink::ArpIgnore("eth0")), "0");  // `all` covers it
  EXPECT_EQ(nl.sysctl_write_attempts(), 3);
  // What the agent then finds on any interface, including one created later.
  nl.AddTestLink("eth7", "veth");
  EXPECT_TRUE(
      EvaluateNodeSysctls(NodeSysctlNeeds{{"eth0", "eth7"}, "eth7"}, SysctlReaderOf(nl)).ok());
}

TEST(PrepareNodeTest, FailsInANonPrivilegedContainer) {
  FakeClock clock;
  netlink::FakeNetlink nl(clock);
  nl.SetSysctlsReadOnly(true);
  auto st = PrepareNode(nl);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("Read-only file system"), std::string::npos)
      << st.error().message();
}

}  // namespace
}  // namespace pylon::agent
