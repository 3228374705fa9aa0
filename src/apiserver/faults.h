// Fault injection for the test API server, switchable at run time:
//   POST /pylon/faults   {"error_rate":0.2,"error_code":500|429,"conflict_rate":0.1,
//                         "latency_ms":50,"paths":"regex (optional)"}   (missing keys: 0 / none)
//   GET  /pylon/faults   the current settings
//   POST /pylon/faults/cut-watches   close every open watch now
//   POST /pylon/faults/compact       drop the watch history (resuming watchers get 410)
// Faults apply to resource requests only, never to /pylon/*, discovery, /version or health.
// error_code 429 answers carry Retry-After: 1. conflict_rate applies to writes (create, update,
// patch, delete) and answers the 409 Conflict a stale update gets.
#pragma once

#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <string>

#include "apiserver/api_error.h"
#include "apiserver/json_util.h"
#include "common/result.h"

namespace pylon::apiserver {

struct FaultSettings {
  double error_rate = 0;
  int error_code = 500;
  double conflict_rate = 0;
  int latency_ms = 0;
  std::string paths;  // ECMAScript regex matched against the request path; "" = all

  static Result<FaultSettings> FromJson(const Json& j);
  Json ToJson() const;
};

struct FaultDecision {
  int latency_ms = 0;
  std::optional<ApiError> error;
};

class Faults {
 public:
  Status Set(const FaultSettings& s);
  FaultSettings Get() const;
  // `is_write`: the request is a create/update/patch/delete; `gr`/`name` build the 409 body.
  FaultDecision Decide(const std::string& path, bool is_write, const GroupResource& gr,
                       const std::string& name);

 private:
  mutable std::mutex mu_;
  FaultSettings settings_;
  std::optional<std::regex> re_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace pylon::apiserver
