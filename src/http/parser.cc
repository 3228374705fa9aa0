#include "http/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "common/text.h"

namespace pylon::http {
namespace {

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

ParseOutcome Error(int status, std::string why) {
  ParseOutcome o;
  o.state = ParseState::kError;
  o.error_status = status;
  o.error = std::move(why);
  return o;
}

// Finds "\r\n" (or a bare "\n", tolerated as clients do) starting at pos; returns the index of
// the line end and sets *next to the first byte after the terminator.
std::size_t FindLineEnd(std::string_view buf, std::size_t pos, std::size_t* next) {
  std::size_t nl = buf.find('\n', pos);
  if (nl == std::string_view::npos) return nl;
  *next = nl + 1;
  return (nl > pos && buf[nl - 1] == '\r') ? nl - 1 : nl;
}

// The end of the header section: the first empty line after `pos`, where every line ends in
// "\r\n" or a bare "\n". Returns the index where that empty line starts (one past the last
// header line's terminator) and sets *body to the first byte after it; npos when not yet there.
// (Searching for "\r\n\r\n" first and "\n\n" second would pass over an earlier bare-LF blank
// line and read the bytes between the two as headers of nothing: they would vanish.)
std::size_t FindHeaderEnd(std::string_view buf, std::size_t pos, std::size_t* body) {
  for (std::size_t nl = buf.find('\n', pos); nl != std::string_view::npos;
       nl = buf.find('\n', nl + 1)) {
    if (nl + 1 < buf.size() && buf[nl + 1] == '\n') {
      *body = nl + 2;
      return nl + 1;
    }
    if (nl + 2 < buf.size() && buf[nl + 1] == '\r' && buf[nl + 2] == '\n') {
      *body = nl + 3;
      return nl + 1;
    }
  }
  return std::string_view::npos;
}

// A step that parsed its part whole, up to index `consumed` of the buffer.
ParseOutcome Complete(std::size_t consumed) {
  ParseOutcome o;
  o.state = ParseState::kComplete;
  o.consumed = consumed;
  return o;
}

// A chunk-size line (size and extensions) longer than this is refused.
constexpr std::size_t kMaxChunkLine = 1024;

}  // namespace

std::string Request::Header(std::string_view name) const {
  std::string key = Lower(name);
  for (const auto& [k, v] : headers)
    if (k == key) return v;
  return "";
}

bool Request::HasQuery(std::string_view name) const {
  return std::any_of(query.begin(), query.end(), [&](const auto& kv) { return kv.first == name; });
}

std::string Request::Query(std::string_view name) const {
  for (const auto& [k, v] : query)
    if (k == name) return v;
  return "";
}

Response Response::Text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", std::move(content_type));
  r.body = std::move(body);
  return r;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

bool UrlDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexValue(in[i + 1]);
      int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

bool ParseQuery(std::string_view raw, HeaderList* out) {
  out->clear();
  while (!raw.empty()) {
    std::size_t amp = raw.find('&');
    std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    std::size_t eq = part.find('=');
    std::string k, v;
    if (!UrlDecode(part.substr(0, eq), true, &k)) return false;
    if (eq != std::string_view::npos && !UrlDecode(part.substr(eq + 1), true, &v)) return false;
    out->emplace_back(std::move(k), std::move(v));
  }
  return true;
}

std::string UrlEncode(std::string_view in) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char c : in) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

namespace {

// The steps of ParseRequest. Each returns an error outcome, or nullopt when its part is good.

// "METHOD /target HTTP/1.x": the method, target, version, path and query of `req`.
std::optional<ParseOutcome> ParseRequestLine(std::string_view line, Request* req) {
  std::size_t sp1 = line.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos)
    return Error(400, "malformed request line");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), IsTokenChar))
    return Error(400, "malformed method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.substr(0, 5) == "HTTP/") return Error(505, "unsupported HTTP version");
    return Error(400, "malformed HTTP version");
  }
  if (target.empty() || target.front() != '/') return Error(400, "malformed request target");
  req->method = std::string(method);
  req->target = std::string(target);
  req->version = std::string(version);
  std::size_t q = target.find('?');
  if (!UrlDecode(target.substr(0, q), false, &req->path)) {
    return Error(400, "malformed path escape");
  }
  if (q != std::string_view::npos) {
    req->raw_query = std::string(target.substr(q + 1));
    if (!ParseQuery(req->raw_query, &req->query)) return Error(400, "malformed query escape");
  }
  return std::nullopt;
}

