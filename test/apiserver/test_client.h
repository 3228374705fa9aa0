// Test helpers: a libcurl HTTP client, an in-process API server on a free port, and child
// processes (the real `pylon apiserver`, kubectl) with captured output.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apiserver/handler.h"
#include "http/server.h"

namespace pylon::apiserver::testing {

struct HttpResult {
  long status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;
  std::string error;  // curl error text, if any
};

struct CallOptions {
  std::string method = "GET";
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::string> headers;  // "Name: value"
  std::string ca_pem;                // verify TLS against this CA
  long timeout_ms = 10000;
};

HttpResult Call(const std::string& url, const CallOptions& o = {});

// Parses a watch stream body: one JSON value per line.
std::vector<Json> Frames(const std::string& body);

// Polls `cond` every 10 ms until it holds or `deadline` passes.
bool WaitFor(const std::function<bool()>& cond,
             std::chrono::milliseconds deadline = std::chrono::seconds(10));

// A Store + ApiHandler behind an http::Server on 127.0.0.1:0.
class InProcessServer {
 public:
  explicit InProcessServer(HandlerOptions ho = {}, StoreOptions so = {},
                           std::shared_ptr<http::TlsContext> tls = nullptr,
                           AuditLog* audit = nullptr);
  ~InProcessServer();
  std::string Url() const { return server_->Url(); }
  Store& store() { return store_; }

 private:
  Store store_;
  Faults faults_;
  ApiHandler handler_;
  std::unique_ptr<http::Server> server_;
};

// A child process with stdout+stderr going to `output_file`.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& output_file);
  ~Child();  // SIGTERM, then waits
  pid_t pid() const { return pid_; }
  std::string Output() const;
  int Stop();  // SIGTERM and wait; returns the exit status

 private:
  pid_t pid_ = -1;
  std::string output_file_;
};

// Runs a command to completion; returns stdout+stderr and sets *status to the exit code.
std::string Run(const std::vector<std::string>& argv, int* status);

std::string ReadFile(const std::string& path);
std::string MakeTempDir();

}  // namespace pylon::apiserver::testing
