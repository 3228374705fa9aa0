// Replay protection for authenticated heartbeats.
//
// Per sender, the guard remembers the current boot id and the highest sequence accepted in it:
//   - same boot id: accepted only if sequence > the highest accepted; equal is a duplicate (the
//     sender sends each heartbeat to every endpoint of a peer, e.g. its IPv4 and its IPv6
//     address, so the second copy is expected), lower is a replay;
//   - a boot id never seen from this sender: accepted, becomes current (the sender restarted and
//     its sequence starts again at 1); the previous boot id is retired;
//   - a retired boot id (one of the last kRetiredPerSender this guard saw replaced): rejected, so a
//     captured datagram of a previous agent process cannot be replayed to make a dead node look
//     alive.
// Limit (documented in docs/failover.md): a receiver that restarts forgets retired boot ids, so
// datagrams captured before that can be replayed once each until the sender's current boot id is
// seen again; they carry the sender's old address list and make it look alive only while the
// sender is alive anyway or for one detection bound.
// Pure; not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>

#include "election/node_name.h"

namespace pylon::heartbeat {

class ReplayGuard {
 public:
  static constexpr std::size_t kRetiredPerSender = 4;

  enum class Verdict : std::uint8_t {
    kAccepted,   // same boot, higher sequence
    kNewBoot,    // first datagram of this sender, or a new boot id (accepted)
    kDuplicate,  // rejected: the sequence just accepted (a second copy)
    kReplay,     // rejected
  };

  // Checks and, if accepted, records (sender, boot id, sequence).
  Verdict Check(const election::NodeName& sender, std::uint64_t boot_id, std::uint64_t sequence);
  // Forgets a sender (it left the peer list).
  void Forget(const election::NodeName& sender) { senders_.erase(sender); }
  std::size_t size() const { return senders_.size(); }

 private:
  struct State {
    std::uint64_t boot_id = 0;
    std::uint64_t sequence = 0;
    std::array<std::uint64_t, kRetiredPerSender> retired{};
    std::size_t retired_count = 0;  // valid entries of `retired` (a ring once full)
    std::size_t retired_next = 0;
  };
  std::map<election::NodeName, State> senders_;
};

}  // namespace pylon::heartbeat