// The header lines of buf[pos, head_end) into req->headers (names lower-cased, values trimmed).
std::optional<ParseOutcome> ParseHeaderLines(std::string_view buf, std::size_t pos,
                                             std::size_t head_end, Request* req) {
  std::size_t next = 0;
  while (pos < head_end) {
    const std::size_t line_end = FindLineEnd(buf, pos, &next);
    if (line_end == std::string_view::npos) break;
    const std::string_view line = buf.substr(pos, line_end - pos);
    pos = next;
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return Error(400, "obsolete header folding");
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return Error(400, "malformed header line");
    std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), IsTokenChar))
      return Error(400, "malformed header name");
    req->headers.emplace_back(Lower(name),
                              std::string(Trim(line.substr(colon + 1), " \t", " \t\r")));
  }
  return std::nullopt;
}

// A chunked body starting at `pos`: on kComplete, `consumed` is the index after its trailer
// section and *body the de-chunked bytes; kNeedMore while it is incomplete.
ParseOutcome ParseChunkedBody(std::string_view buf, std::size_t pos, const Limits& limits,
                              std::string* body) {
  std::size_t next = 0;
  for (;;) {
    std::size_t line_end = FindLineEnd(buf, pos, &next);
    if (line_end == std::string_view::npos) {
      // As for the header: a '\r' may still be followed by the '\n' of a line that fits.
      if (buf.size() - pos > kMaxChunkLine + 1) return Error(400, "malformed chunk size");
      return {};
    }
    if (line_end - pos > kMaxChunkLine) return Error(400, "malformed chunk size");
    std::string_view size_text = buf.substr(pos, line_end - pos);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    size_text = Trim(size_text, " \t", " \t\r");
    std::size_t size = 0;
    auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc() || p != size_text.data() + size_text.size() || size_text.empty())
      return Error(400, "malformed chunk size");
    if (size > limits.max_body_bytes || body->size() + size > limits.max_body_bytes)
      return Error(413, "request body too large");
    pos = next;
    if (size == 0) {
      // Trailer section: lines until an empty one.
      for (;;) {
        line_end = FindLineEnd(buf, pos, &next);
        if (line_end == std::string_view::npos) return {};
        bool empty = line_end == pos;
        pos = next;
        if (empty) break;
      }
      return Complete(pos);
    }
    if (buf.size() < pos + size) return {};
    body->append(buf.substr(pos, size));
    pos += size;
    line_end = FindLineEnd(buf, pos, &next);
    if (line_end == std::string_view::npos) {
      if (buf.size() - pos >= 2) return Error(400, "malformed chunk terminator");
      return {};
    }
    if (line_end != pos) return Error(400, "malformed chunk terminator");
    pos = next;
  }
}

// A body of Content-Length `cl` bytes starting at `pos`: as ParseChunkedBody.
ParseOutcome ParseLengthBody(std::string_view buf, std::size_t pos, const std::string& cl,
                             const Limits& limits, std::string* body) {
  std::size_t len = 0;
  auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), len);
  if (ec != std::errc() || p != cl.data() + cl.size())
    return Error(400, "malformed Content-Length");
  if (len > limits.max_body_bytes) return Error(413, "request body too large");
  if (buf.size() < pos + len) return {};
  *body = std::string(buf.substr(pos, len));
  return Complete(pos + len);
}

}  // namespace

ParseOutcome ParseRequest(std::string_view buf, const Limits& limits, Request* out) {
  // Skip empty lines before a request (RFC 9112 section 2.2 robustness).
  std::size_t pos = 0;
  while (pos < buf.size() && (buf[pos] == '\r' || buf[pos] == '\n')) ++pos;
  std::size_t body_start = 0;
  const std::size_t head_end = FindHeaderEnd(buf, pos, &body_start);
  if (head_end == std::string_view::npos) {
    // The empty line could still start at the last byte (after a '\r'): only more than that can
    // never fit, so a request split anywhere is judged as if it were whole.
    if (buf.size() - pos > limits.max_header_bytes + 1)
      return Error(431, "request header too large");
    return {};
  }
  if (head_end - pos > limits.max_header_bytes) return Error(431, "request header too large");

  Request req;
  std::size_t next = 0;
  const std::size_t line_end = FindLineEnd(buf, pos, &next);
  if (auto e = ParseRequestLine(buf.substr(pos, line_end - pos), &req)) return *e;
  if (auto e = ParseHeaderLines(buf, next, head_end, &req)) return *e;

  const std::string te = Lower(req.Header("transfer-encoding"));
  const std::string cl = req.Header("content-length");
  ParseOutcome body = Complete(body_start);  // no body
  if (!te.empty()) {
    if (!cl.empty()) return Error(400, "both Content-Length and Transfer-Encoding");
    if (te != "chunked") return Error(501, "unsupported transfer encoding");
    body = ParseChunkedBody(buf, body_start, limits, &req.body);
  } else if (!cl.empty()) {
    body = ParseLengthBody(buf, body_start, cl, limits, &req.body);
  }
  if (body.state != ParseState::kComplete) return body;
  *out = std::move(req);
  return body;
}

}  // namespace pylon::http
