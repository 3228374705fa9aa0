#include "soak/scenario.h"

#include "net/ip.h"

namespace pylon::soak {

std::string RequestedAddress(const ConfigDef& c, int i, bool v6) {
  auto ip = net::IpAddress::Parse(v6 ? c.v6_requested : c.v4_requested);
  if (!ip) return "";
  return net::IpAddress::FromValue(ip->family(), ip->value() + static_cast<unsigned>(i + 1))
      .ToString();
}

std::string ConfigYaml(const ConfigDef& c, const ConfigState& s, bool valid) {
  const std::string v4len = std::to_string(29 - s.size), v6len = std::to_string(125 - s.size);
  if (c.lace) {
    std::string y =
        "apiVersion: lace-cni.io/v1alpha1\nkind: LoadBalancerClass\nmetadata:\n  name: " +
        std::string(c.name) + "\nspec:\n  mode: l2\n  ipv4Pools:\n  - cidr: " + c.v4_dynamic + "/" +
        v4len + "\n";
    // Invalid: a pool with both cidr and start/end.
    if (!valid) y += "    start: 192.0.2.250\n    end: 192.0.2.251\n";
    y += "  - cidr: " + std::string(c.v4_requested) +
         "/28\n  ipv6Pools:\n  - cidr: " + c.v6_dynamic + "/" + v6len +
         "\n  - cidr: " + c.v6_requested + "/124\n";
    return y;
  }
  const std::string v4subnet = c.is_virtual ? "203.0.113.0/24" : "192.0.2.0/24";
  const std::string v6subnet = c.is_virtual ? "2001:db8:beef::/64" : "2001:db8:1::/64";
  const std::string v4agg = c.is_virtual ? "/32" : "default";
  const std::string v6agg = c.is_virtual ? "/128" : "default";
  // Invalid: the first pool outside its subnet (the typo of docs/reliability.md).
  const std::string first_subnet = valid ? v4subnet : "10.255.255.0/24";
  return "apiVersion: purelb.io/v1\nkind: ServiceGroup\nmetadata:\n  name: " + std::string(c.name) +
         "\n  namespace: purelb-system\nspec:\n  local:\n    v4pools:\n    - pool: " +
         c.v4_dynamic + "/" + v4len + "\n      subnet: " + first_subnet +
         "\n      aggregation: " + v4agg + "\n    - pool: " + c.v4_requested +
         "/28\n      subnet: " + v4subnet + "\n      aggregation: " + v4agg +
         "\n    v6pools:\n    - pool: " + c.v6_dynamic + "/" + v6len +
         "\n      subnet: " + v6subnet + "\n      aggregation: " + v6agg +
         "\n    - pool: " + c.v6_requested + "/124\n      subnet: " + v6subnet +
         "\n      aggregation: " + v6agg + "\n";
}

std::vector<std::string> AllocatorTiming() {
  return {"--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s"};
}

std::string ServiceName(int i) { return "s" + std::to_string(i); }
int ServicePort(int i) { return 8000 + i; }

std::string ServiceYaml(int i, const ServiceState& s) {
  const ConfigDef& c = kConfigs[s.config];
  std::string ann;
  if (!c.lace) ann += "    purelb.io/service-group: " + std::string(c.name) + "\n";
  if (s.share > 0) ann += "    purelb.io/allow-shared-ip: k" + std::to_string(s.share) + "\n";
  if (s.requested) {
    std::string ips = RequestedAddress(c, i, s.v6_primary);
    if (s.policy > 0) ips += "," + RequestedAddress(c, i, !s.v6_primary);
    ann += std::string("    ") +
           (c.lace ? "loadbalancer.lace-cni.io/loadBalancerIPs" : "purelb.io/addresses") + ": \"" +
           ips + "\"\n";
  }
  const char* first = s.v6_primary ? "IPv6" : "IPv4";
  const char* second = s.v6_primary ? "IPv4" : "IPv6";
  std::string y = "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + ServiceName(i) +
                  "\n  namespace: default\n";
  if (!ann.empty()) y += "  annotations:\n" + ann;
  y += "spec:\n  type: LoadBalancer\n";
  if (c.lace) y += "  loadBalancerClass: lace-cni.io/" + std::string(c.name) + "\n";
  y += "  externalTrafficPolicy: " + std::string(s.local_etp ? "Local" : "Cluster") + "\n";
  y += "  ipFamilyPolicy: " + std::string(kPolicies[s.policy]) + "\n  ipFamilies:\n  - " + first +
       "\n";
  if (s.policy > 0) y += "  - " + std::string(second) + "\n";
  y += "  selector:\n    app: " + ServiceName(i) +
       "\n  ports:\n  - port: " + std::to_string(ServicePort(i)) +
       "\n    protocol: TCP\n    targetPort: 8080\n";
  return y;
}

bool IsVirtual(const std::string& ip) {
  return ip.rfind("203.0.113.", 0) == 0 || ip.rfind("2001:db8:beef:", 0) == 0;
}

bool InSoakPools(const std::string& text) {
  static const std::vector<net::Prefix> prefixes = [] {
    std::vector<net::Prefix> out;
    for (const auto& c : kConfigs) {
      out.push_back(*net::Prefix::Parse(std::string(c.v4_dynamic) + "/27"));
      out.push_back(*net::Prefix::Parse(std::string(c.v4_requested) + "/28"));
      out.push_back(*net::Prefix::Parse(std::string(c.v6_dynamic) + "/123"));
      out.push_back(*net::Prefix::Parse(std::string(c.v6_requested) + "/124"));
    }
    return out;
  }();
  auto ip = net::IpAddress::Parse(text);
  if (!ip) return false;
  for (const auto& p : prefixes) {
    if (p.Contains(*ip)) return true;
  }
  return false;
}

}  // namespace pylon::soak
