// Kubernetes API errors: the metav1.Status bodies the real kube-apiserver writes, byte for byte
// in key order (apimachinery pkg/api/errors and pkg/util/validation/field). Store operations return
// ApiResult<T>: the Status carries more than pylon::Error can (reason, details, causes), and it is
// turned into an HTTP reply at the handler edge.
#pragma once

#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "apiserver/json_util.h"

namespace pylon::apiserver {

// A field.Error: one cause of a 422.
struct FieldError {
  enum class Type { kInvalid, kRequired, kForbidden, kNotSupported, kDuplicate, kNotFound };
  Type type = Type::kInvalid;
  std::string field;      // "spec.ports[0].protocol"
  Json value;             // the offending value (null when none)
  std::string raw_value;  // when set, printed verbatim instead of `value` (e.g. "0x0")
  std::string detail;
  std::vector<std::string> supported;  // kNotSupported only

  static FieldError Invalid(std::string field, Json value, std::string detail);
  static FieldError Required(std::string field, std::string detail = "");
  static FieldError Forbidden(std::string field, std::string detail);
  static FieldError NotSupported(std::string field, Json value, std::vector<std::string> valid);
  static FieldError Duplicate(std::string field, Json value);
  static FieldError NotFound(std::string field, Json value);

  const char* Reason() const;  // "FieldValueInvalid", ...
  std::string Body() const;    // "Invalid value: \"x\": detail"
};
using FieldErrors = std::vector<FieldError>;

// Go's %v-ish rendering of a value inside error messages: strings quoted, []string{...}.
std::string FormatErrorValue(const Json& v);

struct StatusCause {
  std::string reason;
  std::string message;
  std::string field;
};

struct ApiError {
  int code = 500;
  std::string reason;  // "NotFound", "Conflict", ...
  std::string message;
  bool has_details = false;
  std::string name, group, kind, uid;
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;

  Json ToStatus() const;
};

template <typename T>
using ApiResult = tl::expected<T, ApiError>;
using ApiStatus = tl::expected<void, ApiError>;

inline tl::unexpected<ApiError> Reject(ApiError e) {
  return tl::unexpected<ApiError>(std::move(e));
}

// A group-qualified resource, for messages: "services", "leases.coordination.k8s.io".
struct GroupResource {
  std::string group;
  std::string resource;
  std::string String() const { return group.empty() ? resource : resource + "." + group; }
};

ApiError NotFoundError(const GroupResource& gr, const std::string& name);
ApiError AlreadyExistsError(const GroupResource& gr, const std::string& name);
// "Operation cannot be fulfilled on <gr> \"name\": <detail>".
ApiError ConflictError(const GroupResource& gr, const std::string& name, const std::string& detail);
// The stale-resourceVersion conflict of an update.
ApiError StaleConflictError(const GroupResource& gr, const std::string& name);
// kind is the Kind ("Service"), group its API group ("" for core).
ApiError InvalidError(const std::string& group, const std::string& kind, const std::string& name,
                      const FieldErrors& errors);
ApiError BadRequestError(const std::string& message);
ApiError UnsupportedMediaTypeError(const std::vector<std::string>& accepted);
ApiError ExpiredError(const std::string& message);
ApiError TooLargeResourceVersionError(unsigned long long requested, unsigned long long current);
ApiError MethodNotAllowedError();
ApiError UnknownPathError();
ApiError TooManyRequestsError(int retry_after_seconds);
ApiError InternalError(const std::string& message);
ApiError TimeoutError(const std::string& message);

}  // namespace pylon::apiserver
