// Transport over libcurl (OpenSSL). curl_global_init runs once per process. Do() borrows an easy
// handle from a pool (keeping connections alive across requests); Stream() uses its own easy +
// multi handle so Cancel can wake it at once. Thread-safe: any number of concurrent calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "k8s/rest_config.h"
#include "k8s/token_source.h"
#include "k8s/transport.h"

namespace pylon::k8s {

class CurlTransport final : public Transport {
 public:
  // Fails on a server URL it cannot split into scheme, host and port.
  static Result<std::unique_ptr<CurlTransport>> Create(
      const RestConfig& config, const Clock& clock = SystemClock::Instance());
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  Result<HttpResponse> Do(const HttpRequest& req) override;
  Result<HttpResponse> Stream(const HttpRequest& req, const DataCallback& on_data,
                              Canceller* cancel) override;

 private:
  struct Xfer;
  CurlTransport(const RestConfig& config, const Clock& clock);
  Status Setup(void* easy, const HttpRequest& req, Xfer* xfer, const std::string& token);
  Result<HttpResponse> DoOnce(const HttpRequest& req, const std::string& token);
  Result<HttpResponse> StreamOnce(const HttpRequest& req, const DataCallback& on_data,
                                  Canceller* cancel, const std::string& token);
  void* Borrow();
  void Return(void* easy);

  RestConfig config_;
  std::string url_base_;     // scheme://host:port as put in the URL (tls-server-name if set)
  std::string connect_to_;   // CURLOPT_CONNECT_TO entry when tls-server-name is set
  std::string unix_socket_;  // CURLOPT_UNIX_SOCKET_PATH for a unix:///path server
  TokenSource tokens_;
  Mutex pool_mu_;
  std::vector<void*> pool_ PYLON_GUARDED_BY(pool_mu_);  // idle CURL* handles
};

}  // namespace pylon::k8s
