// A small HTTP/1.1 server over TCP: one thread per connection, keep-alive, streaming (chunked)
// responses for long-lived handlers. Serves every component's /metrics and /healthz, the agent's
// kube-proxy health port and the fault proxy's control endpoint.
//
// Threading: the handler runs on the connection's thread and may block (streaming handlers must
// poll ResponseWriter::Done() at least every few hundred milliseconds). Stop() stops accepting,
// shuts every connection down (blocked reads and writes return), and joins all threads.
// Start() ignores SIGPIPE for the whole process (writes to closed peers must not kill it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "common/mutex.h"
#include "common/result.h"
#include "http/http.h"
#include "http/parser.h"

namespace pylon::http {

using Handler = std::function<void(const Request&, ResponseWriter&)>;

struct ServerOptions {
  std::string address = "127.0.0.1";  // IPv4/IPv6 literal, "localhost", or "" (= 127.0.0.1)
  std::uint16_t port = 0;             // 0: the kernel picks one; see Server::port()
  Limits limits;
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};  // keep-alive idle close
};

class Server {
 public:
  // Binds, listens and starts the accept thread. Fails on a bad address or a taken port.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const { return port_; }
  // "http://127.0.0.1:8080" or "http://[::1]:8080" (the bound address, with the real port).
  std::string Url() const;
  bool stopping() const { return stopping_.load(); }
  void Stop();  // idempotent; must not be called from a handler thread

 private:
  struct Connection;
  Server(ServerOptions options, Handler handler)
      : opts_(std::move(options)), handler_(std::move(handler)) {}
  void AcceptLoop();
  void Serve(std::uint64_t id, UniqueFd fd, std::string peer);
  void ReapFinished();

  ServerOptions opts_;
  Handler handler_;
  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // eventfd: wakes the accept loop on Stop()
  std::uint16_t port_ = 0;
  std::string host_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;

  Mutex mu_;
  std::uint64_t next_id_ PYLON_GUARDED_BY(mu_) = 1;
  // Live connections' sockets, for shutdown.
  std::map<std::uint64_t, int> conn_fds_ PYLON_GUARDED_BY(mu_);
  std::map<std::uint64_t, std::thread> threads_ PYLON_GUARDED_BY(mu_);
  std::vector<std::uint64_t> finished_ PYLON_GUARDED_BY(mu_);  // ids whose thread ended, to join
};

}  // namespace pylon::http
