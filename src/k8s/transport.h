// The HTTP layer under the client: one request/response, or one streamed body. The interface lets
// the client be tested against canned replies; CurlTransport is the real one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s/canceller.h"

namespace pylon::k8s {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // absolute path with query, e.g. "/api/v1/services?limit=500"
  std::string body;
  std::string content_type;  // of body; "" when there is none
  std::string accept = "application/json";
  // Whole-request timeout; nullopt = the config's request timeout, zero = none (watches).
  std::optional<std::chrono::milliseconds> timeout;
};

struct HttpResponse {
  int64_t status = 0;
  std::string body;  // Do: the body. Stream: only a non-2xx body (2xx went to on_data).
  std::string content_type;
  std::optional<std::chrono::seconds> retry_after;
};

// Called with each piece of a streamed 2xx body; return false to stop reading.
using DataCallback = std::function<bool(std::string_view)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Any HTTP status is a successful Result; only transport failures (DNS, connect, TLS, reset,
  // timeout) are errors, with code kUnavailable (kPermission for a TLS verification failure).
  virtual Result<HttpResponse> Do(const HttpRequest& req) = 0;
  // Like Do, but a 2xx body is handed to on_data as it arrives. Returns when the body ends,
  // on_data returns false, or `cancel` fires (then the response is returned as received so far).
  virtual Result<HttpResponse> Stream(const HttpRequest& req, const DataCallback& on_data,
                                      Canceller* cancel) = 0;
};

}  // namespace pylon::k8s
