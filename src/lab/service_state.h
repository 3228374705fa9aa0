// What the lab's commands (demo, failover) apply and read of a LoadBalancer Service: the dual-stack
// example of the demo, the Service as kubectl shows it, its addresses and announcing nodes, and
// waits on them. The waits poll and end early once the stop flag (command.h) is set.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "lab/lab.h"
#include "lab/responder.h"

namespace pylon::lab {

// The ServiceGroup "localdual" (seed 000's example, in documentation ranges) and a
// RequireDualStack LoadBalancer Service in it, "kuard-svc-dual-remote" in namespace default.
extern const char* const kDemoGroup;
extern const char* const kDemoService;
inline constexpr const char* kDemoServiceName = "kuard-svc-dual-remote";

// `kubectl <args> -o json`, parsed.
Result<nlohmann::json> GetJson(const Lab& lab, const std::vector<std::string>& args);

// Polls the Service every 20 ms until `pred(service)` holds and returns it; else an error "timed
// out waiting for <what>" after `timeout` (or once stopping).
Result<nlohmann::json> WaitService(const Lab& lab, const std::string& ns, const std::string& name,
                                   const std::function<bool(const nlohmann::json&)>& pred,
                                   std::chrono::milliseconds timeout, const std::string& what);

// Waits (20 s at most) until the Service in namespace default has two addresses and an announcing
// node for each family.
Result<nlohmann::json> WaitDualStackAnnounced(const Lab& lab, const std::string& name);

// Waits up to `timeout` until the Service's events of `reason` (e.g. AnnouncingLocal) number at
// least `count`.
bool WaitEvents(const Lab& lab, const std::string& ns, const std::string& name,
                const std::string& reason, size_t count, std::chrono::milliseconds timeout);

// metadata.annotations[key] of an object; empty when absent.
std::string Annotation(const nlohmann::json& obj, const std::string& key);
// status.loadBalancer.ingress[].ip of a Service.
std::vector<std::string> IngressIps(const nlohmann::json& svc);
// The announcing node of a family ("node2,eth0" → "node2"); empty if none yet.
std::string Announcer(const nlohmann::json& svc, bool v6);

// One HTTP GET of http://<ip>:80/ from the lab's client.
Result<ProbeResult> ProbeFromClient(const Lab& lab, const std::string& ip,
                                    std::chrono::milliseconds timeout);

}  // namespace pylon::lab
