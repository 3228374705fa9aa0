// One POST of a JSON body to a server on loopback, for control APIs that tests drive (the fault
// proxy's /pylon/faults): no client, no retries.
#pragma once

#include <string>

#include "common/result.h"
#include "k8s/curl_transport.h"
#include "k8s/rest_config.h"

namespace pylon::k8s {

// POSTs `body` to `path` with `config` and wants a 2xx.
inline Status PostJson(const RestConfig& config, const std::string& path, const std::string& body) {
  auto t = CurlTransport::Create(config);
  if (!t) return Fail(t.error());
  HttpRequest req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.content_type = "application/json";
  auto resp = (*t)->Do(req);
  if (!resp) return Fail(resp.error());
  if (resp->status / 100 != 2) {
    return Fail(ErrorCode::kUnavailable,
                path + ": HTTP " + std::to_string(resp->status) + ": " + resp->body);
  }
  return Ok();
}

}  // namespace pylon::k8s
