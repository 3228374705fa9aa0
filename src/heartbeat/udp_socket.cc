#include "heartbeat/udp_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace pylon::heartbeat {

namespace {

constexpr int kTrafficClassCs6 = 0xc0;

bool Transient(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ENETDOWN || err == ENETUNREACH ||
         err == EHOSTUNREACH || err == ENOBUFS || err == ENXIO || err == EADDRNOTAVAIL ||
         err == ECONNREFUSED;
}

Endpoint FromSockaddr(const sockaddr_storage& ss) {
  Endpoint e;
  if (ss.ss_family == AF_INET) {
    sockaddr_in sin;
    std::memcpy(&sin, &ss, sizeof(sin));
    e.address = net::IpAddress::FromBytes(net::Family::kV4,
                                          reinterpret_cast<const std::uint8_t*>(&sin.sin_addr));
    e.port = ntohs(sin.sin_port);
  } else {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, &ss, sizeof(sin6));
    const auto* b = reinterpret_cast<const std::uint8_t*>(&sin6.sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr)) {
      e.address = net::IpAddress::FromBytes(net::Family::kV4, b + 12);
    } else {
      e.address = net::IpAddress::FromBytes(net::Family::kV6, b);
    }
    e.port = ntohs(sin6.sin6_port);
  }
  return e;
}

}  // namespace

Result<UdpSocket> UdpSocket::Open(const std::string& device, std::uint16_t port) {
  bool dual = true;
  UniqueFd fd(::socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd && errno == EAFNOSUPPORT) {
    dual = false;
    fd = UniqueFd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  }
  if (!fd) return FailErrno(errno, "heartbeat socket");
  const int one = 1, zero = 0;
  if (dual && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) != 0) {
    return FailErrno(errno, "heartbeat socket: IPV6_V6ONLY off");
  }
  // Best effort: a heartbeat is network control traffic.
  (void)::setsockopt(fd.get(), IPPROTO_IP, IP_TOS, &kTrafficClassCs6, sizeof(kTrafficClassCs6));
  if (dual) {
    (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_TCLASS, &kTrafficClassCs6,
                       sizeof(kTrafficClassCs6));
  }
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (!device.empty()) {
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_BINDTODEVICE, device.c_str(),
                     static_cast<socklen_t>(device.size())) != 0) {
      return FailErrno(errno, "heartbeat socket: SO_BINDTODEVICE " + device);
    }
  }
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (dual) {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_addr = in6addr_any;
    sin6.sin6_port = htons(port);
    std::memcpy(&ss, &sin6, sizeof(sin6));
    len = sizeof(sin6);
  } else {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
    sin.sin_port = htons(port);
    std::memcpy(&ss, &sin, sizeof(sin));
    len = sizeof(sin);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    return FailErrno(errno, "heartbeat socket: bind port " + std::to_string(port));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &blen) != 0) {
    return FailErrno(errno, "heartbeat socket: getsockname");
  }
  return UdpSocket(std::move(fd), FromSockaddr(bound).port, dual);
}

Status UdpSocket::SendTo(std::span<const std::uint8_t> payload, const Endpoint& to) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const auto bytes = to.address.bytes();
  if (dual_stack_) {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(to.port);
    auto* dst = reinterpret_cast<std::uint8_t*>(&sin6.sin6_addr);
    if (to.address.is_v4()) {
      dst[10] = 0xff;
      dst[11] = 0xff;
      std::memcpy(dst + 12, bytes.data(), 4);
    } else {
      std::memcpy(dst, bytes.data(), 16);
    }
    std::memcpy(&ss, &sin6, sizeof(sin6));
    len = sizeof(sin6);
  } else {
    if (!to.address.is_v4()) {
      return Fail(ErrorCode::kUnsupported, "IPv6 peer " + to.ToString() + " on an IPv4 socket");
    }
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(to.port);
    std::memcpy(&sin.sin_addr, bytes.data(), 4);
    std::memcpy(&ss, &sin, sizeof(sin));
    len = sizeof(sin);
  }
  const ssize_t n = ::sendto(fd_.get(), payload.data(), payload.size(), MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&ss), len);
  if (n < 0) {
    const int err = errno;
    Error e = Error::FromErrno(err, "heartbeat to " + to.ToString());
    if (Transient(err)) return Fail(ErrorCode::kUnavailable, e.message());
    return Fail(e);
  }
  return Ok();
}

Result<std::optional<ReceivedDatagram>> UdpSocket::Receive(std::span<std::uint8_t> buffer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  const ssize_t n = ::recvfrom(fd_.get(), buffer.data(), buffer.size(), MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&ss), &len);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return std::nullopt;
    return FailErrno(errno, "heartbeat receive");
  }
  ReceivedDatagram d;
  d.size = static_cast<std::size_t>(n);
  d.from = FromSockaddr(ss);
  return d;
}

}  // namespace pylon::heartbeat
