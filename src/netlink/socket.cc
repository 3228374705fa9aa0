#include "netlink/socket.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <string>

namespace pylon::netlink {
namespace {

// Large enough for any single rtnetlink datagram the kernel sends to a socket with the default
// page-sized dump chunks (it caps at 32 KiB when the reader's buffer allows).
constexpr std::size_t kRecvBuffer = 64 * 1024;

Result<UniqueFd> OpenRoute(int extra_type_flags) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | extra_type_flags, NETLINK_ROUTE));
  if (!fd) return FailErrno(errno, "netlink socket");
  return fd;
}

Result<std::uint32_t> BindAndGetPort(int fd, std::uint32_t groups) {
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = groups;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    return FailErrno(errno, "netlink bind");
  }
  socklen_t len = sizeof(sa);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    return FailErrno(errno, "netlink getsockname");
  }
  return sa.nl_pid;
}

}  // namespace

Result<NetlinkSocket> NetlinkSocket::Open(std::chrono::milliseconds timeout) {
  auto fd = OpenRoute(0);
  if (!fd) return tl::unexpected(fd.error());
  int one = 1;
  // Best effort: kernels without extended ACK still work, with bare errno messages.
  ::setsockopt(fd->get(), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  ::setsockopt(fd->get(), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  if (::setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
    return FailErrno(errno, "netlink SO_RCVTIMEO");
  }
  auto port = BindAndGetPort(fd->get(), 0);
  if (!port) return tl::unexpected(port.error());
  return NetlinkSocket(std::move(*fd), *port);
}

Result<Replies> NetlinkSocket::RoundTrip(const Message& request, std::string_view context) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    bool interrupted = false;
    auto r = RoundTripOnce(request, context, &interrupted);
    if (!r || !interrupted) return r;
    if (attempt == kAttempts) {
      return Fail(ErrorCode::kUnavailable,
                  std::string(context) + ": dump kept being interrupted by concurrent changes");
    }
  }
}

Result<Replies> NetlinkSocket::RoundTripOnce(const Message& request, std::string_view context,
                                             bool* interrupted) {
  if (request.size() < 16)
    return Fail(ErrorCode::kInternal, std::string(context) + ": empty request");
  Message req = request;
  auto* nlh = reinterpret_cast<nlmsghdr*>(req.data());
  const std::uint32_t seq = next_seq_++;
  nlh->nlmsg_seq = seq;
  nlh->nlmsg_pid = 0;
  const bool dump = (nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  const bool wants_ack = (nlh->nlmsg_flags & NLM_F_ACK) != 0;

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), req.data(), req.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
    return FailErrno(errno, std::string(context) + ": netlink send");
  }

  Replies replies;
  std::vector<std::uint8_t> buf(kRecvBuffer);
  while (true) {
    ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Fail(ErrorCode::kUnavailable, std::string(context) + ": no netlink reply in time");
      }
      return FailErrno(errno, std::string(context) + ": netlink recv");
    }
    auto msgs =
        SplitMessages(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
    if (!msgs) return tl::unexpected(msgs.error().Wrap(std::string(context)));
    for (const MessageView& m : *msgs) {
      if (m.seq != seq || (m.pid != port_id_ && m.pid != 0)) continue;  // stale reply
      if (m.flags & NLM_F_DUMP_INTR) *interrupted = true;
      if (m.type == NLMSG_ERROR) {
        auto st = ParseAck(m, context);
        if (!st) return tl::unexpected(st.error());
        return replies;  // the ACK ends every non-dump request (and a dump that got one)
      }
      if (m.type == NLMSG_DONE) {
        auto st = ParseDone(m, context);
        if (!st) return tl::unexpected(st.error());
        return replies;
      }
      if (m.type == NLMSG_NOOP || m.type == NLMSG_OVERRUN) continue;
      replies.emplace_back(m.bytes.begin(), m.bytes.end());
      if (!dump && !wants_ack && !(m.flags & NLM_F_MULTI)) return replies;
    }
  }
}

Result<NotificationSocket> NotificationSocket::Open() {
  auto fd = OpenRoute(SOCK_NONBLOCK);
  if (!fd) return tl::unexpected(fd.error());
  int size = 1 << 20;
  ::setsockopt(fd->get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  auto port = BindAndGetPort(fd->get(), 0);
  if (!port) return tl::unexpected(port.error());
  for (unsigned group : {RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR}) {
    if (::setsockopt(fd->get(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0) {
      return FailErrno(errno, "netlink join group " + std::to_string(group));
    }
  }
  return NotificationSocket(std::move(*fd));
}

Result<std::vector<Event>> NotificationSocket::Poll(std::chrono::milliseconds timeout) {
  std::vector<Event> events;
  pollfd pfd{fd_.get(), POLLIN, 0};
  int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (ready < 0 && errno != EINTR) return FailErrno(errno, "netlink notifications poll");
  std::vector<std::uint8_t> buf(kRecvBuffer);
  while (true) {
    sockaddr_nl from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = ::recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from),
                           &from_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return events;
      if (errno == ENOBUFS) {
        events.push_back(ResyncEvent{});
        continue;
      }
      return FailErrno(errno, "netlink notifications recv");
    }
    if (from.nl_pid != 0) continue;  // only the kernel speaks on these groups
    auto msgs =
        SplitMessages(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
    if (!msgs) continue;
    for (const MessageView& m : *msgs) {
      auto ev = ParseEvent(m);
      if (ev && *ev) events.push_back(std::move(**ev));
    }
  }
}

}  // namespace pylon::netlink
