// The one error convention of Pylon: functions that can fail return Result<T>, an expected-like
// value holding either T or an Error. Errors carry a category (so callers can branch on the kind
// of failure without parsing text) and a human-readable message with context.
#pragma once

#include <chrono>
#include <string>
#include <system_error>
#include <utility>

#include <tl/expected.hpp>

namespace pylon {

enum class ErrorCode {
  kInvalidArgument,  // malformed input: config, annotation, packet, flag
  kNotFound,         // the object or address does not exist
  kAlreadyExists,    // create of something present
  kConflict,         // optimistic concurrency failure (HTTP 409) or address taken
  kOutOfRange,       // address outside every pool, value out of bounds
  kExhausted,        // no free address left
  kUnavailable,      // transient: network, 5xx, 429, timeouts; retry
  kGone,             // resource version too old (HTTP 410)
  kPermission,       // 401/403, EPERM
  kUnsupported,      // kernel or server lacks a feature (EOPNOTSUPP, 415)
  kInternal,         // a bug: invariant broken
  kSystem,           // an OS call failed; see errno
};

const char* ErrorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  // An OS error: message is "<context>: <strerror(err)>".
  static Error FromErrno(int err, const std::string& context);

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int sys_errno() const { return errno_; }
  // For kUnavailable from a server that said when to come back (HTTP Retry-After, or
  // Status details.retryAfterSeconds); zero when not given.
  std::chrono::milliseconds retry_after() const { return retry_after_; }
  Error& set_retry_after(std::chrono::milliseconds d) {
    retry_after_ = d;
    return *this;
  }

  // Returns a copy whose message is "<context>: <message>".
  Error Wrap(const std::string& context) const;

 private:
  ErrorCode code_;
  std::string message_;
  int errno_ = 0;
  std::chrono::milliseconds retry_after_{0};
};

// tl::expected with [[nodiscard]]: a dropped Result or Status is a compile error (warnings are
// errors). Where dropping one is right, say why beside a (void) cast. Everything else is
// tl::expected's own interface; a tl::expected<T, Error> (from map, and_then, ...) converts.
template <typename T>
class [[nodiscard]] Result : public tl::expected<T, Error> {
 public:
  using Base = tl::expected<T, Error>;
  using Base::Base;
  Result() = default;
  Result(const Base& other) : Base(other) {}
  Result(Base&& other) : Base(std::move(other)) {}
};

using Status = Result<void>;

inline tl::unexpected<Error> Fail(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error(code, std::move(message)));
}
inline tl::unexpected<Error> Fail(Error e) { return tl::unexpected<Error>(std::move(e)); }
inline tl::unexpected<Error> FailErrno(int err, const std::string& context) {
  return tl::unexpected<Error>(Error::FromErrno(err, context));
}
inline Status Ok() { return {}; }

}  // namespace pylon
