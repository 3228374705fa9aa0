#include "packet/packet_socket.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace pylon::packet {

Result<PacketSocket> PacketSocket::Open(int ifindex, std::uint16_t ethertype) {
  if (ifindex <= 0) return Fail(ErrorCode::kInvalidArgument, "packet socket: ifindex must be > 0");
  UniqueFd fd(::socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ethertype)));
  if (!fd) return FailErrno(errno, "packet socket");
  int one = 1;
  // Linux 4.20+; on older kernels our own frames may be seen and are filtered by pkttype below.
  ::setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ethertype);
  sll.sll_ifindex = ifindex;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
    return FailErrno(errno, "packet socket bind ifindex " + std::to_string(ifindex));
  }
  return PacketSocket(std::move(fd), ifindex, ethertype);
}

Status PacketSocket::AttachNeighborDiscoveryFilter() {
  // SOCK_DGRAM: the filter sees the packet from the IPv6 header on.
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),           // next header
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 58, 0, 4),   // ICMPv6, else drop
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 40),          // ICMPv6 type
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 135, 1, 0),  // NS: accept
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 136, 0, 1),  // NA: accept, else drop
      BPF_STMT(BPF_RET | BPF_K, 0x40000),              // accept
      BPF_STMT(BPF_RET | BPF_K, 0),                    // drop
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0) {
    return FailErrno(errno, "packet socket: SO_ATTACH_FILTER");
  }
  return Ok();
}

Status PacketSocket::Send(std::span<const std::uint8_t> payload, const MacAddress& destination) {
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ethertype_);
  sll.sll_ifindex = ifindex_;
  sll.sll_halen = 6;
  std::memcpy(sll.sll_addr, destination.bytes().data(), 6);
  ssize_t n = ::sendto(fd_.get(), payload.data(), payload.size(), 0,
                       reinterpret_cast<sockaddr*>(&sll), sizeof(sll));
  if (n < 0) return FailErrno(errno, "packet send on ifindex " + std::to_string(ifindex_));
  if (static_cast<std::size_t>(n) != payload.size()) {
    return Fail(ErrorCode::kSystem, "packet send: short write");
  }
  return Ok();
}

Result<std::optional<ReceivedFrame>> PacketSocket::Receive(const Clock& clock,
                                                           SteadyTime deadline) {
  std::vector<std::uint8_t> buf(2048);
  while (true) {
    sockaddr_ll from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = ::recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from),
                           &from_len);
    if (n >= 0) {
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      ReceivedFrame f;
      f.payload.assign(buf.begin(), buf.begin() + n);
      if (from.sll_halen == 6) {
        f.source = *MacAddress::FromBytes(std::span<const std::uint8_t>(from.sll_addr, 6));
      }
      f.pkttype = from.sll_pkttype;
      return std::optional<ReceivedFrame>(std::move(f));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return FailErrno(errno, "packet recv");
    const auto now = clock.Now();
    if (now >= deadline) return std::optional<ReceivedFrame>();
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    pollfd pfd{fd_.get(), POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return FailErrno(errno, "packet poll");
  }
}

Result<MacAddress> InterfaceMac(const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    return Fail(ErrorCode::kInvalidArgument, "interface name '" + ifname + "'");
  }
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return FailErrno(errno, "SIOCGIFHWADDR socket");
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
  if (::ioctl(fd.get(), SIOCGIFHWADDR, &ifr) != 0) {
    return FailErrno(errno, "SIOCGIFHWADDR " + ifname);
  }
  if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
    return Fail(ErrorCode::kInvalidArgument, ifname + " is not an Ethernet interface");
  }
  std::array<std::uint8_t, 6> b{};
  std::memcpy(b.data(), ifr.ifr_hwaddr.sa_data, 6);
  return MacAddress(b);
}

}  // namespace pylon::packet
