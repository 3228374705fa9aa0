// Sends the announcements that move an address to this node (gratuitous ARP, unsolicited NA) and
// asks the segment whether someone else holds an address (ARP probe, DAD solicitation).
// Scheduling (how many, how far apart) is the caller's: one call sends one announcement.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "net/ip.h"
#include "packet/mac.h"

namespace pylon::packet {

struct Interface {
  int ifindex = 0;
  MacAddress mac;
  friend bool operator==(const Interface&, const Interface&) = default;
};

class Announcer {
 public:
  virtual ~Announcer() = default;
  // IPv4: an ARP Announcement (request form) to broadcast. IPv6: an unsolicited NA to ff02::1
  // with source = the address (see ndp.h).
  virtual Status Announce(const Interface& iface, const net::IpAddress& address) = 0;
  // IPv4: an ARP probe (RFC 5227); IPv6: a DAD solicitation. Waits up to `timeout` for another
  // host to claim `address` and returns its MAC, or nullopt if nobody did.
  virtual Result<std::optional<MacAddress>> ProbeOwner(const Interface& iface,
                                                       const net::IpAddress& address,
                                                       std::chrono::milliseconds timeout) = 0;
};

// Which gratuitous ARP forms Announce sends for IPv4. The request form (RFC 5227 §3) is the one
// every receiver honours; some routers (Junos by default) ignore the reply form, others (old
// stacks) only learn from replies, so kRequestAndReply sends both back to back, as MetalLB does.
enum class ArpForm { kRequest, kRequestAndReply };

// Over AF_PACKET sockets (CAP_NET_RAW). A socket is opened per call: announcements are rare.
class AnnouncerImpl final : public Announcer {
 public:
  explicit AnnouncerImpl(const Clock& clock, ArpForm arp_form = ArpForm::kRequest)
      : clock_(clock), arp_form_(arp_form) {}
  Status Announce(const Interface& iface, const net::IpAddress& address) override;
  Result<std::optional<MacAddress>> ProbeOwner(const Interface& iface,
                                               const net::IpAddress& address,
                                               std::chrono::milliseconds timeout) override;

 private:
  const Clock& clock_;
  ArpForm arp_form_;
};

// Records announcements; answers probes from a table.
class FakeAnnouncer final : public Announcer {
 public:
  struct Sent {
    Interface iface;
    net::IpAddress address;
    friend bool operator==(const Sent&, const Sent&) = default;
  };
  Status Announce(const Interface& iface, const net::IpAddress& address) override;
  Result<std::optional<MacAddress>> ProbeOwner(const Interface& iface,
                                               const net::IpAddress& address,
                                               std::chrono::milliseconds timeout) override;

  void SetOwner(const net::IpAddress& address, std::optional<MacAddress> owner);
  void FailNext(Error e) { fail_next_ = std::move(e); }
  const std::vector<Sent>& sent() const { return sent_; }
  const std::vector<Sent>& probes() const { return probes_; }

 private:
  std::vector<Sent> sent_;
  std::vector<Sent> probes_;
  std::vector<std::pair<net::IpAddress, MacAddress>> owners_;
  std::optional<Error> fail_next_;
};

}  // namespace pylon::packet
