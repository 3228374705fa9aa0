#include "apiserver/faults.h"

namespace pylon::apiserver {

Result<FaultSettings> FaultSettings::FromJson(const Json& j) {
  if (!j.is_object())
    return Fail(ErrorCode::kInvalidArgument, "fault settings must be a JSON object");
  FaultSettings s;
  auto rate = [&](const char* k, double* out) -> Status {
    const Json* v = Find(j, {k});
    if (!v || v->is_null()) return Ok();
    if (!v->is_number() || v->get<double>() < 0 || v->get<double>() > 1)
      return Fail(ErrorCode::kInvalidArgument, std::string(k) + " must be a number in [0,1]");
    *out = v->get<double>();
    return Ok();
  };
  if (auto st = rate("error_rate", &s.error_rate); !st) return Fail(st.error());
  if (auto st = rate("conflict_rate", &s.conflict_rate); !st) return Fail(st.error());
  if (const Json* v = Find(j, {"error_code"}); v && !v->is_null()) {
    if (!v->is_number_integer() || v->get<int>() < 400 || v->get<int>() > 599)
      return Fail(ErrorCode::kInvalidArgument,
                  "error_code must be an HTTP error status (e.g. 500 or 429)");
    s.error_code = v->get<int>();
  }
  if (const Json* v = Find(j, {"latency_ms"}); v && !v->is_null()) {
    if (!v->is_number_integer() || v->get<int>() < 0 || v->get<int>() > 60000)
      return Fail(ErrorCode::kInvalidArgument, "latency_ms must be an integer in [0,60000]");
    s.latency_ms = v->get<int>();
  }
  if (const Json* v = Find(j, {"paths"}); v && !v->is_null()) {
    if (!v->is_string()) return Fail(ErrorCode::kInvalidArgument, "paths must be a regex string");
    s.paths = v->get<std::string>();
  }
  return s;
}

Json FaultSettings::ToJson() const {
  Json j = Json::object();
  j["error_rate"] = error_rate;
  j["error_code"] = error_code;
  j["conflict_rate"] = conflict_rate;
  j["latency_ms"] = latency_ms;
  j["paths"] = paths;
  return j;
}

Status Faults::Set(const FaultSettings& s) {
  std::optional<std::regex> re;
  if (!s.paths.empty()) {
    try {
      re.emplace(s.paths, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Fail(ErrorCode::kInvalidArgument, std::string("paths: invalid regex: ") + e.what());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  settings_ = s;
  re_ = std::move(re);
  return Ok();
}

FaultSettings Faults::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return settings_;
}

FaultDecision Faults::Decide(const std::string& path, bool is_write, const GroupResource& gr,
                             const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  FaultDecision d;
  if (re_ && !std::regex_search(path, *re_)) return d;
  d.latency_ms = settings_.latency_ms;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (settings_.error_rate > 0 && u(rng_) < settings_.error_rate) {
    if (settings_.error_code == 429) {
      d.error = TooManyRequestsError(1);
    } else if (settings_.error_code == 500) {
      d.error = InternalError("injected fault");
    } else {
      ApiError e;
      e.code = settings_.error_code;
      e.reason = settings_.error_code == 503 ? "ServiceUnavailable" : "InternalError";
      e.message = "injected fault";
      d.error = e;
    }
    return d;
  }
  if (is_write && settings_.conflict_rate > 0 && u(rng_) < settings_.conflict_rate)
    d.error = StaleConflictError(gr, name);
  return d;
}

}  // namespace pylon::apiserver
