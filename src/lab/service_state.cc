#include "lab/service_state.h"

#include <thread>

#include "common/json.h"
#include "lab/command.h"
#include "lab/netns.h"

namespace pylon::lab {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

const char* const kDemoGroup = R"(apiVersion: purelb.io/v1
kind: ServiceGroup
metadata:
  name: localdual
  namespace: purelb-system
spec:
  local:
    v4pools:
    - aggregation: default
      pool: 192.0.2.225-192.0.2.229
      subnet: 192.0.2.0/24
    v6pools:
    - aggregation: default
      pool: 2001:db8:1:0:8000::4/126
      subnet: 2001:db8:1::/64
)";

const char* const kDemoService = R"(apiVersion: v1
kind: Service
metadata:
  name: kuard-svc-dual-remote
  namespace: default
  annotations:
    purelb.io/service-group: localdual
spec:
  type: LoadBalancer
  ipFamilyPolicy: RequireDualStack
  ipFamilies:
  - IPv4
  - IPv6
  selector:
    app: kuard
  ports:
  - port: 80
    protocol: TCP
    targetPort: 8080
)";

Result<nlohmann::json> GetJson(const Lab& lab, const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("-o");
  a.push_back("json");
  auto out = lab.Kubectl(a);
  if (!out) return Fail(out.error());
  return ParseJson(*out, "kubectl output");
}

Result<nlohmann::json> WaitService(const Lab& lab, const std::string& ns, const std::string& name,
                                   const std::function<bool(const nlohmann::json&)>& pred,
                                   Ms timeout, const std::string& what) {
  auto deadline = SteadyClock::now() + timeout;
  std::string last;
  while (SteadyClock::now() < deadline && !Stopping()) {
    auto svc = GetJson(lab, {"get", "service", "-n", ns, name});
    if (svc) {
      try {
        if (pred(*svc)) return *svc;
      } catch (const std::exception&) {
      }
    } else {
      last = svc.error().message();
    }
    std::this_thread::sleep_for(Ms(20));
  }
  return Fail(ErrorCode::kUnavailable,
              "timed out waiting for " + what + (last.empty() ? "" : ": " + last));
}

Result<nlohmann::json> WaitDualStackAnnounced(const Lab& lab, const std::string& name) {
  return WaitService(
      lab, "default", name,
      [](const nlohmann::json& s) {
        return IngressIps(s).size() == 2 && !Announcer(s, false).empty() &&
               !Announcer(s, true).empty();
      },
      Ms(20000), "two addresses and their announcing nodes");
}

bool WaitEvents(const Lab& lab, const std::string& ns, const std::string& name,
                const std::string& reason, size_t count, Ms timeout) {
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline && !Stopping()) {
    auto ev = GetJson(lab, {"get", "events", "-n", ns});
    size_t n = 0;
    if (ev) {
      const Json* items = Find(*ev, {"items"});
      if (items != nullptr && items->is_array()) {
        for (const auto& e : *items) {
          if (FindString(e, {"reason"}) == reason &&
              FindString(e, {"involvedObject", "name"}) == name) {
            ++n;
          }
        }
      }
    }
    if (n >= count) return true;
    std::this_thread::sleep_for(Ms(50));
  }
  return false;
}

std::string Annotation(const nlohmann::json& obj, const std::string& key) {
  return FindString(obj, {"metadata", "annotations", key}).value_or("");
}

std::vector<std::string> IngressIps(const nlohmann::json& svc) {
  std::vector<std::string> out;
  const Json* ingress = Find(svc, {"status", "loadBalancer", "ingress"});
  if (ingress == nullptr || !ingress->is_array()) return out;
  for (const auto& i : *ingress) {
    if (auto ip = FindString(i, {"ip"})) out.push_back(*ip);
  }
  return out;
}

std::string Announcer(const nlohmann::json& svc, bool v6) {
  std::string a = Annotation(svc, v6 ? "purelb.io/announcing-IPv6" : "purelb.io/announcing-IPv4");
  return a.substr(0, a.find(','));
}

Result<ProbeResult> ProbeFromClient(const Lab& lab, const std::string& ip, Ms timeout) {
  return InNetns(lab.topology().ClientNetns(), [&] { return ProbeOnce(ip, 80, timeout); });
}

}  // namespace pylon::lab
