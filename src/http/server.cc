#include "http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "common/log.h"
#include "net/ip.h"

namespace pylon::http {
namespace {

constexpr int kPollSliceMs = 250;

// One accepted socket. Blocking I/O; reads are preceded by poll() so that server shutdown and
// idle timeouts are noticed.
class Conn {
 public:
  explicit Conn(int fd) : fd_(fd) {}

  // Returns bytes read, 0 on orderly close, -1 on error.
  long Read(char* buf, std::size_t n) {
    for (;;) {
      ssize_t r = ::recv(fd_, buf, n, 0);
      if (r < 0 && errno == EINTR) continue;
      return static_cast<long>(r);
    }
  }

  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t w = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }

  // True when the peer has hung up (FIN or RST). Zero-timeout poll.
  bool PeerGone() const {
    pollfd p{fd_, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) < 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
  }

 private:
  int fd_;
};

std::string Serialize(const Response& r, bool head_only, bool close) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + ReasonPhrase(r.status) + "\r\n";
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

class ConnWriter final : public ResponseWriter {
 public:
  ConnWriter(Conn& conn, const std::atomic<bool>& stopping, bool head, bool close)
      : conn_(conn), stopping_(stopping), head_(head), close_(close) {}

  void Send(const Response& response) override {
    if (state_ != State::kIdle) return;
    state_ = State::kSent;
    ok_ = conn_.WriteAll(Serialize(response, head_, close_));
  }
  bool StartStream(int status, const HeaderList& headers) override {
    if (state_ != State::kIdle) return false;
    state_ = State::kStreaming;
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + ReasonPhrase(status) + "\r\n";
    for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
    out += "Transfer-Encoding: chunked\r\n";
    if (close_) out += "Connection: close\r\n";
    out += "\r\n";
    ok_ = conn_.WriteAll(out);
    return ok_;
  }
  bool WriteChunk(std::string_view data) override {
    if (state_ != State::kStreaming || !ok_ || stopping_.load()) return false;
    if (data.empty()) return true;
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
    std::string frame = size;
    frame.append(data);
    frame += "\r\n";
    ok_ = conn_.WriteAll(frame);
    return ok_;
  }
  bool Done() override { return !ok_ || stopping_.load() || conn_.PeerGone(); }

  // Completes the response after the handler returned. Returns whether the connection can be
  // reused.
  bool Finish() {
    if (state_ == State::kIdle) Send(Response::Text(500, "handler sent no response\n"));
    if (state_ == State::kStreaming && ok_ && !stopping_.load()) ok_ = conn_.WriteAll("0\r\n\r\n");
    return ok_ && !close_;
  }

