#include "faultproxy/faults.h"

#include <vector>

namespace pylon::faultproxy {
namespace {

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

Result<FaultSettings> FaultSettings::FromJson(const Json& j) {
  if (!j.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "fault settings must be a JSON object");
  }
  FaultSettings s;
  auto find = [&](const char* k) -> const Json* {
    auto it = j.find(k);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  auto rate = [&](const char* k, double* out) -> Status {
    const Json* v = find(k);
    if (v == nullptr) return Ok();
    if (!v->is_number() || v->get<double>() < 0 || v->get<double>() > 1) {
      return Fail(ErrorCode::kInvalidArgument, std::string(k) + " must be a number in [0,1]");
    }
    *out = v->get<double>();
    return Ok();
  };
  if (auto st = rate("error_rate", &s.error_rate); !st) return Fail(st.error());
  if (auto st = rate("conflict_rate", &s.conflict_rate); !st) return Fail(st.error());
  if (const Json* v = find("error_code")) {
    if (!v->is_number_integer() || v->get<int>() < 400 || v->get<int>() > 599) {
      return Fail(ErrorCode::kInvalidArgument,
                  "error_code must be an HTTP error status (e.g. 500 or 429)");
    }
    s.error_code = v->get<int>();
  }
  if (const Json* v = find("latency_ms")) {
    if (!v->is_number_integer() || v->get<int>() < 0 || v->get<int>() > 60000) {
      return Fail(ErrorCode::kInvalidArgument, "latency_ms must be an integer in [0,60000]");
    }
    s.latency_ms = v->get<int>();
  }
  if (const Json* v = find("paths")) {
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

RequestInfo ClassifyRequest(std::string_view method, std::string_view path,
                            std::string_view watch_param) {
  RequestInfo info;
  info.path = std::string(path);
  info.exempt = true;
  std::vector<std::string_view> segs = Split(path);
  std::vector<std::string_view> rest;
  if (segs.size() >= 3 && segs[0] == "api") {
    rest.assign(segs.begin() + 2, segs.end());
  } else if (segs.size() >= 4 && segs[0] == "apis") {
    info.group = std::string(segs[1]);
    rest.assign(segs.begin() + 3, segs.end());
  } else {
    // /pylon/*, /api, /api/v1, /apis[/g[/v]] (discovery), /version, /openapi/*, /healthz,
    // /readyz, /livez, /metrics, /.well-known/*: never faulted.
    return info;
  }
  if (!rest.empty() && rest[0] == "watch") {
    info.is_watch = true;
    rest.erase(rest.begin());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize") {
    info.ns = std::string(rest[1]);
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty()) return info;
  info.exempt = false;
  info.resource = std::string(rest[0]);
  if (rest.size() > 1) info.name = std::string(rest[1]);
  if (rest.size() > 2) info.sub = std::string(rest[2]);
  if (watch_param == "true" || watch_param == "1") info.is_watch = true;
  info.is_write = method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
  return info;
}

std::string StatusBody(int code, std::string_view reason, std::string_view message,
                       const OrderedJson& details) {
  OrderedJson j;
  j["kind"] = "Status";
  j["apiVersion"] = "v1";
  j["metadata"] = OrderedJson::object();
  j["status"] = "Failure";
  j["message"] = message;
  j["reason"] = reason;
  if (!details.is_null()) j["details"] = details;
  j["code"] = code;
  return j.dump();
}

InjectedError InternalErrorStatus(std::string_view message) {
  OrderedJson cause;
  cause["message"] = message;
  OrderedJson details;
  details["causes"] = OrderedJson::array({cause});
  return {
      500,
      StatusBody(500, "InternalError", "Internal error occurred: " + std::string(message), details),
      0};
}

InjectedError TooManyRequestsStatus(int retry_after_seconds) {
  OrderedJson details;
  details["retryAfterSeconds"] = retry_after_seconds;
  return {429,
          StatusBody(429, "TooManyRequests", "Too many requests, please try again later.", details),
          retry_after_seconds};
}

InjectedError ConflictStatus(std::string_view group, std::string_view resource,
                             std::string_view name) {
  std::string gr(resource);
  if (!group.empty()) gr += "." + std::string(group);
  OrderedJson details;
  details["name"] = name;
  if (!group.empty()) details["group"] = group;
  details["kind"] = resource;
  return {409,
          StatusBody(409, "Conflict",
                     "Operation cannot be fulfilled on " + gr + " \"" + std::string(name) +
                         "\": the object has been modified; please apply your changes to the "
                         "latest version and try again",
                     details),
          0};
}

std::string ExpiredWatchEvent(uint64_t requested_rv, uint64_t oldest_rv) {
  OrderedJson ev;
  ev["type"] = "ERROR";
  ev["object"] =
      OrderedJson::parse(StatusBody(410, "Expired",
                                    "too old resource version: " + std::to_string(requested_rv) +
                                        " (" + std::to_string(oldest_rv) + ")"));
  return ev.dump() + "\n";
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
  MutexLock lock(mu_);
  settings_ = s;
  re_ = std::move(re);
  return Ok();
}

FaultSettings Faults::Get() const {
  MutexLock lock(mu_);
  return settings_;
}

FaultDecision Faults::Decide(const RequestInfo& req) {
  FaultDecision d;
  if (req.exempt) return d;
  MutexLock lock(mu_);
  if (re_ && !std::regex_search(req.path, *re_)) return d;
  d.latency_ms = settings_.latency_ms;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (settings_.error_rate > 0 && u(rng_) < settings_.error_rate) {
    switch (settings_.error_code) {
      case 429:
        d.error = TooManyRequestsStatus(1);
        break;
      case 500:
        d.error = InternalErrorStatus("injected fault");
        break;
      case 503:
        d.error = InjectedError{503, StatusBody(503, "ServiceUnavailable", "injected fault"), 0};
        break;
      case 504:
        d.error = InjectedError{504, StatusBody(504, "Timeout", "injected fault"), 0};
        break;
      default:
        d.error =
            InjectedError{settings_.error_code,
                          StatusBody(settings_.error_code, "InternalError", "injected fault"), 0};
    }
    return d;
  }
  if (req.is_write && settings_.conflict_rate > 0 && u(rng_) < settings_.conflict_rate) {
    d.error = ConflictStatus(req.group, req.resource, req.name);
  }
  return d;
}

}  // namespace pylon::faultproxy
