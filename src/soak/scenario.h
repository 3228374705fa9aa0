// The soak's world, as pure data and text (no I/O): its config objects and Services, what it
// wants of each, and the YAML it applies for them (soak.h; docs/reliability.md).
#pragma once

#include <string>
#include <vector>

namespace pylon::soak {

// Services s0 .. s9, each with one pod (p0 .. p9) on node (i % nodes) + 1.
inline constexpr int kServices = 10;

// A config object of the soak: three ServiceGroups and a Lace LoadBalancerClass. Pools grow and
// shrink by prefix length (size 0..2); each has a second range that only requested addresses use
// (dynamic allocation takes the first range first), so a request collides only with itself.
struct ConfigDef {
  const char* name;
  bool lace;
  bool is_virtual;
  const char* v4_dynamic;    // base of the dynamic range (/29, /28, /27)
  const char* v4_requested;  // /28
  const char* v6_dynamic;    // base (/125, /124, /123)
  const char* v6_requested;  // /124
};
inline constexpr ConfigDef kConfigs[] = {
    {"sa", false, false, "192.0.2.64", "192.0.2.96", "2001:db8:1::a:0", "2001:db8:1::b:0"},
    {"sb", false, false, "192.0.2.128", "192.0.2.160", "2001:db8:1::c:0", "2001:db8:1::d:0"},
    {"sv", false, true, "203.0.113.0", "203.0.113.32", "2001:db8:beef::", "2001:db8:beef::1:0"},
    {"c1", true, false, "192.0.2.192", "192.0.2.240", "2001:db8:1::e:0", "2001:db8:1::f:0"},
};
inline constexpr int kConfigCount = 4;

struct ConfigState {
  bool exists = true;
  bool valid = true;
  int size = 1;
};

// What the soak wants of one Service name.
struct ServiceState {
  bool exists = false;
  int config = 0;  // index in kConfigs
  bool v6_primary = false;
  int policy = 0;  // 0 SingleStack, 1 PreferDualStack, 2 RequireDualStack
  bool requested = false;
  int share = 0;  // 0 none, 1 "k1", 2 "k2"
  bool local_etp = false;
};

// spec.ipFamilyPolicy by ServiceState::policy.
inline constexpr const char* kPolicies[] = {"SingleStack", "PreferDualStack", "RequireDualStack"};

// The address a Service requests: offset i + 1 in its config's requested range ("" when the
// range does not parse).
std::string RequestedAddress(const ConfigDef& c, int i, bool v6);

// The ServiceGroup or LoadBalancerClass `c` at size `s.size`; `valid` false: one the config
// validation rejects (a pool outside its subnet; a pool with both cidr and start/end).
std::string ConfigYaml(const ConfigDef& c, const ConfigState& s, bool valid);

// Leader election of both allocator replicas: a killed leader is replaced within seconds.
std::vector<std::string> AllocatorTiming();

std::string ServiceName(int i);  // "s<i>"
int ServicePort(int i);          // 8000 + i

// The Service `i` (namespace default) as `s` wants it.
std::string ServiceYaml(int i, const ServiceState& s);

// Whether `ip` is in the soak's virtual subnets (203.0.113.0/24, 2001:db8:beef::/64).
bool IsVirtual(const std::string& ip);

// Whether `ip` is in one of the soak's pools (largest sizes): the addresses that may appear on a
// node only while a Service holds them.
bool InSoakPools(const std::string& text);

}  // namespace pylon::soak
