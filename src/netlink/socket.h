// The one place netlink I/O happens: a RAII NETLINK_ROUTE socket with a request/ack round trip
// and multi-part dump collection, plus a subscription socket for multicast notifications.
//
// Threading: a NetlinkSocket is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "netlink/message.h"

namespace pylon::netlink {

// The bytes of every reply message of one request (NLMSG_DONE / ACK excluded), each a whole
// message, header included; parse with SplitMessages + Parse*.
using Replies = std::vector<Message>;

class NetlinkSocket {
 public:
  // Opens and binds a NETLINK_ROUTE socket with extended ACKs (kernel error strings) enabled and
  // a receive timeout of `timeout` so that a lost reply fails instead of hanging.
  static Result<NetlinkSocket> Open(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Sends `request` with the next sequence number and collects the answer:
  //  - for a dump (NLM_F_DUMP): every message up to NLMSG_DONE; an interrupted dump
  //    (NLM_F_DUMP_INTR) is retried up to 3 times;
  //  - otherwise: the reply messages (if any) and the ACK. NLMSG_ERROR with an error becomes an
  //    Error with the errno, `context` and the kernel's extended-ACK text.
  // Messages of other sequence numbers (late answers to a timed-out request) are dropped.
  Result<Replies> RoundTrip(const Message& request, std::string_view context);

  int fd() const { return fd_.get(); }
  std::uint32_t port_id() const { return port_id_; }

 private:
  NetlinkSocket(UniqueFd fd, std::uint32_t port_id) : fd_(std::move(fd)), port_id_(port_id) {}
  Result<Replies> RoundTripOnce(const Message& request, std::string_view context,
                                bool* interrupted);

  UniqueFd fd_;
  std::uint32_t port_id_ = 0;
  std::uint32_t next_seq_ = 1;
};

// A non-blocking socket joined to RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR and RTNLGRP_IPV6_IFADDR.
class NotificationSocket {
 public:
  static Result<NotificationSocket> Open();

  // Waits up to `timeout` (0 = just drain) for notifications and returns all that are queued.
  // A receive-buffer overrun (ENOBUFS) yields a ResyncEvent. Messages that do not parse are
  // dropped (the kernel is the only sender: the socket rejects others by port id 0 check).
  Result<std::vector<Event>> Poll(std::chrono::milliseconds timeout);
  int fd() const { return fd_.get(); }

 private:
  explicit NotificationSocket(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace pylon::netlink
