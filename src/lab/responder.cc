#include "lab/responder.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

#include "common/fd.h"
#include "net/ip.h"

namespace pylon::lab {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// "192.0.2.2" for an IPv4-mapped peer, "2001:db8:1::2" for an IPv6 one.
std::string PeerText(const sockaddr_in6& peer) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr)) {
    inet_ntop(AF_INET, &peer.sin6_addr.s6_addr[12], buf, sizeof buf);
  } else {
    inet_ntop(AF_INET6, &peer.sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::string HttpReply(const std::string& text) {
  const std::string body = text + "\n";
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// The socket address of ip:port; its length.
socklen_t SockaddrOf(const net::IpAddress& ip, int port, sockaddr_storage* ss) {
  *ss = {};
  auto bytes = ip.bytes();
  if (ip.is_v4()) {
    auto* sa = reinterpret_cast<sockaddr_in*>(ss);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&sa->sin_addr, bytes.data(), 4);
    return sizeof *sa;
  }
  auto* sa = reinterpret_cast<sockaddr_in6*>(ss);
  sa->sin6_family = AF_INET6;
  sa->sin6_port = htons(static_cast<uint16_t>(port));
  std::memcpy(&sa->sin6_addr, bytes.data(), 16);
  return sizeof *sa;
}

// A listening TCP socket on [::]:port (IPv4 too), accepting for addresses added later.
Result<UniqueFd> ListenAny(int port) {
  UniqueFd fd(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return FailErrno(errno, "socket");
  int zero = 0, one = 1;
  setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // Accept connections to addresses added after bind (the VIPs arrive later).
  setsockopt(fd.get(), IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(static_cast<uint16_t>(port));
  sa.sin6_addr = in6addr_any;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    return FailErrno(errno, "bind [::]:" + std::to_string(port));
  }
  if (listen(fd.get(), 128) != 0) return FailErrno(errno, "listen");
  return fd;
}

}  // namespace

Status ServeText(int port, const std::string& text, const std::atomic<bool>* stop,
                 bool report_peer) {
  auto listening = ListenAny(port);
  if (!listening) return Fail(listening.error());
  UniqueFd fd = std::move(*listening);
  const std::string fixed_reply = HttpReply(text);
  while (!stop->load()) {
    pollfd p{fd.get(), POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    sockaddr_in6 peer{};
    socklen_t peer_len = sizeof peer;
    UniqueFd c(accept4(fd.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC));
    if (!c) continue;
    const std::string reply =
        report_peer ? HttpReply(text + " client=" + PeerText(peer)) : fixed_reply;
    // Read the request head (bounded), then answer and close.
    char buf[2048];
    std::string req;
    auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 8192) {
      pollfd q{c.get(), POLLIN, 0};
      if (poll(&q, 1, RemainingMs(deadline)) <= 0) break;
      ssize_t n = read(c.get(), buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
    }
    (void)!write(c.get(), reply.data(), reply.size());
  }
  return Ok();
}

ProbeResult ProbeOnce(const std::string& address, int port, std::chrono::milliseconds timeout,
                      const std::string& path) {
  ProbeResult r;
  auto ip = net::IpAddress::Parse(address);
  if (!ip) {
    r.error = ip.error().message();
    return r;
  }
  auto deadline = Clock::now() + timeout;
  sockaddr_storage ss{};
  const socklen_t len = SockaddrOf(*ip, port, &ss);
  UniqueFd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    r.error = std::strerror(errno);
    return r;
  }
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    r.error = std::string("connect: ") + std::strerror(errno);
    return r;
  }
  pollfd p{fd.get(), POLLOUT, 0};
  if (poll(&p, 1, RemainingMs(deadline)) <= 0) {
    r.error = "connect timeout";
    return r;
  }
  int err = 0;
  socklen_t elen = sizeof err;
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) {
    r.error = std::string("connect: ") + std::strerror(err);
    return r;
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: pylon\r\nConnection: close\r\n\r\n";
  if (write(fd.get(), req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    r.error = "write failed";
    return r;
  }
  std::string resp;
  char buf[1024];
  while (true) {
    pollfd q{fd.get(), POLLIN, 0};
    if (poll(&q, 1, RemainingMs(deadline)) <= 0) {
      r.error = "read timeout";
      return r;
    }
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EAGAIN) continue;
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  auto head_end = resp.find("\r\n\r\n");
  if (resp.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos || resp.size() < 12) {
    r.error = "bad reply";
    return r;
  }
  r.status = std::atoi(resp.substr(9, 3).c_str());
  r.body = resp.substr(head_end + 4);
  while (!r.body.empty() && (r.body.back() == '\n' || r.body.back() == '\r')) r.body.pop_back();
  if (r.status != 200) {
    r.error = "HTTP " + std::to_string(r.status);
    return r;
  }
  r.ok = true;
  return r;
}

std::vector<ProbeSample> ProbeLoop(const std::string& address, int port,
                                   std::chrono::milliseconds interval,
                                   std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds duration,
                                   const std::atomic<bool>* stop) {
  std::vector<ProbeSample> out;
  auto start = Clock::now();
  auto next = start;
  while (!(stop != nullptr && stop->load()) && Clock::now() - start < duration) {
    auto r = ProbeOnce(address, port, timeout);
    ProbeSample s;
    s.t_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    s.ok = r.ok;
    s.node = r.body;
    out.push_back(s);
    next += interval;
    auto now = Clock::now();
    if (next > now)
      std::this_thread::sleep_until(next);
    else
      next = now;
  }
  return out;
}

std::map<std::string, std::string> ReplyFields(const std::string& body) {
  std::map<std::string, std::string> out;
  std::istringstream in(body);
  for (std::string w; in >> w;) {
    auto eq = w.find('=');
    if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return out;
}

std::string AnsweringNode(const std::string& body) {
  auto fields = ReplyFields(body);
  auto it = fields.find("node");
  return it != fields.end() ? it->second : body;
}

double LongestOutageMs(const std::vector<ProbeSample>& samples) {
  double worst = 0;
  double last_ok = -1;
  bool failed_since = false;
  for (const auto& s : samples) {
    if (!s.ok) {
      failed_since = true;
      continue;
    }
    if (failed_since && last_ok >= 0) worst = std::max(worst, s.t_ms - last_ok);
    last_ok = s.t_ms;
    failed_since = false;
  }
  return worst;
}

Status ServeEcho(int port, const std::atomic<bool>* stop) {
  auto listening = ListenAny(port);
  if (!listening) return Fail(listening.error());
  UniqueFd fd = std::move(*listening);
  std::vector<UniqueFd> conns;
  char buf[4096];
  while (!stop->load()) {
    std::vector<pollfd> p{{fd.get(), POLLIN, 0}};
    for (const auto& c : conns) p.push_back({c.get(), POLLIN, 0});
    if (poll(p.data(), p.size(), 200) <= 0) continue;
    if ((p[0].revents & POLLIN) != 0) {
      UniqueFd c(accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (c) conns.push_back(std::move(c));
    }
    std::vector<UniqueFd> kept;
    for (size_t i = 1; i < p.size(); ++i) {
      UniqueFd& c = conns[i - 1];
      bool open = true;
      if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = read(c.get(), buf, sizeof buf);
        if (n > 0) {
          open = write(c.get(), buf, static_cast<size_t>(n)) == n;
        } else if (n == 0 || errno != EAGAIN) {
          open = false;
        }
      }
      if (open) kept.push_back(std::move(c));
    }
    for (size_t i = p.size() - 1; i < conns.size(); ++i) kept.push_back(std::move(conns[i]));
    conns = std::move(kept);
  }
  return Ok();
}

struct StreamSet::Flow {
  UniqueFd fd;
  bool broken = false;
  bool stalled = false;
  std::optional<Clock::time_point> sent;  // awaiting this line's echo since
  size_t pending = 0;                     // bytes of echo still expected
};

Result<std::unique_ptr<StreamSet>> StreamSet::Open(const std::string& address, int port, int count,
                                                   std::chrono::milliseconds period) {
  auto ip = net::IpAddress::Parse(address);
  if (!ip) return Fail(ip.error());
  std::unique_ptr<StreamSet> set(new StreamSet());
  for (int i = 0; i < count; ++i) {
    sockaddr_storage ss{};
    const socklen_t len = SockaddrOf(*ip, port, &ss);
    UniqueFd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return FailErrno(errno, "socket");
    timeval tv{2, 0};
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return FailErrno(errno, "connect " + address + ":" + std::to_string(port));
    }
    const int flags = fcntl(fd.get(), F_GETFL);
    fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK);
    Flow flow;
    flow.fd = std::move(fd);
    set->flows_.push_back(std::move(flow));
  }
  set->stats_.opened = count;
  set->thread_ = std::thread([s = set.get(), period] { s->Run(period); });
  return set;
}

void StreamSet::Run(std::chrono::milliseconds period) {
  static constexpr char kLine[] = "pylon lab stream\n";
  auto next = Clock::now();
  char buf[4096];
  while (!stop_.load()) {
    const auto now = Clock::now();
    if (now >= next) {
      next += period;
      for (auto& f : flows_) {
        if (f.broken) continue;
        if (f.sent) {
          const double waited = std::chrono::duration<double, std::milli>(now - *f.sent).count();
          stats_.longest_wait_ms = std::max(stats_.longest_wait_ms, waited);
          if (waited > 1000 && !f.stalled) {
            f.stalled = true;
            ++stats_.stalled;
          }
          continue;  // one line in flight per flow
        }
        if (write(f.fd.get(), kLine, sizeof kLine - 1) != static_cast<ssize_t>(sizeof kLine - 1)) {
          f.broken = true;
          ++stats_.broken;
          continue;
        }
        f.sent = now;
        f.pending = sizeof kLine - 1;
      }
    }
    std::vector<pollfd> p;
    std::vector<Flow*> of;
    for (auto& f : flows_) {
      if (f.broken) continue;
      p.push_back({f.fd.get(), POLLIN, 0});
      of.push_back(&f);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    if (poll(p.data(), p.size(), static_cast<int>(std::max<int64_t>(0, wait.count()))) <= 0) {
      continue;
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Flow& f = *of[i];
      const ssize_t n = read(f.fd.get(), buf, sizeof buf);
      if (n > 0) {
        f.pending -= std::min(f.pending, static_cast<size_t>(n));
        if (f.pending == 0 && f.sent) {
          const double waited =
              std::chrono::duration<double, std::milli>(Clock::now() - *f.sent).count();
          stats_.longest_wait_ms = std::max(stats_.longest_wait_ms, waited);
          f.sent.reset();
        }
      } else if (n == 0 || errno != EAGAIN) {
        f.broken = true;
        ++stats_.broken;
      }
    }
  }
}

StreamStats StreamSet::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  flows_.clear();
  return stats_;
}

StreamSet::~StreamSet() { (void)Stop(); }

}  // namespace pylon::lab