 private:
  enum class State { kIdle, kSent, kStreaming };
  Conn& conn_;
  const std::atomic<bool>& stopping_;
  bool head_;
  bool close_;
  State state_ = State::kIdle;
  bool ok_ = true;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, Handler handler) {
  std::signal(SIGPIPE, SIG_IGN);
  std::string host = options.address;
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  auto ip = net::IpAddress::Parse(host);
  if (!ip)
    return Fail(ErrorCode::kInvalidArgument,
                "listen address \"" + host + "\": " + ip.error().message());
  std::unique_ptr<Server> s(new Server(std::move(options), std::move(handler)));
  s->host_ = ip->ToString();
  int family = ip->is_v4() ? AF_INET : AF_INET6;
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return FailErrno(errno, "socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto bytes = ip->bytes();
  if (ip->is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(s->opts_.port);
    std::memcpy(&sin->sin_addr, bytes.data(), 4);
    len = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(s->opts_.port);
    std::memcpy(&sin6->sin6_addr, bytes.data(), 16);
    len = sizeof(sockaddr_in6);
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0)
    return FailErrno(errno, "bind " + s->host_ + ":" + std::to_string(s->opts_.port));
  if (::listen(fd.get(), 128) != 0) return FailErrno(errno, "listen");
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return FailErrno(errno, "getsockname");
  s->port_ = ntohs(ip->is_v4() ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                               : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  s->listen_fd_ = std::move(fd);
  s->wake_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->wake_fd_) return FailErrno(errno, "eventfd");
  Server* raw = s.get();
  s->accept_thread_ = std::thread([raw] { raw->AcceptLoop(); });
  return s;
}

Server::~Server() { Stop(); }

std::string Server::Url() const {
  std::string h = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  if (h == "0.0.0.0") h = "127.0.0.1";
  if (h == "[::]") h = "[::1]";
  return "http://" + h + ":" + std::to_string(port_);
}

void Server::Stop() {
  if (stopping_.exchange(true)) {
    if (accept_thread_.joinable()) accept_thread_.join();
    return;
  }
  std::uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof(one)) < 0) {
    // The accept loop also polls with a timeout; nothing else to do.
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  std::map<std::uint64_t, std::thread> threads;
  {
    MutexLock lock(mu_);
    for (const auto& [id, cfd] : conn_fds_) ::shutdown(cfd, SHUT_RDWR);
    threads.swap(threads_);
    finished_.clear();
  }
  for (auto& [id, t] : threads)
    if (t.joinable()) t.join();
  listen_fd_.reset();
}

void Server::ReapFinished() {
  std::vector<std::thread> done;
  {
    MutexLock lock(mu_);
    for (auto id : finished_) {
      auto it = threads_.find(id);
      if (it != threads_.end()) {
        done.push_back(std::move(it->second));
        threads_.erase(it);
      }
    }
    finished_.clear();
  }
  for (auto& t : done)
    if (t.joinable()) t.join();
}

void Server::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, 1000);
    ReapFinished();
    if (n <= 0 || stopping_.load()) continue;
    if ((fds[0].revents & POLLIN) == 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int cfd = ::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (cfd < 0) continue;
    char addr[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr));
      port = ntohs(sin->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof(addr));
      port = ntohs(sin6->sin6_port);
    }
    int one = 1;
    ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    timeval tv{30, 0};  // a peer that stops reading cannot block a writer forever
    ::setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    MutexLock lock(mu_);
    std::uint64_t id = next_id_++;
    conn_fds_[id] = cfd;
    std::string peer = std::string(addr) + ":" + std::to_string(port);
    threads_[id] = std::thread([this, id, cfd, peer] { Serve(id, UniqueFd(cfd), peer); });
  }
}

void Server::Serve(std::uint64_t id, UniqueFd fd, std::string peer) {
  {
    Conn conn(fd.get());
    std::string buf;
    auto idle_since = std::chrono::steady_clock::now();
    while (!stopping_.load()) {
      Request req;
      ParseOutcome po = ParseRequest(buf, opts_.limits, &req);
      if (po.state == ParseState::kError) {
        Response r = Response::Text(po.error_status, po.error + "\n");
        conn.WriteAll(Serialize(r, false, true));
        break;
      }
      if (po.state == ParseState::kNeedMore) {
        pollfd p{fd.get(), POLLIN, 0};
        int n = ::poll(&p, 1, kPollSliceMs);
        if (n < 0 && errno != EINTR) break;
        if (n <= 0) {
          if (std::chrono::steady_clock::now() - idle_since > opts_.idle_timeout) break;
          continue;
        }
        char chunk[16384];
        long r = conn.Read(chunk, sizeof(chunk));
        if (r <= 0) break;
        buf.append(chunk, static_cast<std::size_t>(r));
        continue;
      }
      buf.erase(0, po.consumed);
      req.remote = peer;
      std::string connection = Lower(req.Header("connection"));
      bool close =
          connection == "close" || (req.version == "HTTP/1.0" && connection != "keep-alive");
      ConnWriter writer(conn, stopping_, req.method == "HEAD", close);
      handler_(req, writer);
      if (!writer.Finish()) break;
      idle_since = std::chrono::steady_clock::now();
    }
  }
  MutexLock lock(mu_);
  conn_fds_.erase(id);
  finished_.push_back(id);
}

}  // namespace pylon::http
