// Counts the address-resolution traffic on the lab LAN, seen from the client's eth0 (a host on
// the LAN bridge, which floods broadcast and unregistered multicast to it): ARP probes (sender IP
// 0.0.0.0, RFC 5227) and DAD Neighbor Solicitations (source ::, RFC 4862) — what duplicate-address
// probing costs — and every ARP packet and NS/NA. For `pylon-dev lab timing` (docs/lab.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "common/mutex.h"

namespace pylon::lab {

struct LanCounts {
  std::uint64_t arp_probes = 0;  // ARP with sender IP 0.0.0.0
  std::uint64_t dad_ns = 0;      // NS with source ::
  std::uint64_t arp = 0;         // every ARP packet (probes included)
  std::uint64_t nd = 0;          // every NS and NA (DAD NS included)
};

class LanCounter {
 public:
  // Starts counting in `netns` on eth0 at once (a thread of its own).
  explicit LanCounter(std::string netns);
  ~LanCounter();
  LanCounter(const LanCounter&) = delete;
  LanCounter& operator=(const LanCounter&) = delete;

  LanCounts counts() const;
  // Empty while counting works; else why it stopped.
  std::string error() const;

 private:
  void Run(const std::string& netns);

  std::atomic<bool> stop_{false};
  mutable Mutex mu_;
  LanCounts counts_ PYLON_GUARDED_BY(mu_);
  std::string error_ PYLON_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace pylon::lab
