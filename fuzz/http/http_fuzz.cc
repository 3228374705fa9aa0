// libFuzzer target: arbitrary bytes as what a client sends on one connection, parsed the way the
// server does (http/server.cc: parse, drop `consumed` bytes, parse the next pipelined request),
// once with the default limits and once with small ones so the 413/431 paths run.
// Besides crashes and sanitizer reports, it traps when an invariant breaks:
//  - an error carries one of the documented statuses and a reason;
//  - a complete request consumes at least one byte and no more than it was given, and has a
//    token method, an HTTP/1.0 or 1.1 version, a target starting with '/' and lower-case header
//    names;
//  - prefix stability (the server reparses as TCP segments arrive): a complete request parses
//    the same from exactly its own bytes, and every shorter prefix of those bytes asks for more
//    (never an error, never a different request);
//  - UrlDecode(UrlEncode(x)) == x.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/parser.h"

namespace {

using pylon::http::Limits;
using pylon::http::ParseOutcome;
using pylon::http::ParseRequest;
using pylon::http::ParseState;
using pylon::http::Request;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool SameRequest(const Request& a, const Request& b) {
  return a.method == b.method && a.version == b.version && a.target == b.target &&
         a.path == b.path && a.raw_query == b.raw_query && a.query == b.query &&
         a.headers == b.headers && a.body == b.body;
}

void CheckWellFormed(const Request& r) {
  Check(!r.method.empty());
  Check(r.version == "HTTP/1.1" || r.version == "HTTP/1.0");
  Check(!r.target.empty() && r.target.front() == '/');
  for (const auto& [name, value] : r.headers) {
    Check(!name.empty());
    for (char c : name) Check(!(c >= 'A' && c <= 'Z'));
  }
}

// One request from the start of `buf`; returns the bytes consumed, 0 when there is none.
std::size_t ParseOne(std::string_view buf, const Limits& limits, std::uint8_t salt) {
  Request req;
  ParseOutcome o = ParseRequest(buf, limits, &req);
  if (o.state == ParseState::kError) {
    Check(o.error_status == 400 || o.error_status == 413 || o.error_status == 431 ||
          o.error_status == 501 || o.error_status == 505);
    Check(!o.error.empty());
    return 0;
  }
  if (o.state == ParseState::kNeedMore) return 0;
  Check(o.consumed > 0 && o.consumed <= buf.size());
  CheckWellFormed(req);

  std::string_view own = buf.substr(0, o.consumed);
  Request again;
  ParseOutcome exact = ParseRequest(own, limits, &again);
  Check(exact.state == ParseState::kComplete && exact.consumed == o.consumed);
  Check(SameRequest(req, again));
  // Shorter prefixes: the last byte missing, and one cut chosen by the input.
  for (std::size_t cut : {o.consumed - 1, (o.consumed * salt) / 256}) {
    if (cut >= o.consumed) continue;
    Request partial;
    Check(ParseRequest(own.substr(0, cut), limits, &partial).state == ParseState::kNeedMore);
  }
  return o.consumed;
}

void ParseStream(std::string_view buf, const Limits& limits, std::uint8_t salt) {
  for (int i = 0; i < 64 && !buf.empty(); ++i) {  // pipelined requests, as the server loops
    std::size_t n = ParseOne(buf, limits, salt);
    if (n == 0) return;
    buf.remove_prefix(n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view buf(reinterpret_cast<const char*>(data), size);
  const std::uint8_t salt = size > 0 ? data[size - 1] : 0;
  ParseStream(buf, Limits{}, salt);
  Limits small;
  small.max_header_bytes = 256;
  small.max_body_bytes = 64;
  ParseStream(buf, small, salt);

  std::string decoded;
  Check(pylon::http::UrlDecode(pylon::http::UrlEncode(buf), false, &decoded) && decoded == buf);
  pylon::http::HeaderList query;
  (void)pylon::http::ParseQuery(buf, &query);  // either answer is fine; only memory safety counts
  return 0;
}
