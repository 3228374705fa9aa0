#include "apiserver/api_error.h"

namespace pylon::apiserver {

namespace {
FieldError MakeFieldError(FieldError::Type t, std::string field, Json value, std::string detail) {
  FieldError e;
  e.type = t;
  e.field = std::move(field);
  e.value = std::move(value);
  e.detail = std::move(detail);
  return e;
}
}  // namespace

FieldError FieldError::Invalid(std::string field, Json value, std::string detail) {
  return MakeFieldError(Type::kInvalid, std::move(field), std::move(value), std::move(detail));
}
FieldError FieldError::Required(std::string field, std::string detail) {
  return MakeFieldError(Type::kRequired, std::move(field), nullptr, std::move(detail));
}
FieldError FieldError::Forbidden(std::string field, std::string detail) {
  return MakeFieldError(Type::kForbidden, std::move(field), nullptr, std::move(detail));
}
FieldError FieldError::NotSupported(std::string field, Json value, std::vector<std::string> valid) {
  FieldError e = MakeFieldError(Type::kNotSupported, std::move(field), std::move(value), "");
  e.supported = std::move(valid);
  return e;
}
FieldError FieldError::Duplicate(std::string field, Json value) {
  return MakeFieldError(Type::kDuplicate, std::move(field), std::move(value), "");
}
FieldError FieldError::NotFound(std::string field, Json value) {
  return MakeFieldError(Type::kNotFound, std::move(field), std::move(value), "");
}

const char* FieldError::Reason() const {
  switch (type) {
    case Type::kInvalid:
      return "FieldValueInvalid";
    case Type::kRequired:
      return "FieldValueRequired";
    case Type::kForbidden:
      return "FieldValueForbidden";
    case Type::kNotSupported:
      return "FieldValueNotSupported";
    case Type::kDuplicate:
      return "FieldValueDuplicate";
    case Type::kNotFound:
      return "FieldValueNotFound";
  }
  return "FieldValueInvalid";
}

std::string FormatErrorValue(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) return Dump(v);
  if (v.is_array()) {
    bool all_strings = true;
    for (const auto& e : v) all_strings = all_strings && e.is_string();
    if (all_strings) {
      std::string out = "[]string{";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Dump(v[i]);
      return out + "}";
    }
  }
  return Dump(v);
}

std::string FieldError::Body() const {
  switch (type) {
    case Type::kInvalid:
      return "Invalid value: " + (raw_value.empty() ? FormatErrorValue(value) : raw_value) +
             (detail.empty() ? "" : ": " + detail);
    case Type::kRequired:
      return "Required value" + (detail.empty() ? "" : ": " + detail);
    case Type::kForbidden:
      return "Forbidden" + (detail.empty() ? "" : ": " + detail);
    case Type::kNotSupported: {
      std::string out = "Unsupported value: " + FormatErrorValue(value);
      if (!supported.empty()) {
        out += ": supported values: ";
        for (std::size_t i = 0; i < supported.size(); ++i)
          out += (i ? ", " : "") + Dump(Json(supported[i]));
      }
      return out;
    }
    case Type::kDuplicate:
      return "Duplicate value: " + FormatErrorValue(value);
    case Type::kNotFound:
      return "Not found: " + FormatErrorValue(value);
  }
  return detail;
}

Json ApiError::ToStatus() const {
  Json s = Json::object();
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = Json::object();
  s["status"] = "Failure";
  if (!message.empty()) s["message"] = message;
  if (!reason.empty()) s["reason"] = reason;
  if (has_details) {
    Json d = Json::object();
    if (!name.empty()) d["name"] = name;
    if (!group.empty()) d["group"] = group;
    if (!kind.empty()) d["kind"] = kind;
    if (!uid.empty()) d["uid"] = uid;
    if (!causes.empty()) {
      Json cs = Json::array();
      for (const auto& c : causes) {
        Json cj = Json::object();
        if (!c.reason.empty()) cj["reason"] = c.reason;
        if (!c.message.empty()) cj["message"] = c.message;
        if (!c.field.empty()) cj["field"] = c.field;
        cs.push_back(std::move(cj));
      }
      d["causes"] = std::move(cs);
    }
    if (retry_after_seconds > 0) d["retryAfterSeconds"] = retry_after_seconds;
    s["details"] = std::move(d);
  }
  s["code"] = code;
  return s;
}

