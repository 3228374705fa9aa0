// HTTP front of the API server: routes Kubernetes REST paths to the Store, serves discovery,
// Tables, watches (chunked streams with bookmarks), fault injection and the audit log.
// Thread-safe: one instance serves all connections.
#pragma once

#include <chrono>
#include <string>

#include "apiserver/audit.h"
#include "apiserver/faults.h"
#include "apiserver/store.h"
#include "common/clock.h"
#include "http/http.h"

namespace pylon::apiserver {

struct HandlerOptions {
  std::chrono::milliseconds bookmark_interval{std::chrono::seconds(60)};
  std::string server_address = "127.0.0.1:6443";  // for /api serverAddressByClientCIDRs
};

class ApiHandler {
 public:
  ApiHandler(Store& store, Faults& faults, AuditLog* audit, const Clock& clock,
             HandlerOptions options)
      : store_(store), faults_(faults), audit_(audit), clock_(clock), opts_(std::move(options)) {}

  void Handle(const http::Request& req, http::ResponseWriter& w);
  void set_server_address(std::string a) { opts_.server_address = std::move(a); }

 private:
  struct Route;
  void HandleResource(const http::Request& req, http::ResponseWriter& w, Route& route);
  void HandlePylon(const http::Request& req, http::ResponseWriter& w);
  void ServeWatch(const http::Request& req, http::ResponseWriter& w, Route& route);

  Store& store_;
  Faults& faults_;
  AuditLog* audit_;
  const Clock& clock_;
  HandlerOptions opts_;
};

}  // namespace pylon::apiserver
