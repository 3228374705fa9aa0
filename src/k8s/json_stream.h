// Splits a byte stream into top-level JSON values (a watch body: one JSON object per event). The
// split is by brace depth, aware of strings and escapes, never by line: values may span lines or
// chunks, and several may share a chunk. Pure; not thread-safe (one scanner per stream).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pylon::k8s {

class JsonStreamScanner {
 public:
  // Values larger than this are an error (protects against a server that never closes a brace).
  explicit JsonStreamScanner(size_t max_value_bytes = 64u << 20) : max_(max_value_bytes) {}

  // Appends `chunk` and appends every value it completes to `out` (as text). Fails on bytes that
  // cannot start a value at top level (only objects and arrays are accepted) or an oversized value;
  // after a failure the scanner stays failed.
  Status Feed(std::string_view chunk, std::vector<std::string>* out);

  // True when no partial value is buffered (only whitespace seen since the last value).
  bool Idle() const { return depth_ == 0 && buf_.empty(); }
  size_t buffered_bytes() const { return buf_.size(); }

 private:
  size_t max_;
  std::string buf_;  // bytes of the value in progress (starts at its opening bracket)
  int depth_ = 0;    // bracket depth inside the current value
  bool in_string_ = false;
  bool escape_ = false;
  bool failed_ = false;
};

}  // namespace pylon::k8s
