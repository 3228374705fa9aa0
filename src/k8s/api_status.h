// The meta/v1 Status document that every non-2xx reply (and an in-stream watch ERROR) carries, and
// its mapping onto Pylon's ErrorCode. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/object.h"

namespace pylon::k8s {

struct StatusCause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, ...
  std::string message;
  std::string field;
};

struct ApiStatus {
  std::string status;  // "Success" | "Failure"
  std::string message;
  std::string reason;  // NotFound, Conflict, AlreadyExists, Expired, Gone, Invalid, ...
  int64_t code = 0;    // HTTP status code
  std::string details_name;
  std::string details_kind;
  std::vector<StatusCause> causes;
  std::optional<int64_t> retry_after_seconds;
};

// Parses a Status object. Requires kind "Status" (absent kind is tolerated when `code` is present);
// every other field is optional but must have the right type.
Result<ApiStatus> ParseApiStatus(const Json& object);

// HTTP code + Status reason → ErrorCode:
// 404 kNotFound; 409 AlreadyExists → kAlreadyExists, other 409 → kConflict; 410 kGone;
// 400/422 kInvalidArgument; 401/403 kPermission; 405/406/415 kUnsupported;
// 429, 5xx and anything unknown → kUnavailable.
ErrorCode ErrorCodeFor(int64_t http_code, std::string_view reason);

// Turns a Status into an Error "<context>: <message> (HTTP <code> <reason>)", keeping retry-after.
Error ErrorFromStatus(const ApiStatus& status, std::string_view context);

// Turns any non-2xx reply into an Error: the body is parsed as a Status when possible, otherwise
// its start is quoted. `retry_after` is the Retry-After header (seconds) if the reply had one.
Error ErrorFromHttp(int64_t http_code, std::string_view body,
                    std::optional<std::chrono::seconds> retry_after, std::string_view context);

}  // namespace pylon::k8s
