#include "common/result.h"

#include <cstring>

namespace pylon {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kConflict:
      return "Conflict";
    case ErrorCode::kOutOfRange:
      return "OutOfRange";
    case ErrorCode::kExhausted:
      return "Exhausted";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kGone:
      return "Gone";
    case ErrorCode::kPermission:
      return "Permission";
    case ErrorCode::kUnsupported:
      return "Unsupported";
    case ErrorCode::kInternal:
      return "Internal";
    case ErrorCode::kSystem:
      return "System";
  }
  return "Unknown";
}

Error Error::FromErrno(int err, const std::string& context) {
  ErrorCode code = ErrorCode::kSystem;
  if (err == EPERM || err == EACCES) code = ErrorCode::kPermission;
  if (err == EEXIST) code = ErrorCode::kAlreadyExists;
  if (err == ENOENT || err == ENODEV || err == EADDRNOTAVAIL) code = ErrorCode::kNotFound;
  if (err == EOPNOTSUPP) code = ErrorCode::kUnsupported;
  Error e(code, context + ": " + std::strerror(err));
  e.errno_ = err;
  return e;
}

Error Error::Wrap(const std::string& context) const {
  Error e = *this;
  e.message_ = context + ": " + message_;
  return e;
}

}  // namespace pylon
