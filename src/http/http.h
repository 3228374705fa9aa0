// HTTP/1.1 message types shared by the server, its handlers and tests.
// Header names are stored lower-cased; lookups are case-insensitive by construction.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pylon::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;     // "GET", "POST", ... as sent (upper case expected)
  std::string version;    // "HTTP/1.1" or "HTTP/1.0"
  std::string target;     // raw request target, e.g. "/api/v1/services?watch=1"
  std::string path;       // percent-decoded path part of the target
  std::string raw_query;  // undecoded text after '?', may be empty
  HeaderList query;       // decoded query parameters in order ('+' is a space)
  HeaderList headers;     // names lower-cased, values trimmed
  std::string body;       // Content-Length or de-chunked body
  std::string remote;     // peer "addr:port", informational

  // The first value of a header (name is matched case-insensitively) or "".
  std::string Header(std::string_view name) const;
  bool HasQuery(std::string_view name) const;
  // The first value of a query parameter or "".
  std::string Query(std::string_view name) const;
};

struct Response {
  int status = 200;
  HeaderList headers;  // Content-Length is added by the server; do not set it
  std::string body;

  static Response Text(int status, std::string body, std::string content_type = "text/plain");
};

// The text after the status code in the status line ("OK", "Not Found", ...).
const char* ReasonPhrase(int status);

// What a handler uses to answer. Exactly one of Send() or StartStream() must be called (a handler
// that calls neither gets a 500). Not thread-safe: use it only from the handler's own thread.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // Sends a complete response with Content-Length.
  virtual void Send(const Response& response) = 0;
  // Starts a chunked response. Returns false if the client is gone already.
  virtual bool StartStream(int status, const HeaderList& headers) = 0;
  // Sends one chunk (empty data is ignored). Returns false once the client is gone or the server
  // is stopping; the handler should then return.
  virtual bool WriteChunk(std::string_view data) = 0;
  // True when the peer closed or reset the connection, or the server is stopping. Cheap (a poll
  // with zero timeout); streaming handlers call it between waits.
  virtual bool Done() = 0;
};

}  // namespace pylon::http