namespace {
ApiError Make(int code, std::string reason, std::string message) {
  ApiError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}
ApiError WithDetails(ApiError e, const GroupResource& gr, const std::string& name) {
  e.has_details = true;
  e.name = name;
  e.group = gr.group;
  e.kind = gr.resource;
  return e;
}
}  // namespace

ApiError NotFoundError(const GroupResource& gr, const std::string& name) {
  return WithDetails(Make(404, "NotFound", gr.String() + " \"" + name + "\" not found"), gr, name);
}

ApiError AlreadyExistsError(const GroupResource& gr, const std::string& name) {
  return WithDetails(Make(409, "AlreadyExists", gr.String() + " \"" + name + "\" already exists"),
                     gr, name);
}

ApiError ConflictError(const GroupResource& gr, const std::string& name,
                       const std::string& detail) {
  return WithDetails(
      Make(409, "Conflict",
           "Operation cannot be fulfilled on " + gr.String() + " \"" + name + "\": " + detail),
      gr, name);
}

ApiError StaleConflictError(const GroupResource& gr, const std::string& name) {
  return ConflictError(gr, name,
                       "the object has been modified; please apply your changes to the latest "
                       "version and try again");
}

ApiError InvalidError(const std::string& group, const std::string& kind, const std::string& name,
                      const FieldErrors& errors) {
  std::string qualified = group.empty() ? kind : kind + "." + group;
  std::string msg = qualified + " \"" + name + "\" is invalid: ";
  if (errors.size() == 1) {
    msg += errors[0].field + ": " + errors[0].Body();
  } else {
    msg += "[";
    for (std::size_t i = 0; i < errors.size(); ++i)
      msg += (i ? ", " : "") + errors[i].field + ": " + errors[i].Body();
    msg += "]";
  }
  ApiError e = Make(422, "Invalid", msg);
  e.has_details = true;
  e.name = name;
  e.group = group;
  e.kind = kind;
  for (const auto& fe : errors) e.causes.push_back({fe.Reason(), fe.Body(), fe.field});
  return e;
}

ApiError BadRequestError(const std::string& message) { return Make(400, "BadRequest", message); }

ApiError UnsupportedMediaTypeError(const std::vector<std::string>& accepted) {
  std::string msg =
      "the body of the request was in an unknown format - accepted media types include: ";
  for (std::size_t i = 0; i < accepted.size(); ++i) msg += (i ? ", " : "") + accepted[i];
  return Make(415, "UnsupportedMediaType", msg);
}

ApiError ExpiredError(const std::string& message) { return Make(410, "Expired", message); }

ApiError TooLargeResourceVersionError(unsigned long long requested, unsigned long long current) {
  ApiError e = Make(504, "Timeout",
                    "Too large resource version: " + std::to_string(requested) +
                        ", current: " + std::to_string(current));
  e.has_details = true;
  e.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  e.retry_after_seconds = 1;
  return e;
}

ApiError MethodNotAllowedError() {
  ApiError e = Make(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource");
  e.has_details = true;
  return e;
}

ApiError UnknownPathError() {
  ApiError e = Make(404, "NotFound", "the server could not find the requested resource");
  e.has_details = true;
  return e;
}

ApiError TooManyRequestsError(int retry_after_seconds) {
  ApiError e = Make(429, "TooManyRequests", "Too many requests, please try again later.");
  e.has_details = true;
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

ApiError InternalError(const std::string& message) {
  ApiError e = Make(500, "InternalError", "Internal error occurred: " + message);
  e.has_details = true;
  e.causes.push_back({"", message, ""});
  return e;
}

ApiError TimeoutError(const std::string& message) { return Make(504, "Timeout", message); }

}  // namespace pylon::apiserver
