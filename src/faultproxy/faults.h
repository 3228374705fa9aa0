// Fault decisions of `pylon-dev fault-proxy`, switchable at run time through its control API (the
// one the tests have always used, docs/fault-proxy.md):
//   POST /pylon/faults   {"error_rate":0.2,"error_code":500|429,"conflict_rate":0.1,
//                         "latency_ms":50,"paths":"regex (optional)"}   (missing keys: 0 / none)
//   GET  /pylon/faults   the current settings
//   POST /pylon/faults/cut-watches   close every open proxied watch now
//   POST /pylon/faults/compact       compact etcd; resuming watchers get 410 Gone
// Faults apply to resource requests only, never to /pylon/*, discovery, /version, /openapi or
// health. error_code 429 answers carry Retry-After: 1. conflict_rate applies to writes (create,
// update, patch, delete) and answers the 409 Conflict a stale update gets. Every error body is the
// metav1.Status kube-apiserver itself writes for that error. Pure (no I/O): unit-tested alone.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/json.h"
#include "common/mutex.h"
#include "common/result.h"

namespace pylon::faultproxy {

// Status bodies are written byte for byte as kube-apiserver writes them, in its key order (tests
// compare the text), so they are built as ordered_json; everything else is the common Json.
using OrderedJson = nlohmann::ordered_json;

struct FaultSettings {
  double error_rate = 0;
  int error_code = 500;
  double conflict_rate = 0;
  int latency_ms = 0;
  std::string paths;  // ECMAScript regex searched in the request path; "" = all

  static Result<FaultSettings> FromJson(const Json& j);
  Json ToJson() const;
};

// What a request is, as far as faults care (from its method, path and query).
struct RequestInfo {
  std::string path;     // as given (the `paths` regex is searched in it)
  bool exempt = false;  // /pylon/*, discovery, /version, /openapi, health, metrics
  bool is_write = false;
  bool is_watch = false;
  std::string group;     // "" for core
  std::string resource;  // "services"
  std::string sub;       // "status", ...
  std::string ns;
  std::string name;
};

// `path` is the decoded path (no query); `watch_param` the value of the `watch` query parameter.
RequestInfo ClassifyRequest(std::string_view method, std::string_view path,
                            std::string_view watch_param);

// An injected error: the HTTP status, the Status body, and Retry-After seconds (0: none).
struct InjectedError {
  int code = 500;
  std::string body;
  int retry_after_seconds = 0;
};

struct FaultDecision {
  int latency_ms = 0;
  std::optional<InjectedError> error;
};

// The Status bodies kube-apiserver writes (apimachinery pkg/api/errors), byte for byte.
std::string StatusBody(int code, std::string_view reason, std::string_view message,
                       const OrderedJson& details = nullptr);
InjectedError InternalErrorStatus(std::string_view message);
InjectedError TooManyRequestsStatus(int retry_after_seconds);
// The stale-resourceVersion 409 of an update: "Operation cannot be fulfilled on services \"x\"".
InjectedError ConflictStatus(std::string_view group, std::string_view resource,
                             std::string_view name);
// The in-stream watch ERROR event of a watch from a compacted resourceVersion, one line.
std::string ExpiredWatchEvent(uint64_t requested_rv, uint64_t oldest_rv);

class Faults {
 public:
  explicit Faults(uint64_t seed = std::random_device{}()) : rng_(seed) {}
  Status Set(const FaultSettings& s);
  FaultSettings Get() const;
  // req.name is the object's name when known (the 409 body carries it).
  FaultDecision Decide(const RequestInfo& req);

 private:
  mutable Mutex mu_;
  FaultSettings settings_ PYLON_GUARDED_BY(mu_);
  std::optional<std::regex> re_ PYLON_GUARDED_BY(mu_);
  std::mt19937_64 rng_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon::faultproxy
