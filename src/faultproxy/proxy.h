// `pylon-dev fault-proxy`: a reverse proxy in front of the real kube-apiserver that injects faults
// in the middle of requests (see faults.h for the control API and docs/fault-proxy.md for why it
// exists). Clients talk plain HTTP to 127.0.0.1; the proxy forwards each request over TLS to the
// upstream, trusting its CA, with the client's own bearer token (so RBAC applies to whoever calls),
// and streams watch responses back chunk by chunk as they arrive.
//
// Threading: one thread per client connection (src/http); a proxied watch adds one thread that
// reads the upstream stream while the connection's thread writes to the client and notices when
// the client goes away. Stop() cancels every upstream request in flight and joins everything.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/result.h"
#include "faultproxy/faults.h"
#include "http/http.h"
#include "http/server.h"
#include "k8s/canceller.h"
#include "k8s/curl_transport.h"

namespace pylon::faultproxy {

struct ProxyOptions {
  std::string listen_host = "127.0.0.1";
  std::uint16_t port = 0;       // 0: the kernel picks one
  std::string upstream;         // https://127.0.0.1:6443
  std::string upstream_ca_pem;  // PEM bytes of the CA that signed the upstream's certificate
  // etcd's client URL (http://127.0.0.1:2379): POST /pylon/faults/compact compacts it through
  // its v3 JSON gateway. "" = /pylon/faults/compact answers 501.
  std::string etcd;
  // Whole-request limit of a proxied non-watch request (watches have none).
  std::chrono::milliseconds upstream_timeout{std::chrono::seconds(60)};
};

class FaultProxy {
 public:
  static Result<std::unique_ptr<FaultProxy>> Start(ProxyOptions options,
                                                   const FaultSettings& initial = {});
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // http://127.0.0.1:<port>
  std::string Url() const;
  std::uint16_t port() const;
  Faults& faults() { return faults_; }
  // Closes every open proxied watch now (the client sees the stream end cleanly); the count.
  std::size_t CutWatches();
  // Compacts etcd at its current revision; returns that revision. Resuming watches from an older
  // resourceVersion then get the 410 Expired ERROR event (see proxy.cc for how).
  Result<std::uint64_t> Compact();
  std::size_t OpenWatches() const;
  // Idempotent; must not be called from a handler thread.
  void Stop();

 private:
  struct Inflight {
    k8s::Canceller* cancel;
    bool watch;
  };
  explicit FaultProxy(ProxyOptions options) : opts_(std::move(options)) {}
  void Handle(const http::Request& req, http::ResponseWriter& w);
  void HandleControl(const http::Request& req, http::ResponseWriter& w);
  void Forward(const http::Request& req, const RequestInfo& info, http::ResponseWriter& w);
  void ForwardWatch(const http::Request& req, http::ResponseWriter& w);
  Result<k8s::CurlTransport*> TransportFor(const http::Request& req);
  k8s::HttpRequest UpstreamRequest(const http::Request& req, bool watch) const;
  std::uint64_t Register(k8s::Canceller* cancel, bool watch);
  void Unregister(std::uint64_t id);

  const ProxyOptions opts_;
  Faults faults_;
  std::unique_ptr<http::Server> server_;
  std::atomic<bool> stopping_{false};
  // Resuming watches from before this etcd revision get 410 (0: never compacted).
  std::atomic<std::uint64_t> compacted_rv_{0};

  mutable Mutex mu_;
  // By token + agent.
  std::map<std::string, std::unique_ptr<k8s::CurlTransport>> transports_ PYLON_GUARDED_BY(mu_);
  std::uint64_t next_id_ PYLON_GUARDED_BY(mu_) = 1;
  std::map<std::uint64_t, Inflight> inflight_ PYLON_GUARDED_BY(mu_);
};

}  // namespace pylon::faultproxy
