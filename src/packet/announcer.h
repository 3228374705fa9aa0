// Sends the announcements that move an address to this node (gratuitous ARP, unsolicited NA) and
// asks the segment whether someone else holds an address (ARP probe, DAD solicitation).
// Scheduling (how many, how far apart) is the caller's: one call sends one announcement.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "net/ip.h"
#include "packet/mac.h"

namespace pylon::packet {

// How a duplicate-address probe is sent: `count` probes `interval` apart, then one more `interval`
// of listening (so count * interval in all when nobody answers). RFC 5227 §2.1.1 asks for 1-2 s
// between probes; an address whose takeover waits on the probe cannot afford that, and a LAN
// host answers within milliseconds, so the default is 3 x 80 ms = 240 ms.
struct ProbeOptions {
  int count = 3;
  std::chrono::milliseconds interval{80};
  // Answers from these MACs are not claims: the cluster's own nodes (a node killed with SIGKILL
  // keeps answering for its addresses until their lifetime ends). The probing interface's own MAC
  // never counts either.
  std::vector<MacAddress> ignore;
};

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
  // IPv4: ARP probes (RFC 5227); IPv6: DAD solicitations (RFC 4862). Returns the MAC of the
  // first host that claims `address` (claims.h: ProbeAnswerArp / ProbeAnswerNdp), as soon as it
  // answers, or nullopt when nobody did within the probe time. Blocks the caller for at most
  // options.count * options.interval.
  virtual Result<std::optional<MacAddress>> Probe(const Interface& iface,
                                                  const net::IpAddress& address,
                                                  const ProbeOptions& options) = 0;
  // One probe, then listens for `timeout`.
  Result<std::optional<MacAddress>> ProbeOwner(const Interface& iface,
                                               const net::IpAddress& address,
                                               std::chrono::milliseconds timeout) {
    ProbeOptions o;
    o.count = 1;
    o.interval = timeout;
    return Probe(iface, address, o);
  }
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
  Result<std::optional<MacAddress>> Probe(const Interface& iface, const net::IpAddress& address,
                                          const ProbeOptions& options) override;

 private:
  const Clock& clock_;
  ArpForm arp_form_;
};

}  // namespace pylon::packet
