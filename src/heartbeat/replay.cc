#include "heartbeat/replay.h"

#include <algorithm>

namespace pylon::heartbeat {

ReplayGuard::Verdict ReplayGuard::Check(const election::NodeName& sender, std::uint64_t boot_id,
                                        std::uint64_t sequence) {
  auto [it, inserted] = senders_.try_emplace(sender);
  State& s = it->second;
  if (inserted) {
    s.boot_id = boot_id;
    s.sequence = sequence;
    return Verdict::kNewBoot;
  }
  if (boot_id == s.boot_id) {
    if (sequence == s.sequence) return Verdict::kDuplicate;
    if (sequence < s.sequence) return Verdict::kReplay;
    s.sequence = sequence;
    return Verdict::kAccepted;
  }
  const auto retired_end = s.retired.begin() + static_cast<std::ptrdiff_t>(s.retired_count);
  if (std::find(s.retired.begin(), retired_end, boot_id) != retired_end) return Verdict::kReplay;
  s.retired[s.retired_next] = s.boot_id;
  s.retired_next = (s.retired_next + 1) % kRetiredPerSender;
  s.retired_count = std::min(s.retired_count + 1, kRetiredPerSender);
  s.boot_id = boot_id;
  s.sequence = sequence;
  return Verdict::kNewBoot;
}

}  // namespace pylon::heartbeat
