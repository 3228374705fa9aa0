// A RAII UDP socket for heartbeats: dual-stack (AF_INET6 with IPV6_V6ONLY off; plain AF_INET when
// the kernel has no IPv6), bound to one network device with SO_BINDTODEVICE so heartbeats travel
// over the link whose failure matters (and stop when it goes down), non-blocking, close-on-exec,
// traffic class CS6 (network control). SO_BINDTODEVICE needs CAP_NET_RAW (the agent has it).
// Threading: one thread sends and receives at a time; the fd may be polled by another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "heartbeat/endpoints.h"

namespace pylon::heartbeat {

struct ReceivedDatagram {
  std::size_t size = 0;  // the datagram's real length; may exceed the buffer (then truncated)
  Endpoint from;
};

class UdpSocket {
 public:
  // `device` empty: not bound to a device. `port` 0: an ephemeral port.
  static Result<UdpSocket> Open(const std::string& device, std::uint16_t port);

  // Sends one datagram. kUnavailable for transient conditions (buffer full, link down, no
  // route), kSystem otherwise.
  Status SendTo(std::span<const std::uint8_t> payload, const Endpoint& to);
  // Receives one queued datagram into `buffer` (which it does not resize), or nullopt when none is
  // queued. A datagram longer than the buffer is truncated; its real length is reported.
  Result<std::optional<ReceivedDatagram>> Receive(std::span<std::uint8_t> buffer);

  int fd() const { return fd_.get(); }
  std::uint16_t local_port() const { return local_port_; }
  bool dual_stack() const { return dual_stack_; }

 private:
  UdpSocket(UniqueFd fd, std::uint16_t port, bool dual)
      : fd_(std::move(fd)), local_port_(port), dual_stack_(dual) {}
  UniqueFd fd_;
  std::uint16_t local_port_ = 0;
  bool dual_stack_ = false;
};

}  // namespace pylon::heartbeat
