// Pure HTTP/1.1 request parsing (no I/O), so it can be unit-tested and fuzzed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/http.h"

namespace pylon::http {

struct Limits {
  std::size_t max_header_bytes = 64 * 1024;       // request line + headers
  std::size_t max_body_bytes = 16 * 1024 * 1024;  // after de-chunking
};

enum class ParseState { kNeedMore, kComplete, kError };

struct ParseOutcome {
  ParseState state = ParseState::kNeedMore;
  std::size_t consumed = 0;  // bytes of the buffer forming the request (kComplete only)
  int error_status = 0;      // 400, 413, 431, 501, 505 (kError only)
  std::string error;         // human-readable reason (kError only)
};

// Parses one request from the start of `buffer`. On kComplete `*out` holds the request and
// `consumed` says how many bytes to drop before parsing the next (pipelined) request.
// Supports Content-Length and chunked request bodies; rejects both together, bad chunk sizes,
// obsolete line folding and oversize messages.
ParseOutcome ParseRequest(std::string_view buffer, const Limits& limits, Request* out);

// Percent-decoding; with plus_is_space, '+' becomes ' ' (query strings). Returns false on a
// malformed escape.
bool UrlDecode(std::string_view in, bool plus_is_space, std::string* out);
// Splits "a=1&b=x%20y" into decoded pairs. Returns false on a malformed escape.
bool ParseQuery(std::string_view raw, HeaderList* out);
// Percent-encodes everything except RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view in);

}  // namespace pylon::http
