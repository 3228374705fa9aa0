// packet::FakeAnnouncer: an in-memory Announcer for tests and benchmarks (never shipped).
#pragma once

#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "packet/announcer.h"

namespace pylon::packet {

// Records announcements; answers probes from a table (an owner whose MAC is in the probe's
// ignore list does not answer). Thread-safe.
class FakeAnnouncer final : public Announcer {
 public:
  struct Sent {
    Interface iface;
    net::IpAddress address;
    friend bool operator==(const Sent&, const Sent&) = default;
  };
  Status Announce(const Interface& iface, const net::IpAddress& address) override;
  Result<std::optional<MacAddress>> Probe(const Interface& iface, const net::IpAddress& address,
                                          const ProbeOptions& options) override;

  void SetOwner(const net::IpAddress& address, std::optional<MacAddress> owner);
  void FailNext(Error e) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = std::move(e);
  }
  // Copies (another thread may be probing).
  std::vector<Sent> sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  std::vector<Sent> probes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return probes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Sent> sent_;
  std::vector<Sent> probes_;
  std::vector<std::pair<net::IpAddress, MacAddress>> owners_;
  std::optional<Error> fail_next_;
  // The failure FailNext armed, once (mu_ held).
  std::optional<Error> TakeFailureLocked();
};

}  // namespace pylon::packet
