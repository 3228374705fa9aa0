#include "k8s/api_status.h"

namespace pylon::k8s {
namespace {

Status OptString(const Json& obj, const char* key, std::string* out, const char* where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Ok();
  if (!it->is_string()) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string("Status: ") + where + key + " is not a string");
  }
  *out = it->get<std::string>();
  return Ok();
}

}  // namespace

Result<ApiStatus> ParseApiStatus(const Json& object) {
  if (!object.is_object()) return Fail(ErrorCode::kInvalidArgument, "Status: not a JSON object");
  ApiStatus st;
  std::string kind;
  if (auto s = OptString(object, "kind", &kind, ""); !s) return Fail(s.error());
  auto code = object.find("code");
  if (kind != "Status" && !(kind.empty() && code != object.end())) {
    return Fail(ErrorCode::kInvalidArgument, "not a Status object (kind \"" + kind + "\")");
  }
  for (auto [key, field] : {std::pair{"status", &st.status}, std::pair{"message", &st.message},
                            std::pair{"reason", &st.reason}}) {
    if (auto s = OptString(object, key, field, ""); !s) return Fail(s.error());
  }
  if (code != object.end() && !code->is_null()) {
    if (!code->is_number_integer()) {
      return Fail(ErrorCode::kInvalidArgument, "Status: code is not an integer");
    }
    st.code = code->get<int64_t>();
  }
  auto details = object.find("details");
  if (details != object.end() && !details->is_null()) {
    if (!details->is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "Status: details is not an object");
    }
    if (auto s = OptString(*details, "name", &st.details_name, "details."); !s) {
      return Fail(s.error());
    }
    if (auto s = OptString(*details, "kind", &st.details_kind, "details."); !s) {
      return Fail(s.error());
    }
    if (auto ra = details->find("retryAfterSeconds"); ra != details->end() && !ra->is_null()) {
      if (!ra->is_number_integer()) {
        return Fail(ErrorCode::kInvalidArgument, "Status: details.retryAfterSeconds not integer");
      }
      st.retry_after_seconds = ra->get<int64_t>();
    }
    if (auto causes = details->find("causes"); causes != details->end() && !causes->is_null()) {
      if (!causes->is_array()) {
        return Fail(ErrorCode::kInvalidArgument, "Status: details.causes is not a list");
      }
      for (const auto& c : *causes) {
        if (!c.is_object()) {
          return Fail(ErrorCode::kInvalidArgument, "Status: a cause is not an object");
        }
        StatusCause cause;
        for (auto [key, field] :
             {std::pair{"reason", &cause.reason}, std::pair{"message", &cause.message},
              std::pair{"field", &cause.field}}) {
          if (auto s = OptString(c, key, field, "details.causes[]."); !s) return Fail(s.error());
        }
        st.causes.push_back(std::move(cause));
      }
    }
  }
  return st;
}

ErrorCode ErrorCodeFor(int64_t http_code, std::string_view reason) {
  switch (http_code) {
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? ErrorCode::kAlreadyExists : ErrorCode::kConflict;
    case 410:
      return ErrorCode::kGone;
    case 400:
    case 422:
      return ErrorCode::kInvalidArgument;
    case 401:
    case 403:
      return ErrorCode::kPermission;
    case 405:
    case 406:
    case 415:
      return ErrorCode::kUnsupported;
    default:
      break;
  }
  if (reason == "Expired" || reason == "Gone") return ErrorCode::kGone;
  return ErrorCode::kUnavailable;
}

Error ErrorFromStatus(const ApiStatus& st, std::string_view context) {
  std::string msg(context);
  if (!msg.empty()) msg += ": ";
  msg += st.message.empty() ? "(no message)" : st.message;
  msg += " (HTTP " + std::to_string(st.code);
  if (!st.reason.empty()) msg += " " + st.reason;
  msg += ")";
  // A multi-cause message already lists the causes; add fields only when the message lacks them.
  for (const auto& c : st.causes) {
    if (!c.field.empty() && st.message.find(c.field) == std::string::npos) {
      msg += "; " + c.field + ": " + c.message;
    }
  }
  Error e(ErrorCodeFor(st.code, st.reason), std::move(msg));
  if (st.retry_after_seconds && *st.retry_after_seconds > 0) {
    e.set_retry_after(std::chrono::seconds(*st.retry_after_seconds));
  }
  return e;
}

Error ErrorFromHttp(int64_t http_code, std::string_view body,
                    std::optional<std::chrono::seconds> retry_after, std::string_view context) {
  std::optional<Error> err;
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    if (auto st = ParseApiStatus(j)) {
      if (st->code == 0) st->code = http_code;
      // The HTTP status is authoritative for the category; the body supplies text and reason.
      st->code = http_code;
      err = ErrorFromStatus(*st, context);
    }
  }
  if (!err) {
    std::string text(body.substr(0, 200));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    std::string msg(context);
    if (!msg.empty()) msg += ": ";
    msg += "HTTP " + std::to_string(http_code);
    if (!text.empty()) msg += ": " + text;
    err = Error(ErrorCodeFor(http_code, ""), std::move(msg));
  }
  if (retry_after && retry_after->count() > 0) err->set_retry_after(*retry_after);
  return *err;
}

}  // namespace pylon::k8s
