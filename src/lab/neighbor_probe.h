// Who answers ARP (IPv4) or Neighbor Solicitation (IPv6) for an address on a lab LAN, asked from
// one host (the client): used to measure how long a node whose agent was killed keeps answering
// for an address (its kernel keeps the address until its valid lifetime runs out, see
// docs/failover.md) and that the new winner is then the only one answering.
//
// NeighborProber and WatchAnswers need CAP_NET_RAW and work in the network namespace of the
// calling thread (run them inside InNetns). AnalyzeExpiry is pure.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "net/ip.h"
#include "packet/mac.h"
#include "packet/packet_socket.h"

namespace pylon::lab {

// The identity a lab probe asks with, on LAN A: an address no host has and a locally administered
// MAC no interface has. The nodes answer to that MAC, which the bridge has never seen as a source,
// so it floods the answers; the prober's packet socket sees them and the client's own stack drops
// them (not addressed to it). Probing with the client's own address would move the client's
// neighbour entry for the address being probed: Linux takes an ARP reply, or a solicited NA with
// the override flag, as the address's new MAC, so while two nodes answer, the probe itself would
// switch the client back and forth between them.
inline constexpr const char* kObserverIpv4 = "192.0.2.3";
inline constexpr const char* kObserverIpv6 = "2001:db8:1::3";
inline constexpr packet::MacAddress kObserverMac({0x02, 0x50, 0x59, 0x4c, 0x4e, 0x03});

class NeighborProber {
 public:
  // A packet socket on `ifname` of the calling thread's namespace, for the family of `source`:
  // the address the answers are sent to. `mac` is the link-layer address the requests carry
  // (ARP sender MAC, NS source link-layer option): the interface's own by default, or e.g.
  // kObserverMac with an observer address.
  static Result<NeighborProber> Open(const std::string& ifname, const net::IpAddress& source,
                                     std::optional<packet::MacAddress> mac = std::nullopt);

  // Sends one request for `target` (IPv4: ARP request to broadcast; IPv6: NS to the
  // solicited-node group with our link-layer address) and returns the Ethernet source MACs of
  // every answer within `listen` (ARP replies from `target` to our source address; solicited NAs
  // for `target`), sorted and unique. Answers that arrived late for an earlier request are
  // dropped first.
  Result<std::vector<packet::MacAddress>> Ask(const net::IpAddress& target,
                                              std::chrono::milliseconds listen);

 private:
  NeighborProber(packet::PacketSocket socket, packet::MacAddress mac, net::IpAddress source)
      : socket_(std::move(socket)), mac_(mac), source_(source) {}
  packet::PacketSocket socket_;
  packet::MacAddress mac_;
  net::IpAddress source_;
};

// The MAC of `ifname` in network namespace `netns`.
Result<packet::MacAddress> InterfaceMacIn(const std::string& netns, const std::string& ifname);

// One request of a watch: when it was sent (ms since the fault) and who answered it.
struct AnswerSample {
  double t_ms = 0;
  std::vector<packet::MacAddress> macs;
};

struct ExpiryVerdict {
  // Fault -> the first request of the final stretch of requests that `dead` did not answer (ms):
  // when the dead node stopped answering, to the probe interval. -1 while `dead` answered the
  // last request (or there are no samples).
  double silent_ms = -1;
  // Whether that final stretch lasts at least `confirm_ms` (so a lost answer is not taken for
  // silence).
  bool confirmed = false;
  // Fault -> the first request answered by any other MAC (the new winner's first answer); -1: none.
  double other_ms = -1;
  // Every MAC that answered in the final stretch (sorted): the new winner alone, when all is well.
  std::vector<packet::MacAddress> after;
  // Whether `dead` answered any request at all (it should, right after the fault).
  bool dead_answered = false;
};

ExpiryVerdict AnalyzeExpiry(const std::vector<AnswerSample>& samples,
                            const packet::MacAddress& dead, double confirm_ms);

struct WatchOptions {
  std::string ifname = "eth0";
  net::IpAddress source;  // the address asked from (family of target), see NeighborProber::Open
  std::optional<packet::MacAddress> mac;
  net::IpAddress target;
  packet::MacAddress dead;
  std::chrono::milliseconds interval{25};  // one request every interval...
  std::chrono::milliseconds listen{20};    // ...answers collected for this long
  std::chrono::milliseconds confirm{500};  // silence needed before the watch may end
  std::chrono::milliseconds window{10000};
};

// Asks for `target` every interval from `t0` (the fault) on the calling thread until
// AnalyzeExpiry says `dead` has been silent for `confirm` and someone else answered in that
// time, or `window` has passed since t0, or *stop becomes true. Returns the samples.
Result<std::vector<AnswerSample>> WatchAnswers(const WatchOptions& options, SteadyTime t0,
                                               const std::atomic<bool>* stop = nullptr);

}  // namespace pylon::lab
